"""Secrets that training logs leak, masked before a line is shown or exported.

Launch scripts echo their environment and libraries print their config, so logs carry tokens:
Hugging Face, Weights & Biases, AWS, GitHub, GitLab, Google, OpenAI, Slack, Azure storage account
keys, bearer headers, command-line token flags, private keys and passwords (assigned, quoted or
in URLs).
Evidence is redacted by default (`--no-redact` shows it as it is).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import cache
from itertools import accumulate

from trainmedic.matching.caseless import folded

MASK = "[REDACTED]"

# Every quantifier is bounded and each alternative starts with a fixed word, so a line costs
# linear time whatever it holds.
_SECRETS = (
    r"(?P<pem>-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----)"
    r"[^-]{0,20000}(?P<pem_end>-----END [A-Z ]{0,40}PRIVATE KEY-----)?"
    r"|(?P<hf>\bhf_[A-Za-z0-9]{30,64}\b)"
    r"|(?P<github>\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b)"
    r"|(?P<openai>\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,200}\b)"
    r"|(?P<slack>\bxox[abpr]-[A-Za-z0-9-]{10,250})"
    r"|(?P<aws_key>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"
    r"|(?P<gitlab>\bglpat-[A-Za-z0-9_-]{20,200})"
    r"|(?P<google>\bAIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-]))"
    r"|(?P<wandb>(?i:wandb)\s{1,3}login\s{1,3}(?:--[a-z-]{1,20}\s{1,3}){0,2})"
    r"(?P<wandb_key>[0-9a-f]{40})\b"
    r"|(?P<flag>--(?i:hub[_-]token|hf[_-]token|wandb[_-]api[_-]key|api[_-]key|token|password)"
    r"(?:=|\s{1,3}))(?P<flag_value>[^\s'\"]{4,200})"
    r"|(?P<quoted>(?i:password|passwd|secret)['\"]?\s{0,3}[:=]\s{0,3}['\"])"
    r"(?P<quoted_value>[^'\"\n]{1,200})(?=['\"])"
    r"|(?P<assigned>(?i:aws_secret_access_key|aws_session_token|wandb_api_key|hf_token|"
    r"hugging_face_hub_token|huggingface_token|github_token|openai_api_key|api[_-]?key|"
    r"password|passwd|secret|token|accountkey)['\"]?\s{0,3}[:=]\s{0,3}['\"]?)"
    r"(?P<value>[^\s'\",;]{8,200})"
    r"|(?P<bearer>(?i:authorization['\"]?\s{0,3}:\s{0,3}['\"]?(?:bearer|token|basic))\s{1,3})"
    r"(?P<credential>[^\s'\",;]{8,500})"
    r"|(?P<url>\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,100}:)(?P<password>[^\s@/]{1,200})(?=@)"
)


@cache
def _secret_pattern() -> re.Pattern[str]:
    """_SECRETS compiled, when a line first may hold one: most diagnoses show none, and
    compiling it takes 2 ms, a fortieth of a short diagnosis's start."""
    return re.compile(_SECRETS)


# An AWS secret access key has no prefix of its own: 40 base64 characters, masked on a line
# that names its key id.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
# A private key printed as it is stored spans lines, and its body lines carry no marker.
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z ]{0,40}PRIVATE KEY-----")
# Every alternative of _SECRETS holds one of these words (the second set in any case; a
# password in a URL both `://` and the `@` after it), so a line holding none is shown as it is
# without running it: most evidence lines hold none, and the pattern costs a third of a
# microsecond per character. Torchelastic's lines name its `api.py` and its errors a docs URL:
# a bare "api" or "://" sent a fifth of a diagnosis's evidence through the pattern, and a bare
# "gh" every Megatron-LM line that reports its throughput.
_WORDS = ("-----BEGIN ", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
          "AIza", "sk-", "xox", "AKIA", "ASIA", "--")
_WORDS_ANY_CASE = ("wandb", "passw", "secret", "token", "apikey", "api_key", "api-key",
                   "accountkey", "authorization")


def _may_hold_secret(text: str) -> bool:
    if any(word in text for word in _WORDS) or ("://" in text and "@" in text):
        return True
    lowered = folded(text)  # with the letters `re` ignoring case takes for ASCII ones
    return any(word in lowered for word in _WORDS_ANY_CASE)


def _may_hold_secrets(lines: list[str]) -> set[int] | None:
    """The indices of the `lines` for which `_may_hold_secret` may be true (None: any), each
    word searched once in their joined text, not in each line: a large job's evidence is
    thousands of lines, and most hold no word at all."""
    joined = "\n".join(lines)
    lowered = folded(joined)
    if len(lowered) != len(joined):  # folding moved what follows a letter: no shortcut
        return None
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    found: set[int] = set()
    for text, words in ((joined, (*_WORDS, "://")), (lowered, _WORDS_ANY_CASE)):
        for word in words:
            at = text.find(word)
            while at >= 0:  # no word holds a newline: each is within one line
                index = bisect_right(starts, at) - 1
                found.add(index)
                at = text.find(word, starts[index + 1]) if index + 1 < len(starts) else -1
    return found


def _mask(match: re.Match[str]) -> str:
    if match.group("pem"):
        return match.group("pem") + MASK + (match.group("pem_end") or "")
    for prefix in ("wandb", "flag", "quoted", "assigned", "bearer", "url"):
        if match.group(prefix):
            return match.group(prefix) + MASK
    return MASK


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by MASK."""
    if not text or not _may_hold_secret(text):
        return text
    if _AWS_KEY_ID.search(text):
        text = "\n".join(_AWS_SECRET.sub(MASK, line) if _AWS_KEY_ID.search(line) else line
                         for line in text.split("\n"))
    return _secret_pattern().sub(_mask, text)


def redact_lines(lines: Iterable[str]) -> list[str]:
    """Each line redacted, and the body lines of a private key printed across lines (after a
    `BEGIN … PRIVATE KEY` line, up to its `END` line) masked whole."""
    given = list(lines)
    possible = _may_hold_secrets(given)
    shown: list[str] = []
    inside = False
    for index, line in enumerate(given):
        if not inside and possible is not None and index not in possible:
            shown.append(line)  # no word of a secret, nor of a key's first line
            continue
        if inside:
            end = _PEM_END.search(line)
            if end is None:
                shown.append(MASK)
                continue
            inside = False
            shown.append(MASK + redact(line[end.start():]))
            continue
        shown.append(redact(line))
        begins = list(_PEM_BEGIN.finditer(line))
        inside = bool(begins) and _PEM_END.search(line, begins[-1].end()) is None
    return shown


def evidence_texts(lines: Iterable[str], secrets: bool) -> list[str]:
    """Evidence lines, in order, as a renderer shows them: redacted (key bodies across lines
    too) unless the user asked for secrets."""
    return list(lines) if secrets else redact_lines(lines)


def evidence_text(text: str, secrets: bool) -> str:
    """Evidence text as a renderer shows it: redacted unless the user asked for secrets."""
    return text if secrets else redact(text)

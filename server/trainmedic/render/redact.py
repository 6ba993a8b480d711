"""Secrets that training logs leak, masked before a line is shown or exported.

Launch scripts echo their environment and libraries print their config, so logs carry tokens:
Hugging Face, Weights & Biases, AWS, GitHub, OpenAI, bearer headers and passwords in URLs.
Evidence is redacted by default (`--no-redact` shows it as it is).
"""

from __future__ import annotations

import re

MASK = "[REDACTED]"

_SECRETS = re.compile(
    r"(?P<hf>\bhf_[A-Za-z0-9]{30,64}\b)"
    r"|(?P<github>\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b)"
    r"|(?P<openai>\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,200}\b)"
    r"|(?P<aws_key>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"
    r"|(?P<assigned>(?i:aws_secret_access_key|aws_session_token|wandb_api_key|hf_token|"
    r"hugging_face_hub_token|huggingface_token|github_token|openai_api_key|api[_-]?key|"
    r"password|passwd|secret|token)['\"]?\s{0,3}[:=]\s{0,3}['\"]?)(?P<value>[^\s'\",;]{8,200})"
    r"|(?P<bearer>(?i:authorization:\s{0,3}(?:bearer|token|basic))\s{1,3})(?P<credential>[^\s'\",;]{8,500})"
    r"|(?P<url>\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,100}:)(?P<password>[^\s@/]{1,200})(?=@)"
)


def _mask(match: re.Match[str]) -> str:
    for prefix in ("assigned", "bearer", "url"):
        if match.group(prefix):
            return match.group(prefix) + MASK
    return MASK


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by MASK."""
    return _SECRETS.sub(_mask, text) if text else text


def evidence_text(text: str, secrets: bool) -> str:
    """Evidence text as a renderer shows it: redacted unless the user asked for secrets."""
    return text if secrets else redact(text)

"""The pure-Python matcher: a pattern matches within each line, wherever the prefilters (required
literals, line shapes, where a match can start) let it run, exactly as a plain scan would."""

from __future__ import annotations

import re

import pytest

from trainmedic.catalogue.load import bundled
from trainmedic.catalogue.regex_safety import matches_with_digits_zeroed, required_literals
from trainmedic.catalogue.rules import Catalogue, Fingerprint
from trainmedic.matching.python import Matcher

TEMPLATE = bundled().rules[0]


def _matcher(pattern: str, ignore_case: bool = False) -> Matcher:
    rule = TEMPLATE._replace(id="probe", metric_patterns=(),
                             fingerprints=(Fingerprint("probe", pattern, 1.0, ignore_case),))
    return Matcher(Catalogue((rule,)))


def _offsets(matcher: Matcher, text: str) -> list[int]:
    return sorted(offset for offset, hit in matcher.find(text).hits if hit.rule_id == "probe")


def _line_by_line(pattern: str, ignore_case: bool, text: str) -> list[int]:
    """What a plain scan finds: every match within each line, at its offset in `text`."""
    regex = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    found, start = [], 0
    for line in text.split("\n"):
        found += [start + match.start() for match in regex.finditer(line)]
        start += len(line) + 1
    return sorted(found)


# Megatron-LM's step line (megatron/training/training.py, training_log), DeepSpeed's overflow
# line (deepspeed/runtime/fp16/loss_scaler.py) and Lightning's requeue line
# (lightning/pytorch/trainer/connectors/signal_connector.py).
MEGATRON = (" iteration     1000/  500000 | consumed samples:      1024000 | lm loss: 2.667779E+00"
            " | loss scale: 65536.0 | grad norm: 0.753 | number of skipped iterations:   0 |"
            " number of nan iterations:   {nan} |")
OVERFLOW = ("[deepspeed] OVERFLOW! Rank 3 Skipping step. Attempted loss scale: 65536, "
            "reducing to 32768")
REQUEUE = "Handling auto-requeue signal: 1"


def test_a_literal_on_a_line_the_pattern_does_not_match_gives_no_hit() -> None:
    pattern = r"number of nan iterations:\s{1,8}(?P<nan_iters>0{0,8}[1-9]\d{0,8})"
    text = "\n".join([MEGATRON.format(nan=0)] * 3 + [MEGATRON.format(nan=2)])
    matcher = _matcher(pattern)
    assert _offsets(matcher, text) == _line_by_line(pattern, False, text) == \
        [text.rindex("number of nan iterations")]
    (hit,) = [hit for _, hit in matcher.find(text).hits]
    assert hit.group("nan_iters") == "2"


def test_a_match_at_offset_zero_and_one_on_a_last_line_without_newline() -> None:
    pattern = r"OVERFLOW! Rank (?P<rank>\d{1,6}) Skipping step"
    text = OVERFLOW + "\nall good\n" + OVERFLOW.replace("Rank 3", "Rank 12")  # no newline at end
    offsets = _offsets(_matcher(pattern), text)
    assert offsets == _line_by_line(pattern, False, text) == \
        [OVERFLOW.index("OVERFLOW"), text.rindex("OVERFLOW")]
    assert _offsets(_matcher(r"\[deepspeed\] OVERFLOW"), text) == [0, text.rindex("[deepspeed]")]


@pytest.mark.parametrize("text", [REQUEUE, REQUEUE.upper(), REQUEUE.lower(),
                                  # letters Python's `re` takes for s and k when blind to case
                                  REQUEUE.replace("s", "\u017f"), REQUEUE.replace("k", "\u212a")])
def test_a_caseless_pattern_matches_in_any_case(text: str) -> None:
    pattern = "Handling auto-requeue signal"
    text = f"epoch 3 step 20 loss 1.25\n{text}\nepoch 3 step 21 loss 1.24\n"
    assert _offsets(_matcher(pattern, ignore_case=True), text) == [text.index("\n") + 1]
    assert _offsets(_matcher(pattern), text) == ([text.index("\n") + 1] if REQUEUE in text else [])


def test_a_paste_in_one_case_is_matched_blind_to_case() -> None:
    text = "\n".join(["step 1 loss 1.1", OVERFLOW.upper(), "step 2 loss 1.0"])
    matcher = _matcher(r"OVERFLOW! Rank (?P<rank>\d{1,6}) Skipping step\. Attempted loss scale")
    assert _offsets(matcher, text) == []
    assert [offset for offset, _ in matcher.caseless().scan(text)] == [text.index("OVERFLOW")]


def test_a_pattern_that_tells_digits_apart_is_not_ruled_out_by_shapes() -> None:
    """Line shapes have every digit made 0: `[1-9]` never matches them, the lines still do."""
    pattern = r"exit code [1-9]\d{0,2}\b"
    text = "worker 0 finished with exit code 0\nworker 1 finished with exit code 137\n"
    assert not matches_with_digits_zeroed(pattern)
    assert _offsets(_matcher(pattern), text) == _line_by_line(pattern, False, text) == \
        [text.rindex("exit code")]


PATTERNS = [
    r"\b[Ll]oss\s{0,2}[=:]\s{0,2}nan\b",
    r"(?:\bGrad Scale|\b[Ll]oss [Ss]cale): {0,3}0(?:\.0{0,12})?(?![\d.eE])",
    r"\bloss scale: (?P<scale>\d{1,20}(?:\.\d{0,20})?) \|.{0,400}?skipped iterations: {0,8}[1-9]",
    r"^[^\n]{0,40}\btime {0,10}: (?P<time>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)[ \t]{0,20}$",
    r"(?i:\bloss(?:value)?)\s{0,3}[:=]?\s{0,3}(?P<loss>(?i:nan|-?inf(?:inity)?))\b",
    r"(?<=\s)nan\b",  # a lookbehind at a line's start sees nothing, not the newline
    r"loss(?!\s)",  # nor does a lookahead at its end
    r"x(?:ab){1,3}y",
]
TEXTS = [
    "\n".join([MEGATRON.format(nan=0), "{'loss': nan, 'grad_norm': 1.2}", "loss: 0.0",
               "loss scale: 0 | x", "time   : 2024-05-12_13:45:12", "nan at start", "loss",
               "lossvalue = -Inf", "xababy xaby xy", MEGATRON.format(nan=1).replace(
                   "skipped iterations:   0", "skipped iterations:   4")]),
    "Loss = NaN\n\nLOSS:inf\n grad scale: 0.0\n  nan\nloss\n",
]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("ignore_case", [False, True])
def test_the_matcher_finds_what_a_plain_scan_of_each_line_finds(pattern: str,
                                                                ignore_case: bool) -> None:
    matcher = _matcher(pattern, ignore_case)
    for text in TEXTS:
        assert _offsets(matcher, text) == _line_by_line(pattern, ignore_case, text)


def test_required_literals_are_found_through_groups_alternations_and_caseless_parts() -> None:
    (grad_or_loss,) = required_literals(r"(?:\bGrad Scale|\b[Ll]oss [Ss]cale): {0,3}0")
    assert (grad_or_loss.texts, grad_or_loss.before) == (("Grad Scale", "oss "), (0, 1))
    first, *_, last = required_literals(r"(?i:out of memory): Kill(?:ed)? process \d{1,10}")
    assert (first.texts, first.caseless) == (("out of memory",), True)
    assert (last.texts, last.caseless, last.before) == ((": Kill",), False, (13, 13))
    assert required_literals("a{0,3}b") == []  # nothing of three characters or more


def test_a_pattern_blind_to_digit_values_is_told_apart_from_one_that_is_not() -> None:
    for blind in [r"loss: \d{1,4}\.\d", r"scale: 0(?![\d.])", r"(?!5)\w", r"[^5]"]:
        assert matches_with_digits_zeroed(blind), blind
    for telling in [r"[1-9]", r"code 137", r"[^0]", r"(?!0)\d", r"(?![0-3])", r"(a)\1"]:
        assert not matches_with_digits_zeroed(telling), telling


def test_what_the_matcher_keeps_of_one_chunk_hides_nothing_in_the_next() -> None:
    """The next chunk has the same line shapes; only a digit tells its line apart."""
    pattern = r"number of nan iterations:\s{1,8}(?P<nan_iters>0{0,8}[1-9]\d{0,8})"
    matcher = _matcher(pattern)
    quiet = "\n".join([MEGATRON.format(nan=0)] * 3) + "\n"
    loud = quiet + MEGATRON.format(nan=3) + "\n"
    assert _offsets(matcher, quiet) == []
    assert _offsets(matcher, loud) == [loud.rindex("number of nan iterations")]
    blind = _matcher(r"\blm loss: nan\b")
    assert _offsets(blind, quiet) == []
    nan = quiet.replace("lm loss: 2.667779E+00", "lm loss: nan", 1)
    assert _offsets(blind, nan) == [nan.index("lm loss")]


def test_a_pattern_ignoring_case_inline_has_caseless_literals() -> None:
    (requeue,) = required_literals("(?i)handling auto-requeue signal")
    assert requeue.caseless
    text = "step 1\n" + REQUEUE + "\n"
    assert _offsets(_matcher("(?i)handling auto-requeue signal"), text) == [7]

"""Text as people paste it: one case throughout, hard wraps at a terminal's width."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from shared_files import MISSING, case_id, healthy_logs, need

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.matching.pasted import unwrapped

CATALOGUE = bundled()
# c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch v2.1), as torch prints it
OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
       "total capacity of 23.65 GiB of which 3.06 MiB is free. Of the allocated memory 22.80 GiB "
       "is allocated by PyTorch, and 314.64 MiB is reserved by PyTorch but unallocated.")
# torch/amp/grad_scaler.py (pytorch/pytorch v2.3)
UNSCALE = "ValueError: Attempting to unscale FP16 gradients."


def first(text: str) -> str | None:
    findings = diagnose_text(text, CATALOGUE).findings
    return findings[0].rule_id if findings else None


def terminal(text: str, width: int) -> str:
    """What a terminal of `width` columns shows, copied: every line cut at the width."""
    return "\n".join(line[i:i + width] for line in text.splitlines()
                     for i in range(0, max(len(line), 1), width))


@pytest.mark.parametrize("text", [OOM.lower(), OOM.upper(), UNSCALE.lower()])
def test_a_message_retyped_in_one_case_is_still_recognised(text: str) -> None:
    assert first(text) == first(OOM if "memory" in text.lower() else UNSCALE)


def test_a_message_copied_from_a_web_page_with_no_break_spaces_is_recognised() -> None:
    """A page shows two spaces apart with U+00A0; copied, the message holds them."""
    assert first(OOM.replace(": ", ":\u00a0").replace(". ", ".\u00a0 ")) == first(OOM)
    assert first(OOM) is not None


def test_metrics_and_messages_typeset_with_curly_quotes_are_read() -> None:
    """A forum's typesetting turns a pasted line's quotes round."""
    steps = "".join(f"{{\u2018loss\u2019: {loss}, \u2018grad_norm\u2019: 1.0}}\n"
                    for loss in [2.1, 2.0, 1.9, 1.8, *["nan"] * 12])
    assert first(steps) == first(steps.replace("\u2018", "'").replace("\u2019", "'"))
    assert first(steps) is not None


def test_a_terminal_wrap_through_the_message_is_joined() -> None:
    cut = 80 - (UNSCALE.index("FP16") + 2)  # the terminal's edge falls inside "FP16"
    text = "Traceback (most recent call last):\n" + "-" * cut + UNSCALE + "\n" + OOM
    wrapped = terminal(text, 80)
    assert "FP16" not in wrapped
    assert {f.rule_id for f in diagnose_text(wrapped, CATALOGUE).findings} == \
        {f.rule_id for f in diagnose_text(text, CATALOGUE).findings} >= {"amp-loss-scale"}


def test_a_word_wrapped_message_is_joined() -> None:
    text = "\n".join(textwrap.wrap("Some words come first and then the message: " + UNSCALE
                                   + " and more words after it, so that every line is long", 70))
    assert "Attempting to unscale FP16 gradients" not in text
    assert first(text) == "amp-loss-scale"


def test_joining_keeps_offsets_of_the_original_text() -> None:
    text = terminal("a" * 100 + "\n" + "b" * 90, 70)
    joined, removed = unwrapped(text) or ("", [])
    assert joined == "a" * 100 + "\n" + "b" * 90
    assert removed == [70, 171]  # where each cut line joins its rest


def test_text_that_is_not_wrapped_is_left_alone() -> None:
    assert unwrapped("short\nlines\nonly\n") is None
    assert unwrapped("x" * 500 + "\n" + "y" * 500) is None  # wider than any terminal


@pytest.mark.parametrize("path", healthy_logs() or [MISSING], ids=case_id)
def test_healthy_runs_stay_healthy_however_pasted(path: Path | None) -> None:
    text = need(path).read_text("utf-8", errors="replace")
    for pasted in (text.lower(), text.upper(), terminal(text, 80)):
        assert diagnose_text(pasted, CATALOGUE).root_causes == ()

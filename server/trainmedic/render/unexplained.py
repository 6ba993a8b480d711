"""Failures no rule explains, in the words every renderer uses for them."""

from __future__ import annotations

from trainmedic.model import Unexplained
from trainmedic.render.redact import evidence_text

HEADLINE = "No known root cause; the run failed with: "


def failure_text(failure: Unexplained, secrets: bool = False) -> str:
    """`Exception: message (rank N, file:line)`, the message redacted unless `secrets`."""
    message = evidence_text(failure.message, secrets)
    what = f"{failure.exception}: {message}" if message else failure.exception
    rank = f"rank {failure.rank}, " if failure.rank is not None else ""
    return f"{what} ({rank}{failure.line.path}:{failure.line.number})"

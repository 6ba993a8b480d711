"""Python tracebacks as units: header, frames, exception line, and the chain between them.

Lines of several ranks interleave, so one block is kept open per rank and closed by the first
exception line of that rank. A pasted selection often starts below the header: when a rank's
first line in a source's first HEADLESS_SPAN lines is a frame or an indented source line, a
block is open from there, and it counts only if it shows a frame.
"""

from __future__ import annotations

import re

from trainmedic.model import Line, Traceback

HEADER = "Traceback (most recent call last):"
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_FRAME = re.compile(r'\s+File "([^"]*)", line (\d+)(?:, in (.+))?')
_HEADLESS_FRAME = re.compile(r'\s*File "[^"]*", line \d+')
_EXCEPTION = re.compile(
    r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout|Hit|Warning|"
    r"Unsupported|Abort)\w*|[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w*)(?::\s?(.*))?$"
)
MARKERS = (HEADER, *CHAIN_MARKERS)
MAX_BLOCK_LINES = 500
HEADLESS_SPAN = 50


class _Open:
    __slots__ = ("cause", "first_line", "frames", "headless", "seen")

    def __init__(self, first_line: int, cause: Traceback | None = None,
                 headless: bool = False) -> None:
        self.first_line, self.cause = first_line, cause
        self.frames: list[str] = []
        self.seen = 0
        self.headless = headless  # opened below a header that is not in the text


class TracebackAssembler:
    """Feed lines in order (with their rank and body); completed tracebacks come back."""

    def __init__(self) -> None:
        self._open: dict[int | None, _Open] = {}
        self._last: dict[int | None, Traceback] = {}
        self._chained: set[int | None] = set()
        self._seen: set[int | None] = set()  # ranks whose first line has been fed

    @property
    def is_open(self) -> bool:
        return bool(self._open) or bool(self._chained)

    def feed(self, line: Line, body: str) -> Traceback | None:
        key = line.rank
        stripped = body.strip()
        if stripped == HEADER or stripped.endswith(" " + HEADER):
            cause = self._last.get(key) if key in self._chained else None
            self._chained.discard(key)
            self._open[key] = _Open(line.number, cause=cause)
            return None
        if stripped in CHAIN_MARKERS:
            self._chained.add(key)
            return None
        block = self._open.get(key)
        if block is None and key not in self._seen and line.number <= HEADLESS_SPAN and (
                _HEADLESS_FRAME.match(body) or (body[:1].isspace() and stripped)):
            block = self._open[key] = _Open(line.number, headless=True)
            body = " " + body.lstrip()  # a frame pasted without its indent is still a frame
        self._seen.add(key)
        if block is None:
            return None
        block.seen += 1
        if block.seen > MAX_BLOCK_LINES:
            del self._open[key]
            return None
        if frame := _FRAME.match(body):
            block.frames.append(f"{frame.group(1)}:{frame.group(2)} in {frame.group(3) or '?'}")
            return None
        if body[:1].isspace() or not stripped:
            return None
        match = _EXCEPTION.match(stripped)
        if match is None:
            return None
        del self._open[key]
        if block.headless and not block.frames:
            return None
        done = Traceback(
            rank=key,
            first_line=block.first_line,
            last_line=line.number,
            exception=match.group(1),
            message=(match.group(2) or "").strip(),
            frames=tuple(block.frames),
            cause=block.cause,
        )
        self._last[key] = done
        return done

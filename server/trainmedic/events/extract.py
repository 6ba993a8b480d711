"""Scans → events: the lines that matched a fingerprint or end a traceback, in order.

Scans are folded in order, one source at a time, since a line's time can depend on the dates
printed before it and a traceback can run from one chunk into the next. Only the lines that
matched or belong to a traceback are given their rank and timestamp.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from trainmedic.events.scan import ChunkScan, read_line
from trainmedic.logs.prefixes import parse_rank, rank_of_path
from trainmedic.logs.timestamps import Clock
from trainmedic.logs.tracebacks import MAX_BLOCK_LINES, TracebackAssembler
from trainmedic.model import Event, Line, Traceback


class _Source:
    """Per-file state carried across chunks: the clock, the open tracebacks, and the rank whose
    error a launcher is relaying (spawn's "-- Process 3 terminated with the following error:")."""

    def __init__(self, path: str) -> None:
        self.clock = Clock()
        self.tracebacks = TracebackAssembler()
        self.rank = rank_of_path(path)
        self.relayed: tuple[int, int] | None = None  # (rank, line number of the relay)

    def rank_of(self, text: str) -> tuple[int | None, str]:
        rank, body = parse_rank(text)
        return (self.rank if rank is None else rank), body

    def event_rank(self, own: int | None, relayed: int | None, number: int,
                   ends_traceback: bool) -> int | None:
        """The rank of event line `number` (`own` as `parse_rank` reads it, `relayed` as
        `relayed_rank` does): its own, else its file's, else that of the error being relayed,
        which runs to the end of the next traceback (at most MAX_BLOCK_LINES lines on)."""
        rank = self.rank if own is None else own
        if relayed is not None:
            self.relayed = relayed, number
        elif self.relayed is not None and number - self.relayed[1] > MAX_BLOCK_LINES:
            self.relayed = None
        elif rank is None and self.relayed is not None:
            rank = self.relayed[0]
            if ends_traceback:
                self.relayed = None
        return rank


def _tracebacks(scan: ChunkScan, first_line: int,
                source: _Source) -> dict[int, tuple[Line, Traceback]]:
    """Feed the lines from each traceback start to the assembler; completed blocks by line.

    A source's first line is fed too: the text may start inside a traceback (a selection)."""
    done = {}
    starts = scan.block_starts
    number = 0 if source.tracebacks.is_open or first_line == 1 else \
        (starts[0] if starts else scan.lines)
    while number < scan.lines:
        budget = MAX_BLOCK_LINES
        while number < scan.lines and budget:
            raw = scan.block_line(number)
            rank, body = source.rank_of(raw)
            line = Line(scan.path, first_line + number, raw, rank)
            block = source.tracebacks.feed(line, body)
            if block is not None:
                done[line.number] = (line, block)
            number, budget = number + 1, budget - 1
            if not source.tracebacks.is_open:
                break
        later = bisect_left(starts, number)
        number = starts[later] if later < len(starts) else scan.lines
    return done


class EventExtractor:
    """Turns scans into events, keeping each source's clock and open tracebacks in between."""

    def __init__(self) -> None:
        self.sources: dict[str, _Source] = {}

    def extract(self, scan: ChunkScan, first_line: int,
                file_time: float | None = None) -> Iterator[Event]:
        """The scan's events in line order, numbered from `first_line`; `file_time` dates lines
        that carry no time of their own."""
        source = self.sources.get(scan.path)
        if source is None:
            source = self.sources[scan.path] = _Source(scan.path)
        hits = {first_line + number: (text, reading, found)
                for number, text, reading, found in scan.hits}
        blocks = _tracebacks(scan, first_line, source)
        for number in sorted(hits.keys() | blocks.keys()):
            block = blocks.get(number)
            if number in hits:
                text, reading, found = hits[number]
            else:
                text, found = blocks[number][0].text, ()
                reading = read_line(text)
            own, relayed, written, prefix_written = reading
            rank = source.event_rank(own, relayed, number, block is not None)
            stamp = source.clock.date(written)
            if stamp is None:  # the time a frame gave the line
                stamp = source.clock.date(prefix_written)
            line = Line(scan.path, number, text, rank, stamp if stamp is not None else file_time)
            traceback = block[1] if block else None
            if traceback is not None and traceback.rank is None and rank is not None:
                traceback = traceback._replace(rank=rank)
            yield Event(line, found, traceback)

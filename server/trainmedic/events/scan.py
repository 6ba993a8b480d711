"""Chunks → scans: everything the diagnosis needs from one chunk, found without any state.

A scan holds a chunk's fingerprint hits, metric samples, rank census and the lines a traceback
may run through, numbered from the chunk's own first line (0). Needing nothing from earlier
chunks, chunks can be scanned in any order and in other processes; the engine then folds the
scans in order, each source's after the `SourceStart` that announces it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from trainmedic.logs.formats import Source
from trainmedic.logs.prefixes import census
from trainmedic.logs.reader import Chunk, LineCounter, capped, read_chunks
from trainmedic.logs.tracebacks import MAX_BLOCK_LINES
from trainmedic.matching.pasted import pasted_hits
from trainmedic.matching.python import Matcher
from trainmedic.metrics.samples import Sample, scan_metrics
from trainmedic.model import Hit, Line

# Rank markers are read in a source's whole first chunk, then only in the head of each later
# one: every rank of a running job prints in every stretch of its log, so the heads keep
# seeing them all at a fraction of the cost.
CENSUS_SPAN = 1 << 15


@dataclass(frozen=True)
class SourceStart:
    """A source begins (in the order sources are read): the scans after it are its own."""

    path: str
    timestamp: float | None = None  # what the source's format says of all its lines' time


@dataclass(frozen=True)
class ChunkScan:
    """What one chunk holds for the diagnosis; line numbers count from its first line, 0."""

    path: str
    size: int  # the bytes the chunk was read from
    lines: int
    ranks: frozenset[int]
    hits: tuple[tuple[Line, tuple[Hit, ...]], ...]
    samples: tuple[tuple[Sample, Line], ...]
    block_starts: tuple[int, ...]  # lines that open a traceback or chain one to the next
    block_lines: dict[int, str]  # the lines a traceback may run through


def _block_lines(text: str, marks: list[int]) -> tuple[tuple[int, ...], dict[int, str]]:
    """The numbers of the lines at `marks` (traceback headers and chain markers), and the lines
    a block may run through.

    A block runs at most MAX_BLOCK_LINES lines from its start; the chunk's first lines are kept
    too, for a block still open from the chunk before.
    """
    starts, kept = [], {}
    free, free_offset = 0, 0  # the first line not kept yet, and where it starts
    numbers = LineCounter(text)
    marked = set(marks)
    for offset in sorted({0, *marked}):
        number = numbers.at(offset)
        if offset in marked:
            starts.append(number)
        if free < number:
            free, free_offset = number, offset
        wanted = number + MAX_BLOCK_LINES - free
        if wanted <= 0:
            continue
        pieces = text[free_offset:].split("\n", wanted)  # the lines, then the rest of the text
        for line in pieces[:-1]:
            kept[free] = capped(line)
            free, free_offset = free + 1, free_offset + len(line) + 1
    return tuple(starts), kept


class Scanner:
    """Scans chunks with one matcher and the catalogue's own metric patterns."""

    def __init__(self, matcher: Matcher, metric_patterns: Iterable[re.Pattern[str]] = ()) -> None:
        self.matcher = matcher
        self.metric_patterns = tuple(metric_patterns)

    def scan_source(self, source: Source) -> Iterator[SourceStart | ChunkScan]:
        """A whole source, start to end: its announcement, then each chunk's scan."""
        yield SourceStart(source.path, source.timestamp)
        for chunk in read_chunks(source.stream, source.path):
            yield self.scan(chunk)

    def scan(self, chunk: Chunk) -> ChunkScan:
        text = chunk.text
        found: dict[int, tuple[Line, list[Hit]]] = {}
        hits, signals, marks, metric_lines = self.matcher.find(text)
        hits = list(dict.fromkeys([*hits, *pasted_hits(self.matcher, text)]))
        numbers = LineCounter(text)
        for offset, hit in sorted(hits, key=lambda item: item[0]):
            number = numbers.at(offset)
            if number not in found:
                found[number] = (chunk.line_at(offset, number), [])
            found[number][1].append(hit)
        starts, kept = _block_lines(text, marks)
        lines = LineCounter(text)  # numbers the samples, then counts the rest of the lines
        samples = tuple(scan_metrics(chunk, signals, lines, self.metric_patterns, metric_lines))
        return ChunkScan(
            chunk.path, chunk.size, lines.at(len(text)),
            frozenset(census(text if chunk.index == 0 else text[:CENSUS_SPAN])),
            tuple((line, tuple(hits)) for line, hits in found.values()), samples, starts, kept)

"""Chunks → scans: everything the diagnosis needs from one chunk, found without any state.

A scan holds a chunk's fingerprint hits, metric samples, rank census and the lines a traceback
may run through, numbered from the chunk's own first line (0). Needing nothing from earlier
chunks, chunks can be scanned in any order and in other processes; the engine then folds the
scans in order, each source's after the `SourceStart` that announces it.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, NamedTuple

from trainmedic.logs.formats import Source
from trainmedic.logs.prefixes import census, parse_rank, relayed_rank
from trainmedic.logs.reader import (
    Chunk,
    LineCounter,
    byte_offsets,
    capped,
    decoded,
    read_chunks,
    read_part,
)
from trainmedic.logs.timestamps import Stamp, read_stamp
from trainmedic.logs.tracebacks import MAX_BLOCK_LINES
from trainmedic.matching.pasted import PASTE_MAX_BYTES, pasted_hits
from trainmedic.matching.python import Matcher
from trainmedic.metrics.samples import Sample, scan_metrics
from trainmedic.model import Hit

# Rank markers are read in a source's whole first chunk, then only in the head of each later
# one: every rank of a running job prints in every stretch of its log, so the heads keep
# seeing them all at a fraction of the cost. (The bench's logs of 256 and 4096 ranks give the
# same answers with heads of 16 KiB as with 32, whose census took a sixth of a chunk's scan.)
CENSUS_SPAN = 1 << 14


# What is read of an event's line that needs nothing from the lines before it: the rank its
# prefixes or text name (`parse_rank`), the rank whose error it relays (`relayed_rank`), and
# its timestamp as written in its text, then in its prefixes (`read_stamp`). A hit line's is
# read where its chunk is scanned (by a worker, for a large log) and kept with the chunk's
# identical lines, not in the fold, which runs one chunk after the other: an fp16 run
# overflowing at every step makes half its lines evidence, and reading them there took a
# quarter of the fold's time.
Reading = tuple[int | None, int | None, Stamp | None, Stamp | None]


def read_line(text: str) -> Reading:
    """The `Reading` of an event's line."""
    rank, body = parse_rank(text)
    prefixes = text[:len(text) - len(body)]
    return (rank, relayed_rank(body), read_stamp(body),
            read_stamp(prefixes) if prefixes else None)


class SourceStart(NamedTuple):
    """A source begins (in the order sources are read): the scans after it are its own."""

    path: str
    timestamp: float | None = None  # what the source's format says of all its lines' time


class ChunkScan:
    """What one chunk holds for the diagnosis; line numbers count from its first line, 0.

    Its hit and metric lines are numbers and texts, not Lines: the fold makes their Lines,
    numbered in the source and with the rank and time read in order, and a worker hands the
    scan over with no Line to pickle."""

    __slots__ = ("_head_lines", "block_lines", "block_starts", "head", "hits", "index", "lines",
                 "path", "ranks", "samples", "size")

    def __init__(self, path: str, index: int, size: int, lines: int, ranks: frozenset[int],
                 hits: tuple[tuple[int, str, Reading, tuple[Hit, ...]], ...],
                 samples: tuple[tuple[Sample, int, str, int | None], ...],
                 block_starts: tuple[int, ...],
                 head: bytes | None, block_lines: dict[int, str]) -> None:
        self.path = path
        self.index = index  # the chunk's index in its source
        self.size = size  # the bytes the chunk was read from
        self.lines, self.ranks = lines, ranks
        # Each hit line's number, its text (cut as a Line keeps it), its `Reading`, its hits.
        self.hits = hits
        self.samples = samples  # each sample, its line's number, text and rank
        self.block_starts = block_starts  # lines that open a traceback or chain one to the next
        # The first MAX_BLOCK_LINES lines, for a traceback open from the chunk before; None
        # when they were left in the file (a worker's scan): few chunks continue a traceback,
        # so reading them again then costs far less than handing every chunk's head over.
        self.head = head
        self.block_lines = block_lines  # the lines after the head a traceback may run through
        self._head_lines: list[str] | None = None  # the head's, split when first asked for

    def __reduce__(self) -> tuple[Callable[..., "ChunkScan"], tuple[object, ...]]:
        """A worker hands scans over as plain tuples: pickle calls Python code for each named
        tuple (a flood chunk holds thousands of hits), and for a builtin tuple it does not."""
        return _unpickled, (
            self.path, self.index, self.size, self.lines, self.ranks,
            tuple([(number, text, reading, tuple(map(tuple, hits)))
                   for number, text, reading, hits in self.hits]),
            tuple([(tuple(sample), number, text, rank)
                   for sample, number, text, rank in self.samples]),
            self.block_starts, self.head, self.block_lines)

    def block_line(self, number: int) -> str:
        """Line `number` of the chunk, one a traceback may run through (cut as a Line keeps it)."""
        if number < MAX_BLOCK_LINES:
            if self._head_lines is None:
                head = self.head
                if head is None:
                    chunk = next(read_part(self.path, self.index, self.index + 1), None)
                    head = chunk.data[:_head_end(chunk.data)] if chunk is not None else b""
                self._head_lines = decoded(head).split("\n")
            lines = self._head_lines
            return capped(lines[number]) if number < len(lines) else ""  # the file shrank
        return self.block_lines[number]


def _unpickled(path: str, index: int, size: int, lines: int, ranks: frozenset[int],
               hits: tuple[tuple[int, str, Reading, tuple[tuple[Any, ...], ...]], ...],
               samples: tuple[tuple[tuple[Any, ...], int, str, int | None], ...],
               block_starts: tuple[int, ...], head: bytes | None,
               block_lines: dict[int, str]) -> ChunkScan:
    """A scan from what `ChunkScan.__reduce__` made of it, each named tuple built by
    `tuple.__new__` (in C: its class's constructor is Python code)."""
    hit, sample = partial(tuple.__new__, Hit), partial(tuple.__new__, Sample)
    return ChunkScan(
        path, index, size, lines, ranks,
        tuple([(number, text, reading, tuple(map(hit, found)))
               for number, text, reading, found in hits]),
        tuple([(sample(values), number, text, rank) for values, number, text, rank in samples]),
        block_starts, head, block_lines)


def _read(text: str, known: dict[str, Reading]) -> Reading:
    """The `Reading` of a hit line; `known` holds the chunk's lines read before: a failing run
    repeats its evidence word for word."""
    found = known.get(text)
    if found is None:
        found = known[text] = read_line(text)
    return found


def _lines_end(data: bytes, start: int, count: int) -> int:
    """Where the `count` lines from offset `start` end (after their newlines), at most the end."""
    end = start
    for _ in range(count):
        end = data.find(b"\n", end) + 1
        if not end:
            return len(data)
    return end


def _head_end(data: bytes) -> int:
    """Where a chunk's first MAX_BLOCK_LINES lines end: the head, which a traceback open before
    the chunk may run through."""
    return _lines_end(data, 0, MAX_BLOCK_LINES)


def _block_lines(data: bytes, marks: list[int], head_end: int,
                 numbers: LineCounter) -> tuple[tuple[int, ...], dict[int, str]]:
    """The numbers of the lines at `marks` (traceback headers and chain markers), and the lines
    after the head (ending at `head_end`) a block may run through: at most MAX_BLOCK_LINES from
    its start."""
    starts, kept = [], {}
    free, free_offset = MAX_BLOCK_LINES, head_end  # the first line not kept yet, and its start
    for offset in marks:
        number = numbers.at(offset)
        starts.append(number)
        if free < number:
            free, free_offset = number, offset
        wanted = number + MAX_BLOCK_LINES - free
        if wanted <= 0:
            continue
        end = _lines_end(data, free_offset, wanted)
        for line in data[free_offset:end].split(b"\n")[:-1]:
            kept[free] = capped(decoded(line))
            free += 1
        free_offset = end
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

    def scan(self, chunk: Chunk, keep_head: bool = True) -> ChunkScan:
        """The chunk's scan; without `keep_head` its first lines are left in its file (a
        regular file's: they are read from it again if a traceback runs into them)."""
        data = chunk.data
        found: dict[int, tuple[str, list[Hit]]] = {}  # each hit line's text and hits
        hits, signals, marks, metric_lines, positioned = self.matcher.find_chunk(chunk)
        if len(data) <= PASTE_MAX_BYTES:
            text = chunk.text
            pasted = pasted_hits(self.matcher, text)
            at = byte_offsets(text, (offset for offset, _ in pasted))
            hits = list(dict.fromkeys([*hits, *((at[offset], hit) for offset, hit in pasted)]))
        numbers = LineCounter(data)  # numbers hits, marks and samples, then counts the lines
        for offset, hit in sorted(hits, key=lambda item: item[0]):
            number = numbers.at(offset)
            if number not in found:
                found[number] = (capped(chunk.line(offset)), [])
            found[number][1].append(hit)
        head_end = _head_end(data) if keep_head or marks else 0  # a worker's quiet chunk: none
        starts, kept = _block_lines(data, marks, head_end, numbers) if marks else ((), {})
        samples = tuple(scan_metrics(chunk, signals, numbers, self.metric_patterns,
                                     metric_lines, positioned))
        ranks = census(decoded(data if chunk.index == 0 else data[:CENSUS_SPAN]))
        read: dict[str, Reading] = {}
        return ChunkScan(
            chunk.path, chunk.index, chunk.size, numbers.at(len(data)), frozenset(ranks),
            tuple((number, text, _read(text, read), tuple(hits))
                  for number, (text, hits) in found.items()),
            samples, starts, data[:head_end] if keep_head else None, kept)

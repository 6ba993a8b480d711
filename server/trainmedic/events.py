"""Chunks → events: the lines that matched a fingerprint or end a traceback.

Matching runs over whole chunks and reports offsets; only the lines that matched are cut out
and given their rank and timestamp, so the cost of a quiet line is the regex scan alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from trainmedic.catalogue import Catalogue, Fingerprint
from trainmedic.launcher import LAUNCHER, PATTERNS
from trainmedic.model import Event, Hit, Line, Traceback
from trainmedic.ranks import census, parse_rank, rank_of_path
from trainmedic.reader import Chunk
from trainmedic.regex_safety import required_literals
from trainmedic.timestamps import Clock
from trainmedic.tracebacks import CHAIN_MARKERS, HEADER, MAX_BLOCK_LINES, TracebackAssembler


@dataclass(frozen=True)
class _Pattern:
    rule_id: str
    fingerprint: Fingerprint
    literals: tuple[str, ...] | None


ANCHOR_LENGTH = 4
# Four-letter runs common in any English text make poor anchors: they are nearly always present.
_COMMON = frozenset({"tion", "ment", "ther", "that", "with", "have", "this", "from", "ould",
                     "ally", "ence", "ance", "able", "ight", "ions", "ated", "ting"})


def _anchors(literals: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Group literals under shared four-character anchors (greedy set cover).

    One `in` test of an absent anchor rules out its whole group, so a quiet chunk costs a few
    dozen substring searches instead of one per literal. Literals sharing no anchor stay single.
    """
    left, groups = sorted(set(literals)), []
    while left:
        counts: dict[str, int] = {}
        for literal in left:
            for gram in sorted({literal[i:i + ANCHOR_LENGTH]
                                for i in range(len(literal) - ANCHOR_LENGTH + 1)}):
                if " " not in gram and gram.lower() not in _COMMON:
                    counts[gram] = counts.get(gram, 0) + 1
        best = max(sorted(counts), key=lambda g: counts[g], default=None)
        if best is None or counts[best] < 2:
            break
        groups.append((best, [lit for lit in left if best in lit]))
        left = [lit for lit in left if best not in lit]
    return groups, left


class Matcher:
    """Every fingerprint of a catalogue, scanned over a chunk of text (pure-Python backend).

    A pattern runs only on chunks that contain one of its required literals; literals are
    tested through shared anchors, so most chunks of a healthy log run almost no regex.
    """

    name = "python-re"

    def __init__(self, catalogue: Catalogue) -> None:
        launcher = ((LAUNCHER, Fingerprint(name, pattern, 1.0)) for name, pattern in PATTERNS)
        rules = ((rule.id, fp) for rule in catalogue.rules for fp in rule.fingerprints)
        self.patterns = tuple(
            _Pattern(rule_id, fp, required_literals(fp.pattern, fp.ignore_case))
            for rule_id, fp in (*rules, *launcher)
        )
        self._always = [p for p in self.patterns if p.literals is None]
        self._by_literal: dict[str, list[_Pattern]] = {}
        for pattern in self.patterns:
            for literal in pattern.literals or ():
                self._by_literal.setdefault(literal, []).append(pattern)
        self._groups, self._singles = _anchors(list(self._by_literal))

    def _candidates(self, text: str) -> list[_Pattern]:
        present = [lit for lit in self._singles if lit in text]
        for anchor, literals in self._groups:
            if anchor in text:
                present.extend(lit for lit in literals if lit in text)
        chosen = {id(p): p for lit in present for p in self._by_literal[lit]}
        return [*self._always, *chosen.values()]

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        """(offset, hit) for every match in `text`, in no particular order."""
        for pattern in self._candidates(text):
            yield from self._confirm(pattern, text)

    @staticmethod
    def _confirm(pattern: _Pattern, text: str) -> Iterator[tuple[int, Hit]]:
        """The pattern's real matches in `text`, with their named groups, `where` applied."""
        fp = pattern.fingerprint
        for match in fp.regex.finditer(text):
            groups = match.groupdict()
            if fp.where is not None and not fp.where.holds(groups):
                continue
            yield match.start(), Hit(
                pattern.rule_id, fp.name,
                tuple((k, v) for k, v in groups.items() if v is not None),
            )


class _LineCounter:
    """Line numbers for increasing offsets of one chunk, counting each newline once."""

    def __init__(self, chunk: Chunk) -> None:
        self.chunk, self.offset, self.number = chunk, 0, chunk.first_line

    def number_at(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.number = 0, self.chunk.first_line
        self.number += self.chunk.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.number


class _Source:
    """Per-file state carried across chunks: the clock and the open tracebacks."""

    def __init__(self, path: str) -> None:
        self.clock = Clock()
        self.tracebacks = TracebackAssembler()
        self.rank = rank_of_path(path)

    def rank_of(self, text: str) -> tuple[int | None, str]:
        rank, body = parse_rank(text)
        return (self.rank if rank is None else rank), body


def _next_traceback_start(text: str, start: int) -> int:
    found = [i for i in (text.find(m, start) for m in (HEADER, *CHAIN_MARKERS)) if i >= 0]
    return min(found) if found else -1


CENSUS_SPAN = 1 << 17


class RankCensus:
    """Records the ranks named in the chunks it sees, quiet ranks included.

    Only the head of each chunk is read: every rank of a running job prints in every stretch of
    its log, so the head sees them all at a fraction of the cost of reading every line.
    """

    def __init__(self) -> None:
        self.ranks: set[int] = set()

    def add(self, chunk: Chunk) -> None:
        self.ranks |= census(chunk.text[:CENSUS_SPAN])
        path_rank = rank_of_path(chunk.path)
        if path_rank is not None:
            self.ranks.add(path_rank)


def _tracebacks(chunk: Chunk, source: _Source) -> dict[int, tuple[Line, Traceback]]:
    """Feed the lines around traceback headers to the assembler; completed blocks by line."""
    text, done = chunk.text, {}
    counter = _LineCounter(chunk)
    position = 0 if source.tracebacks.is_open else _next_traceback_start(text, 0)
    while 0 <= position < len(text):
        start = text.rfind("\n", 0, position) + 1
        number = counter.number_at(start)
        budget = MAX_BLOCK_LINES
        while start < len(text) and budget:
            end = text.find("\n", start)
            raw = text[start:end]
            rank, body = source.rank_of(raw)
            line = Line(chunk.path, number, raw, rank)
            block = source.tracebacks.feed(line, body)
            if block is not None:
                done[number] = (line, block)
            start, number, budget = end + 1, number + 1, budget - 1
            if not source.tracebacks.is_open:
                break
        position = _next_traceback_start(text, start) if start < len(text) else -1
    return done


class EventExtractor:
    """Turns chunks into events, keeping each source's clock and open tracebacks in between."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.sources: dict[str, _Source] = {}

    def extract(self, chunk: Chunk, file_time: float | None = None) -> Iterator[Event]:
        """The chunk's events in line order; `file_time` dates lines that carry no time."""
        source = self.sources.get(chunk.path)
        if source is None:
            source = self.sources[chunk.path] = _Source(chunk.path)
        hits: dict[int, list[Hit]] = {}
        lines: dict[int, Line] = {}
        counter = _LineCounter(chunk)
        for offset, hit in sorted(self.matcher.scan(chunk.text), key=lambda item: item[0]):
            number = counter.number_at(offset)
            if number not in lines:
                lines[number] = chunk.line_at(offset, number)
            hits.setdefault(number, []).append(hit)
        blocks = _tracebacks(chunk, source)
        for number in sorted(lines.keys() | blocks.keys()):
            line = lines[number] if number in lines else blocks[number][0]
            rank, body = source.rank_of(line.text)
            stamp = source.clock.parse(body)
            line = replace(line, rank=rank, timestamp=stamp if stamp is not None else file_time)
            block = blocks.get(number)
            yield Event(line, tuple(hits.get(number, ())), block[1] if block else None)


def extract_events(chunks: Iterable[Chunk], matcher: Matcher,
                   file_times: Mapping[str, float] | None = None) -> Iterator[Event]:
    """Events of every chunk in line order within each source.

    `file_times` gives a timestamp for every line of a source whose lines carry none of their
    own (an error file written at the moment of failure).
    """
    extractor = EventExtractor(matcher)
    file_times = file_times or {}
    for chunk in chunks:
        yield from extractor.extract(chunk, file_times.get(chunk.path))

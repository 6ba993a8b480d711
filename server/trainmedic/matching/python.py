"""Fingerprints → hits: the pure-Python matcher backend.

A pattern is matched line by line, as the native backend does, and only on the lines that hold
its required literals, tried only where a match can start before one. Which literals a chunk
holds at all is asked of its line shapes: its distinct lines with every digit made 0. Metric
lines differ mostly in their numbers, so a megabyte of them has a few dozen kilobytes of shapes
(and the next chunk mostly the same ones, which are remembered): the substring tests that rule
most patterns out run over those, and a pattern blind to digit values that matches none of the
shapes holding its literal matches no line. That machinery is `matching.literals`, imported when
this backend first scans: a native backend extends `Matcher` and never needs it.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property, partial
from typing import TYPE_CHECKING, NamedTuple

from trainmedic.catalogue.rules import Catalogue, Fingerprint
from trainmedic.logs.launcher import LAUNCHER, PATTERNS
from trainmedic.logs.reader import Chunk, byte_offsets
from trainmedic.logs.tracebacks import MARKERS
from trainmedic.metrics.samples import SIGNAL_WORDS, SIGNALS, metric_signal
from trainmedic.model import Hit

if TYPE_CHECKING:
    from trainmedic.matching.literals import (
        Known,
        Literal,
        Prefilter,
        Shapes,
        Signal,
        TextChunk,
    )


class Found(NamedTuple):
    """What one pass over a chunk found; offsets are of what was scanned: a text's characters
    (`find`), a chunk's bytes (`find_chunk`)."""

    hits: list[tuple[int, Hit]]  # (offset, hit), in no particular order
    signals: frozenset[str]  # the metric sampler's SIGNALS present
    marks: list[int]  # line starts of traceback headers and chain markers, in order
    metric_lines: list[int]  # line starts where a rule's metric pattern matches, in order
    # where the matches of its POSITIONED signal end, in order (None: not looked for)
    positioned: list[int] | None = None

    def moved(self, offsets: Callable[[Iterable[int]], Mapping[int, int]]) -> "Found":
        """These findings at other offsets (characters for bytes, or bytes for characters):
        `offsets` maps every offset it is given; the signal positions, a chunk's only, go."""
        at = offsets([*(o for o, _ in self.hits), *self.marks, *self.metric_lines])
        return Found([(at[o], hit) for o, hit in self.hits], self.signals,
                     [at[o] for o in self.marks], [at[o] for o in self.metric_lines])


class Pattern(NamedTuple):
    rule_id: str
    fingerprint: Fingerprint

    @property
    def prefilter(self) -> "Prefilter | None":
        from trainmedic.matching.literals import prefilter

        return prefilter(self.fingerprint.pattern, self.fingerprint.ignore_case)


class _Index:
    """The patterns by their required literals, grouped under shared anchors. (Not a record:
    its fields name `matching.literals`' types, which this module imports only to scan.)"""

    __slots__ = ("always", "by_literal", "groups", "singles")

    def __init__(self, always: list[Pattern], by_literal: "dict[Literal, list[Pattern]]",
                 groups: "list[tuple[str, bool, list[Literal]]]",
                 singles: "list[Literal]") -> None:
        self.always = always  # no literal: they run on every text
        self.by_literal = by_literal
        self.groups = groups  # (anchor shape, caseless, literals)
        self.singles = singles


def signal_patterns(catalogue: Catalogue) -> dict[str, str]:
    """Every signal a matcher reports, by name: the metric sampler's SIGNALS, and each rule's
    metric pattern (so the sampler runs one only on chunks where it can match)."""
    return {**SIGNALS, **{metric_signal(pattern): pattern for rule in catalogue.rules
                          for pattern in rule.metric_patterns}}


class Matcher:
    """Every fingerprint of a catalogue, scanned over a chunk of text (pure-Python backend).

    A pattern runs only on the lines that contain its required literals; literals are tested
    through shared anchors on the chunk's line shapes, so most chunks of a healthy log run
    almost no regex. What it learns of shapes is kept (bounded) for the chunks after.
    """

    name = "python-re"

    def __init__(self, catalogue: Catalogue, caseless: bool = False) -> None:
        self.catalogue = catalogue
        self._caseless: Matcher | None = None
        self._known: dict[str, Known] = {}
        launcher = ((LAUNCHER, Fingerprint(name, pattern, 1.0)) for name, pattern in PATTERNS)
        rules = ((rule.id, fp) for rule in catalogue.rules for fp in rule.fingerprints)
        if caseless:
            rules = ((rule_id, fp._replace(ignore_case=True)) for rule_id, fp in rules)
        self.patterns = tuple(Pattern(rule_id, fp) for rule_id, fp in (*rules, *launcher))

    @cached_property
    def _signals(self) -> list["Signal"]:
        """Compiled when first looked for (a native backend finds them itself)."""
        from trainmedic.matching.literals import Signal, prefilter

        return [Signal(name, prefilter(pattern, False), SIGNAL_WORDS.get(name),
                        re.compile(pattern, re.MULTILINE))
                for name, pattern in signal_patterns(self.catalogue).items()]

    @cached_property
    def _metric_patterns(self) -> list["Signal"]:
        return [s for s in self._signals if s.name not in SIGNALS]

    def caseless(self) -> "Matcher":
        """These patterns blind to case, for text whose case was changed by hand (pure Python:
        only pastes need it)."""
        if self._caseless is None:
            self._caseless = Matcher(self.catalogue, caseless=True)
        return self._caseless

    @cached_property
    def _index(self) -> _Index:
        """Built when first scanned with (a native backend only confirms its candidates, so
        its start skips this)."""
        from trainmedic.matching.literals import anchors

        by_literal: dict[Literal, list[Pattern]] = {}
        for pattern in self.patterns:
            for literal in pattern.prefilter.found if pattern.prefilter else ():
                by_literal.setdefault(literal, []).append(pattern)
        groups: list[tuple[str, bool, list[Literal]]] = []
        singles: list[Literal] = []
        for caseless in (False, True):
            by_shape: dict[str, list[Literal]] = {}
            for literal in by_literal:
                if literal.caseless == caseless:
                    by_shape.setdefault(literal.shape, []).append(literal)
            shape_groups, single_shapes = anchors(list(by_shape))
            groups.extend((anchor, caseless, [lit for shape in shapes for lit in by_shape[shape]])
                          for anchor, shapes in shape_groups)
            singles.extend(lit for shape in single_shapes for lit in by_shape[shape])
        return _Index([p for p in self.patterns if p.prefilter is None], by_literal, groups,
                      singles)

    def _present(self, shapes: "Shapes") -> set["Literal"]:
        """The literals some of these line shapes hold."""
        index = self._index
        present = {lit for lit in index.singles if shapes.may_hold(lit.shape, lit.caseless)}
        for anchor, caseless, literals in index.groups:
            if shapes.may_hold(anchor, caseless):
                within = shapes.shapes_with(anchor, caseless)
                present.update(lit for lit in literals if lit.shape in within)
        return present

    def _candidates(self, chunk: "TextChunk") -> list[Pattern]:
        """The patterns with a literal the chunk's line shapes hold.

        Which literals a shape holds is kept for the next chunks: the chunks of one log share
        most of their shapes, and only new ones are tested.
        """
        from trainmedic.matching.literals import (
            MAX_KNOWN_LITERALS,
            MAX_KNOWN_SHAPE_CHARS,
            MAX_KNOWN_SHAPES,
            Known,
            Shapes,
        )

        known_shapes, new = chunk.known, []
        present: set[Literal] = set()
        for shape in chunk.shapes.split("\n"):
            known = known_shapes.get(shape)
            if known is None:
                new.append(shape)
            else:
                present |= known.literals
        if new:
            fresh = Shapes("\n".join(new))
            found = self._present(fresh)
            present |= found
            if len(new) <= MAX_KNOWN_SHAPES // 2:  # else: lines alike in no way worth keeping
                if len(known_shapes) + len(new) > MAX_KNOWN_SHAPES:
                    known_shapes.clear()  # another log, perhaps: start again
                holds: dict[str, set[Literal]] = {shape: set() for shape in new}
                for literal in found:
                    for shape in fresh.holding(literal.shape, literal.caseless):
                        holds[shape].add(literal)
                known_shapes.update(
                    (shape, Known(frozenset(literals), {})) for shape, literals in holds.items()
                    if len(shape) <= MAX_KNOWN_SHAPE_CHARS
                    and len(literals) <= MAX_KNOWN_LITERALS)
        by_literal = self._index.by_literal
        return list({id(p): p for lit in present for p in by_literal[lit]}.values())

    def _scan(self, chunk: "TextChunk") -> Iterator[tuple[int, Hit]]:
        text = chunk.text
        for pattern in self._index.always:
            yield from self._confirm(pattern, text)
        for pattern in self._candidates(chunk):
            assert pattern.prefilter is not None  # a candidate for holding its literal
            confirmed: dict[str, list[tuple[int, Hit]]] = {}  # a line said again: its hits
            for start, line in chunk.matching_lines(pattern.prefilter, pattern.fingerprint.regex):
                found = confirmed.get(line)
                if found is None:
                    found = confirmed[line] = list(self._confirm(pattern, line))
                for offset, hit in found:
                    yield start + offset, hit

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        """(offset, hit) for every match in `text`, in no particular order."""
        from trainmedic.matching.literals import TextChunk

        return self._scan(TextChunk(text, self._known))

    def signals(self, text: str) -> frozenset[str]:
        """Which of the metric sampler's SIGNALS (and rules' metric patterns) `text` holds."""
        from trainmedic.matching.literals import TextChunk

        return self._signals_in(TextChunk(text, self._known))[0]

    def marks(self, text: str) -> list[int]:
        """Where the lines that open a traceback, or chain one to the next, start."""
        found = set()
        for marker in MARKERS:
            position = text.find(marker)
            while position >= 0:
                found.add(text.rfind("\n", 0, position) + 1)
                position = text.find(marker, position + len(marker))
        return sorted(found)

    def find(self, text: str) -> Found:
        """Everything the scan of a chunk looks for (a native backend finds it in one pass)."""
        from trainmedic.matching.literals import TextChunk

        chunk = TextChunk(text, self._known)
        signals, metric_lines = self._signals_in(chunk)
        return Found(list(self._scan(chunk)), signals, self.marks(text), metric_lines)

    def _signals_in(self, chunk: "TextChunk") -> tuple[frozenset[str], list[int]]:
        """The signals a chunk holds, and the line starts where a rule's metric pattern
        matches, in order."""
        text = chunk.text
        signals = {signal.name for signal in self._signals
                   if signal.name in SIGNALS and signal.holds(chunk)}
        lines: set[int] = set()
        for signal in self._metric_patterns:
            if signal.prefilter is None:
                starts = {text.rfind("\n", 0, match.start()) + 1
                          for match in signal.regex.finditer(text)}
            else:
                starts = {start for start, _ in chunk.matching_lines(signal.prefilter,
                                                                     signal.regex)}
            if starts:
                signals.add(signal.name)
                lines |= starts
        return frozenset(signals), sorted(lines)

    def find_chunk(self, chunk: Chunk) -> Found:
        """`find` over a chunk's text, at byte offsets of the chunk."""
        text = chunk.text
        found = self.find(text)
        if len(text) == len(chunk.data):
            return found
        return found.moved(partial(byte_offsets, text))

    @staticmethod
    def _confirm(pattern: Pattern, text: str) -> Iterator[tuple[int, Hit]]:
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

"""Fingerprints → hits: the pure-Python matcher backend.

A pattern is matched line by line, as the native backend does, and only on the lines that hold
one of its required literals. Which literals a chunk holds at all is asked of its line shapes:
its distinct lines with every digit made 0. Metric lines differ mostly in their numbers, so a
megabyte of them has a few dozen kilobytes of shapes, and the few dozen substring tests that
rule most patterns out run over that instead of the whole chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

from trainmedic.catalogue.regex_safety import required_literals
from trainmedic.catalogue.rules import Catalogue, Fingerprint
from trainmedic.logs.launcher import LAUNCHER, PATTERNS
from trainmedic.logs.tracebacks import MARKERS
from trainmedic.metrics.samples import SIGNAL_WORDS, SIGNALS, metric_signal, signal_matches
from trainmedic.model import Hit


class Found(NamedTuple):
    """What one pass over a chunk found; offsets are of its characters."""

    hits: list[tuple[int, Hit]]  # (offset, hit), in no particular order
    signals: frozenset[str]  # the metric sampler's SIGNALS present
    marks: list[int]  # line starts of traceback headers and chain markers, in order
    metric_lines: list[int]  # line starts where a rule's metric pattern matches, in order


_ZERO_BYTES = bytes.maketrans(b"123456789", b"000000000")
_ZERO_CHARS = str.maketrans("123456789", "000000000")
# The letters outside ASCII that Python's `re` matches to an ASCII letter when it ignores case
# (U+0130, U+0131, U+017F; the Kelvin sign U+212A lower-cases to "k" by itself).
_ODD_LETTERS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))


def _folded(text: str) -> str:
    """`text` lower-cased, with every letter a caseless pattern takes for an ASCII one made
    that letter: where a caseless ASCII literal occurs in `text`, its lower case occurs here."""
    for odd, letter in _ODD_LETTERS:
        text = text.replace(odd, letter)
    return text.lower()


class _Literal(NamedTuple):
    """A string every match of some pattern may contain; in any case when `caseless`."""

    text: str
    caseless: bool

    @property
    def shape(self) -> str:
        """How it appears in line shapes (digits made 0, folded when caseless)."""
        shape = self.text.translate(_ZERO_CHARS)
        return _folded(shape) if self.caseless else shape


def _literals(pattern: str, ignore_case: bool) -> tuple[_Literal, ...] | None:
    """The literals one of which every match contains; None when unknown, or when caseless
    and not ASCII (Unicode case folding is more than lower-casing)."""
    found = required_literals(pattern, ignore_case)
    if found is None or (found.caseless and not all(map(str.isascii, found.texts))):
        return None
    return tuple(_Literal(text, found.caseless) for text in found.texts)


class _Chunk:
    """A chunk's text, its line shapes, and the lines where each literal occurs (looked up
    once, whichever patterns need them)."""

    def __init__(self, text: str) -> None:
        self.text = text
        zeroed = text.encode("utf-8", errors="surrogatepass").translate(_ZERO_BYTES)
        self.shapes = b"\n".join(set(zeroed.split(b"\n"))).decode("utf-8",
                                                                 errors="surrogatepass")
        self._lines: dict[_Literal, list[tuple[int, int]]] = {}

    @cached_property
    def folded_shapes(self) -> str:
        return _folded(self.shapes)

    def may_hold(self, shape: str, caseless: bool) -> bool:
        """Whether a literal of this shape may occur in the text (False: it does not)."""
        return shape in (self.folded_shapes if caseless else self.shapes)

    def lines(self, literal: _Literal) -> list[tuple[int, int]]:
        """(start, end) of each line holding `literal`, in order; end is that of the text
        for a last line without a newline."""
        if literal in self._lines:
            return self._lines[literal]
        text, spans = self.text, []
        if self.may_hold(literal.shape, literal.caseless):
            search = re.compile(re.escape(literal.text), re.IGNORECASE).search \
                if literal.caseless else None
            position = 0
            while True:
                if search is None:
                    position = text.find(literal.text, position)
                else:
                    position = match.start() if (match := search(text, position)) else -1
                if position < 0:
                    break
                start, end = text.rfind("\n", 0, position) + 1, text.find("\n", position)
                spans.append((start, end if end >= 0 else len(text)))
                if end < 0:
                    break
                position = end + 1
        self._lines[literal] = spans
        return spans

    def lines_of(self, literals: tuple[_Literal, ...]) -> list[tuple[int, int]]:
        """The lines holding one of `literals`, in order."""
        if len(literals) == 1:
            return self.lines(literals[0])
        return sorted({span for literal in literals for span in self.lines(literal)})


@dataclass(frozen=True)
class _Pattern:
    rule_id: str
    fingerprint: Fingerprint

    @cached_property
    def literals(self) -> tuple[_Literal, ...] | None:
        return _literals(self.fingerprint.pattern, self.fingerprint.ignore_case)


class _Index(NamedTuple):
    """The patterns by their required literals, grouped under shared anchors."""

    always: list[_Pattern]  # no literal: they run on every text
    by_literal: dict[_Literal, list[_Pattern]]
    groups: list[tuple[str, bool, list[_Literal]]]  # (anchor shape, caseless, literals)
    singles: list[_Literal]


ANCHOR_LENGTH = 4
# Four-letter runs common in any English text make poor anchors: they are nearly always present.
_COMMON = frozenset({"tion", "ment", "ther", "that", "with", "have", "this", "from", "ould",
                     "ally", "ence", "ance", "able", "ight", "ions", "ated", "ting"})


def _anchors(shapes: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Group literal shapes under shared four-character anchors (greedy set cover).

    One test of an absent anchor rules out its whole group, so a quiet chunk costs a few
    dozen substring searches instead of one per literal. Literals sharing no anchor stay single.
    """
    left, groups = sorted(set(shapes)), []
    while left:
        counts: dict[str, int] = {}
        for literal in left:
            for gram in sorted({literal[i:i + ANCHOR_LENGTH]
                                for i in range(len(literal) - ANCHOR_LENGTH + 1)}):
                if " " not in gram and "0" not in gram and gram.lower() not in _COMMON:
                    counts[gram] = counts.get(gram, 0) + 1
        best = max(sorted(counts), key=lambda g: counts[g], default=None)
        if best is None or counts[best] < 2:
            break
        groups.append((best, [lit for lit in left if best in lit]))
        left = [lit for lit in left if best not in lit]
    return groups, left


def signal_patterns(catalogue: Catalogue) -> dict[str, str]:
    """Every signal a matcher reports, by name: the metric sampler's SIGNALS, and each rule's
    metric pattern (so the sampler runs one only on chunks where it can match)."""
    return {**SIGNALS, **{metric_signal(pattern): pattern for rule in catalogue.rules
                          for pattern in rule.metric_patterns}}


class _Signal(NamedTuple):
    name: str
    literals: tuple[_Literal, ...] | None
    words: tuple[str, ...] | None  # see SIGNAL_WORDS
    regex: re.Pattern[str]

    def holds(self, chunk: _Chunk) -> bool:
        """Whether the regex matches the chunk's text: around its words, or where its
        literals are."""
        text = chunk.text
        if self.words is not None:
            return any(chunk.may_hold(word.translate(_ZERO_CHARS), False)
                       for word in self.words) and \
                bool(signal_matches(self.regex, text, self.words, first_only=True))
        return (self.literals is None or any(chunk.may_hold(lit.shape, lit.caseless)
                                             for lit in self.literals)) and \
            self.regex.search(text) is not None


class Matcher:
    """Every fingerprint of a catalogue, scanned over a chunk of text (pure-Python backend).

    A pattern runs only on the lines that contain one of its required literals; literals are
    tested through shared anchors on the chunk's line shapes, so most chunks of a healthy log
    run almost no regex.
    """

    name = "python-re"

    def __init__(self, catalogue: Catalogue, caseless: bool = False) -> None:
        self.catalogue = catalogue
        self._caseless: Matcher | None = None
        launcher = ((LAUNCHER, Fingerprint(name, pattern, 1.0)) for name, pattern in PATTERNS)
        rules = ((rule.id, fp) for rule in catalogue.rules for fp in rule.fingerprints)
        if caseless:
            rules = ((rule_id, replace(fp, ignore_case=True)) for rule_id, fp in rules)
        self.patterns = tuple(_Pattern(rule_id, fp) for rule_id, fp in (*rules, *launcher))
        self._signals = [_Signal(name, _literals(pattern, False), SIGNAL_WORDS.get(name),
                                 re.compile(pattern, re.MULTILINE))
                         for name, pattern in signal_patterns(catalogue).items()]
        self._metric_patterns = [s for s in self._signals if s.name not in SIGNALS]

    def caseless(self) -> Matcher:
        """These patterns blind to case, for text whose case was changed by hand (pure Python:
        only pastes need it)."""
        if self._caseless is None:
            self._caseless = Matcher(self.catalogue, caseless=True)
        return self._caseless

    @cached_property
    def _index(self) -> _Index:
        """Built when first scanned with (a native backend only confirms its candidates, so
        its start skips this)."""
        by_literal: dict[_Literal, list[_Pattern]] = {}
        for pattern in self.patterns:
            for literal in pattern.literals or ():
                by_literal.setdefault(literal, []).append(pattern)
        groups: list[tuple[str, bool, list[_Literal]]] = []
        singles: list[_Literal] = []
        for caseless in (False, True):
            by_shape: dict[str, list[_Literal]] = {}
            for literal in by_literal:
                if literal.caseless == caseless:
                    by_shape.setdefault(literal.shape, []).append(literal)
            shape_groups, single_shapes = _anchors(list(by_shape))
            groups.extend((anchor, caseless, [lit for shape in shapes for lit in by_shape[shape]])
                          for anchor, shapes in shape_groups)
            singles.extend(lit for shape in single_shapes for lit in by_shape[shape])
        return _Index([p for p in self.patterns if p.literals is None], by_literal, groups,
                      singles)

    def _candidates(self, chunk: _Chunk) -> list[_Pattern]:
        """The patterns with a literal the chunk's line shapes hold."""
        index = self._index
        present = [lit for lit in index.singles if chunk.may_hold(lit.shape, lit.caseless)]
        for anchor, caseless, literals in index.groups:
            if chunk.may_hold(anchor, caseless):
                present.extend(lit for lit in literals if chunk.may_hold(lit.shape, caseless))
        return list({id(p): p for lit in present for p in index.by_literal[lit]}.values())

    def _scan(self, chunk: _Chunk) -> Iterator[tuple[int, Hit]]:
        text = chunk.text
        for pattern in self._index.always:
            yield from self._confirm(pattern, text)
        for pattern in self._candidates(chunk):
            search = pattern.fingerprint.regex.search
            for start, end in chunk.lines_of(pattern.literals or ()):
                line = text[start:end]
                if search(line) is not None:  # most lines holding a literal do not match
                    for offset, hit in self._confirm(pattern, line):
                        yield start + offset, hit

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        """(offset, hit) for every match in `text`, in no particular order."""
        return self._scan(_Chunk(text))

    def signals(self, text: str) -> frozenset[str]:
        """Which of the metric sampler's SIGNALS (and rules' metric patterns) `text` holds."""
        return self._signals_in(_Chunk(text))[0]

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
        chunk = _Chunk(text)
        signals, metric_lines = self._signals_in(chunk)
        return Found(list(self._scan(chunk)), signals, self.marks(text), metric_lines)

    def _signals_in(self, chunk: _Chunk) -> tuple[frozenset[str], list[int]]:
        """The signals a chunk holds, and the line starts where a rule's metric pattern
        matches, in order."""
        text = chunk.text
        signals = {signal.name for signal in self._signals
                   if signal.name in SIGNALS and signal.holds(chunk)}
        lines: set[int] = set()
        for signal in self._metric_patterns:
            if signal.literals is None:
                starts = {text.rfind("\n", 0, match.start()) + 1
                          for match in signal.regex.finditer(text)}
            else:
                starts = {start for start, end in chunk.lines_of(signal.literals)
                          if signal.regex.search(text[start:end]) is not None}
            if starts:
                signals.add(signal.name)
                lines |= starts
        return frozenset(signals), sorted(lines)

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

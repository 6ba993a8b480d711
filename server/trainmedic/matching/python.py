"""Fingerprints → hits: the pure-Python matcher backend.

A pattern is matched line by line, as the native backend does, and only on the lines that hold
its required literals, tried only where a match can start before one. Which literals a chunk
holds at all is asked of its line shapes: its distinct lines with every digit made 0. Metric
lines differ mostly in their numbers, so a megabyte of them has a few dozen kilobytes of shapes
(and the next chunk mostly the same ones, which are remembered): the substring tests that rule
most patterns out run over those, and a pattern blind to digit values that matches none of the
shapes holding its literal matches no line.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property, lru_cache, partial
from typing import NamedTuple

from trainmedic.catalogue.rules import KEPT_PATTERNS, Catalogue, Fingerprint
from trainmedic.logs.launcher import LAUNCHER, PATTERNS
from trainmedic.logs.reader import Chunk, byte_offsets
from trainmedic.logs.tracebacks import MARKERS
from trainmedic.metrics.samples import SIGNAL_WORDS, SIGNALS, metric_signal, signal_matches
from trainmedic.model import Hit


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


_ZERO_BYTES = bytes.maketrans(b"123456789", b"000000000")
_ZERO_CHARS = str.maketrans("123456789", "000000000")
# The letters outside ASCII that Python's `re` matches to an ASCII letter when it ignores case
# (U+0130, U+0131, U+017F; the Kelvin sign U+212A lower-cases to "k" by itself).
_ODD_LETTERS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))


def folded(text: str) -> str:
    """`text` lower-cased, with every letter a caseless pattern takes for an ASCII one made
    that letter: where a caseless ASCII literal occurs in `text`, its lower case occurs here."""
    for odd, letter in _ODD_LETTERS:
        text = text.replace(odd, letter)
    return text.lower()


class _Literal(NamedTuple):
    """A string every match of some pattern may contain; in any case when `caseless`;
    `shape`: how it appears in line shapes (digits made 0, folded when caseless)."""

    text: str
    caseless: bool
    shape: str

    @property
    def cases(self) -> re.Pattern[str]:
        """Its occurrences in any case, overlapping ones too, each as it is written."""
        return _cases(self.text)


def _literal(text: str, caseless: bool) -> _Literal:
    shape = text.translate(_ZERO_CHARS)
    return _Literal(text, caseless, folded(shape) if caseless else shape)


@lru_cache(KEPT_PATTERNS)
def _cases(text: str) -> re.Pattern[str]:
    return re.compile(f"(?=({re.escape(text)}))", re.IGNORECASE)


MAX_STARTS = 8  # a pattern that can start more places before its literal is searched for
MAX_ANCHORED = 64  # shapes holding an anchor beyond which its literals are tested on all
# What is kept of the shapes seen: how many, how long each, how many literals each holds.
MAX_KNOWN_SHAPES = 1 << 13
MAX_KNOWN_SHAPE_CHARS = 1 << 10
MAX_KNOWN_LITERALS = 8


class _Known(NamedTuple):
    """What is known of a line shape seen before: the literals it holds, and whether each
    digit-blind pattern tried on it matched it (by its regex)."""

    literals: frozenset[_Literal]
    matched: dict[re.Pattern[str], bool]


class _Prefilter(NamedTuple):
    """What a pattern's matches need: a line holding one of `found` (its best required
    literals) and one of each of `needed` (its others); they start `before` characters
    before an occurrence of one of `placed` (those that fix where a match starts best).
    `by_shape`: a line it matches has a shape it matches."""

    found: tuple[_Literal, ...]
    needed: tuple[tuple[_Literal, ...], ...]
    placed: tuple[_Literal, ...]
    before: tuple[int, int]
    by_shape: bool


@lru_cache(KEPT_PATTERNS)  # a pattern's, worked out when first scanned for and then kept
def _prefilter(pattern: str, ignore_case: bool) -> _Prefilter | None:
    """None when no required literal is known (a caseless one must be ASCII: Unicode case
    folding is more than lower-casing)."""
    from trainmedic.catalogue.regex_safety import (  # here: a native backend never asks
        matches_with_digits_zeroed,
        required_literals,
    )

    options = [found for found in required_literals(pattern, ignore_case)
               if not found.caseless or all(map(str.isascii, found.texts))]
    if not options:
        return None
    literals = [tuple(_literal(text, found.caseless) for text in found.texts)
                for found in options]
    placed = min(range(len(options)),
                 key=lambda i: options[i].before[1] - options[i].before[0])
    return _Prefilter(literals[0], tuple(literals[1:]), literals[placed], options[placed].before,
                      matches_with_digits_zeroed(pattern))


class _Shapes:
    """Distinct line shapes (lines with every digit made 0), one a line."""

    def __init__(self, shapes: str) -> None:
        self.shapes = shapes

    @cached_property
    def folded_shapes(self) -> str:
        return folded(self.shapes)

    def may_hold(self, shape: str, caseless: bool) -> bool:
        """Whether a literal of this shape may occur in the text (False: it does not)."""
        return shape in (self.folded_shapes if caseless else self.shapes)

    def holding(self, shape: str, caseless: bool) -> set[str]:
        """The line shapes holding a literal of this shape."""
        shapes, found = self.folded_shapes if caseless else self.shapes, set()
        at = shapes.find(shape)
        while at >= 0:
            start, end = self.shapes.rfind("\n", 0, at) + 1, self.shapes.find("\n", at)
            found.add(self.shapes[start:end if end >= 0 else len(self.shapes)])
            at = shapes.find(shape, at + 1)
        return found

    def shapes_with(self, anchor: str, caseless: bool) -> str:
        """The line shapes holding `anchor` (folded when `caseless`), for testing the literals
        grouped under it; all of them where it is in more than MAX_ANCHORED."""
        shapes = self.folded_shapes if caseless else self.shapes
        found: list[str] = []
        at = shapes.find(anchor)
        while at >= 0:
            if len(found) == MAX_ANCHORED:
                return shapes
            start, end = shapes.rfind("\n", 0, at) + 1, shapes.find("\n", at)
            end = end if end >= 0 else len(shapes)
            found.append(shapes[start:end])
            at = shapes.find(anchor, end)
        return "\n".join(found)


class _Chunk(_Shapes):
    """A chunk's text, its line shapes, and the lines where each literal occurs (looked up
    once, whichever patterns need them)."""

    def __init__(self, text: str, known: dict[str, _Known]) -> None:
        zeroed = text.encode("utf-8", errors="surrogatepass").translate(_ZERO_BYTES)
        super().__init__(b"\n".join(set(zeroed.split(b"\n"))).decode("utf-8",
                                                                    errors="surrogatepass"))
        self.text = text
        self.known = known  # the shapes seen in chunks before, shared with them
        self._lines: dict[_Literal, list[tuple[int, int]]] = {}
        self._variants: dict[_Literal, tuple[str, ...] | None] = {}

    def variants(self, literal: _Literal) -> tuple[str, ...] | None:
        """How `literal` is written in the text: as it is, or for a caseless one each way the
        line shapes write it; None for a caseless one with digits (shapes change those)."""
        if not literal.caseless:
            return (literal.text,)
        if literal not in self._variants:
            self._variants[literal] = None if any(map(str.isdigit, literal.text)) else \
                tuple(self._cases(literal.shape))
        return self._variants[literal]

    def _cases(self, target: str) -> set[str]:
        """How the shapes write what folds to `target` (folding keeps every position: only
        U+0130 lower-cases to two characters, and `folded` makes it one first)."""
        shapes, found = self.shapes, set()
        at = self.folded_shapes.find(target)
        while at >= 0:
            found.add(shapes[at:at + len(target)])
            at = self.folded_shapes.find(target, at + 1)
        return found

    def lines(self, literal: _Literal) -> list[tuple[int, int]]:
        """(start, end) of each line holding `literal`, in order; end is that of the text
        for a last line without a newline."""
        if literal in self._lines:
            return self._lines[literal]
        spans: list[tuple[int, int]] = []
        if self.may_hold(literal.shape, literal.caseless):
            variants = self.variants(literal)
            if variants is None:
                def next_case(at: int) -> int:
                    match = literal.cases.search(self.text, at)
                    return -1 if match is None else match.start()
                spans = self._lines_where(next_case)
            else:
                for variant in variants:
                    spans += self._lines_where(partial(self.text.find, variant))
                if len(variants) > 1:
                    spans = sorted(set(spans))
        self._lines[literal] = spans
        return spans

    def _lines_where(self, find: Callable[[int], int]) -> list[tuple[int, int]]:
        """(start, end) of each line where `find` (the next occurrence from a position, or
        -1) finds something."""
        text, spans, position = self.text, [], 0
        while (position := find(position)) >= 0:
            start, end = text.rfind("\n", 0, position) + 1, text.find("\n", position)
            spans.append((start, end if end >= 0 else len(text)))
            if end < 0:
                break
            position = end + 1
        return spans

    def lines_of(self, literals: tuple[_Literal, ...]) -> list[tuple[int, int]]:
        """The lines holding one of `literals`, in order."""
        if len(literals) == 1:
            return self.lines(literals[0])
        return sorted({span for literal in literals for span in self.lines(literal)})

    def _holds(self, literals: tuple[_Literal, ...], line: str) -> bool:
        """Whether one of `literals` occurs in `line`, a line of this chunk."""
        for literal in literals:
            variants = self.variants(literal)
            if variants is None:
                if literal.cases.search(line) is not None:
                    return True
            elif any(variant in line for variant in variants):
                return True
        return False

    def _places(self, literal: _Literal, line: str) -> Iterator[int]:
        """Where `literal` occurs in `line`, a line of this chunk, overlapping occurrences
        included."""
        variants = self.variants(literal)
        if variants is None:
            yield from (match.start() for match in literal.cases.finditer(line))
            return
        for variant in variants:
            at = line.find(variant)
            while at >= 0:
                yield at
                at = line.find(variant, at + 1)

    def _matches(self, prefilter: _Prefilter, regex: re.Pattern[str], line: str) -> bool:
        """Whether `regex` matches `line` (trying only where a match can start)."""
        if not all(self._holds(literals, line) for literals in prefilter.needed):
            return False
        low, high = prefilter.before
        if high - low >= MAX_STARTS:
            return regex.search(line) is not None
        for literal in prefilter.placed:
            for at in self._places(literal, line):
                for start in range(max(0, at - high), at - low + 1):
                    if regex.match(line, start) is not None:
                        return True
        return False

    def _shapes_match(self, prefilter: _Prefilter, regex: re.Pattern[str]) -> bool:
        """Whether `regex` matches one of the line shapes holding a literal it needs (when
        it does not, and a match in a line means one in its shape, no line matches)."""
        if not prefilter.by_shape:
            return True
        shapes = self.shapes
        for literal in prefilter.found:
            variants = self.variants(literal)
            if variants is None:
                return True
            for variant in variants if literal.caseless else (literal.shape,):
                at = shapes.find(variant)
                while at >= 0:
                    start, end = shapes.rfind("\n", 0, at) + 1, shapes.find("\n", at)
                    shape = shapes[start:end if end >= 0 else len(shapes)]
                    known = self.known.get(shape)
                    matched = None if known is None else known.matched.get(regex)
                    if matched is None:
                        matched = self._matches(prefilter, regex, shape)
                        if known is not None:
                            known.matched[regex] = matched
                    if matched:
                        return True
                    at = shapes.find(variant, start + len(shape))
        return False

    def matching_lines(self, prefilter: _Prefilter,
                       regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
        """(start, text) of each line where `regex` matches, in order."""
        if not self._shapes_match(prefilter, regex):
            return
        text, matched = self.text, dict[str, bool]()  # a line said again: whether it matched
        for start, end in self.lines_of(prefilter.found):
            line = text[start:end]
            found = matched.get(line)
            if found is None:  # most lines holding a literal do not match
                found = matched[line] = self._matches(prefilter, regex, line)
            if found:
                yield start, line


class _Pattern(NamedTuple):
    rule_id: str
    fingerprint: Fingerprint

    @property
    def prefilter(self) -> _Prefilter | None:
        return _prefilter(self.fingerprint.pattern, self.fingerprint.ignore_case)


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
    grams = {literal: sorted({gram for i in range(len(literal) - ANCHOR_LENGTH + 1)
                              if " " not in (gram := literal[i:i + ANCHOR_LENGTH])
                              and "0" not in gram and gram.lower() not in _COMMON})
             for literal in left}
    while left:
        counts: dict[str, int] = {}
        for literal in left:
            for gram in grams[literal]:
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
    prefilter: _Prefilter | None
    words: tuple[str, ...] | None  # see SIGNAL_WORDS
    regex: re.Pattern[str]

    def holds(self, chunk: _Chunk) -> bool:
        """Whether the regex matches the chunk's text: around its words, or where its
        literals are."""
        text = chunk.text
        if self.words is not None:
            words = tuple(word for word in self.words
                          if chunk.may_hold(word.translate(_ZERO_CHARS), False))
            return bool(words) and bool(signal_matches(self.regex, text, words, first_only=True))
        return (self.prefilter is None or any(chunk.may_hold(lit.shape, lit.caseless)
                                              for lit in self.prefilter.found)) and \
            self.regex.search(text) is not None


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
        self._known: dict[str, _Known] = {}
        launcher = ((LAUNCHER, Fingerprint(name, pattern, 1.0)) for name, pattern in PATTERNS)
        rules = ((rule.id, fp) for rule in catalogue.rules for fp in rule.fingerprints)
        if caseless:
            rules = ((rule_id, fp._replace(ignore_case=True)) for rule_id, fp in rules)
        self.patterns = tuple(_Pattern(rule_id, fp) for rule_id, fp in (*rules, *launcher))

    @cached_property
    def _signals(self) -> list[_Signal]:
        """Compiled when first looked for (a native backend finds them itself)."""
        return [_Signal(name, _prefilter(pattern, False), SIGNAL_WORDS.get(name),
                        re.compile(pattern, re.MULTILINE))
                for name, pattern in signal_patterns(self.catalogue).items()]

    @cached_property
    def _metric_patterns(self) -> list[_Signal]:
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
        by_literal: dict[_Literal, list[_Pattern]] = {}
        for pattern in self.patterns:
            for literal in pattern.prefilter.found if pattern.prefilter else ():
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
        return _Index([p for p in self.patterns if p.prefilter is None], by_literal, groups,
                      singles)

    def _present(self, shapes: _Shapes) -> set[_Literal]:
        """The literals some of these line shapes hold."""
        index = self._index
        present = {lit for lit in index.singles if shapes.may_hold(lit.shape, lit.caseless)}
        for anchor, caseless, literals in index.groups:
            if shapes.may_hold(anchor, caseless):
                within = shapes.shapes_with(anchor, caseless)
                present.update(lit for lit in literals if lit.shape in within)
        return present

    def _candidates(self, chunk: _Chunk) -> list[_Pattern]:
        """The patterns with a literal the chunk's line shapes hold.

        Which literals a shape holds is kept for the next chunks: the chunks of one log share
        most of their shapes, and only new ones are tested.
        """
        known_shapes, new = chunk.known, []
        present: set[_Literal] = set()
        for shape in chunk.shapes.split("\n"):
            known = known_shapes.get(shape)
            if known is None:
                new.append(shape)
            else:
                present |= known.literals
        if new:
            fresh = _Shapes("\n".join(new))
            found = self._present(fresh)
            present |= found
            if len(new) <= MAX_KNOWN_SHAPES // 2:  # else: lines alike in no way worth keeping
                if len(known_shapes) + len(new) > MAX_KNOWN_SHAPES:
                    known_shapes.clear()  # another log, perhaps: start again
                holds: dict[str, set[_Literal]] = {shape: set() for shape in new}
                for literal in found:
                    for shape in fresh.holding(literal.shape, literal.caseless):
                        holds[shape].add(literal)
                known_shapes.update(
                    (shape, _Known(frozenset(literals), {})) for shape, literals in holds.items()
                    if len(shape) <= MAX_KNOWN_SHAPE_CHARS
                    and len(literals) <= MAX_KNOWN_LITERALS)
        by_literal = self._index.by_literal
        return list({id(p): p for lit in present for p in by_literal[lit]}.values())

    def _scan(self, chunk: _Chunk) -> Iterator[tuple[int, Hit]]:
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
        return self._scan(_Chunk(text, self._known))

    def signals(self, text: str) -> frozenset[str]:
        """Which of the metric sampler's SIGNALS (and rules' metric patterns) `text` holds."""
        return self._signals_in(_Chunk(text, self._known))[0]

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
        chunk = _Chunk(text, self._known)
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

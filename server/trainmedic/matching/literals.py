"""Which lines of a text may hold a pattern's match, told by the literals every match holds
and by the text's line shapes: what lets the pure-Python matcher skip text (see
`matching.python`, which imports this when it first scans: a native backend never does).

A pattern's required literals are worked out by `catalogue.regex_safety`. A line shape is a
line with every digit made 0: metric lines differ mostly in their numbers, so a megabyte of
them has a few dozen kilobytes of shapes, and the substring tests that rule most patterns out
run over those.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Callable, Iterator
from functools import cached_property, lru_cache, partial
from typing import NamedTuple

from trainmedic.catalogue.regex_safety import matches_with_digits_zeroed, required_literals
from trainmedic.catalogue.rules import KEPT_PATTERNS
from trainmedic.matching.caseless import folded
from trainmedic.metrics.samples import signal_matches

_ZERO_BYTES = bytes.maketrans(b"123456789", b"000000000")
_ZERO_CHARS = str.maketrans("123456789", "000000000")


class Literal(NamedTuple):
    """A string every match of some pattern may contain; in any case when `caseless`;
    `shape`: how it appears in line shapes (digits made 0, folded when caseless)."""

    text: str
    caseless: bool
    shape: str

    @property
    def cases(self) -> re.Pattern[str]:
        """Its occurrences in any case, overlapping ones too, each as it is written."""
        return _cases(self.text)


def _literal(text: str, caseless: bool) -> Literal:
    shape = text.translate(_ZERO_CHARS)
    return Literal(text, caseless, folded(shape) if caseless else shape)


@lru_cache(KEPT_PATTERNS)
def _cases(text: str) -> re.Pattern[str]:
    return re.compile(f"(?=({re.escape(text)}))", re.IGNORECASE)


MAX_STARTS = 8  # a pattern that can start more places before its literal is searched for
MAX_ANCHORED = 64  # shapes holding an anchor beyond which its literals are tested on all
# What is kept of the shapes seen: how many, how long each, how many literals each holds.
MAX_KNOWN_SHAPES = 1 << 13
MAX_KNOWN_SHAPE_CHARS = 1 << 10
MAX_KNOWN_LITERALS = 8


class Known(NamedTuple):
    """What is known of a line shape seen before: the literals it holds, and whether each
    digit-blind pattern tried on it matched it (by its regex)."""

    literals: frozenset[Literal]
    matched: dict[re.Pattern[str], bool]


class Prefilter(NamedTuple):
    """What a pattern's matches need: a line holding one of `found` (its best required
    literals) and one of each of `needed` (its others); they start `before` characters
    before an occurrence of one of `placed` (those that fix where a match starts best).
    `by_shape`: a line it matches has a shape it matches."""

    found: tuple[Literal, ...]
    needed: tuple[tuple[Literal, ...], ...]
    placed: tuple[Literal, ...]
    before: tuple[int, int]
    by_shape: bool


@lru_cache(KEPT_PATTERNS)  # a pattern's, worked out when first scanned for and then kept
def prefilter(pattern: str, ignore_case: bool) -> Prefilter | None:
    """None when no required literal is known (a caseless one must be ASCII: Unicode case
    folding is more than lower-casing)."""
    options = [found for found in required_literals(pattern, ignore_case)
               if not found.caseless or all(map(str.isascii, found.texts))]
    if not options:
        return None
    literals = [tuple(_literal(text, found.caseless) for text in found.texts)
                for found in options]
    placed = min(range(len(options)),
                 key=lambda i: options[i].before[1] - options[i].before[0])
    return Prefilter(literals[0], tuple(literals[1:]), literals[placed], options[placed].before,
                      matches_with_digits_zeroed(pattern))


class Shapes:
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


class TextChunk(Shapes):
    """A chunk's text, its line shapes, and the lines where each literal occurs (looked up
    once, whichever patterns need them)."""

    def __init__(self, text: str, known: dict[str, Known]) -> None:
        zeroed = text.encode("utf-8", errors="surrogatepass").translate(_ZERO_BYTES)
        super().__init__(b"\n".join(set(zeroed.split(b"\n"))).decode("utf-8",
                                                                    errors="surrogatepass"))
        self.text = text
        self.known = known  # the shapes seen in chunks before, shared with them
        self._lines: dict[Literal, list[tuple[int, int]]] = {}
        self._variants: dict[Literal, tuple[str, ...] | None] = {}

    def variants(self, literal: Literal) -> tuple[str, ...] | None:
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

    def lines(self, literal: Literal) -> list[tuple[int, int]]:
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

    def lines_of(self, literals: tuple[Literal, ...]) -> list[tuple[int, int]]:
        """The lines holding one of `literals`, in order."""
        if len(literals) == 1:
            return self.lines(literals[0])
        return sorted({span for literal in literals for span in self.lines(literal)})

    def _holds(self, literals: tuple[Literal, ...], line: str) -> bool:
        """Whether one of `literals` occurs in `line`, a line of this chunk."""
        for literal in literals:
            variants = self.variants(literal)
            if variants is None:
                if literal.cases.search(line) is not None:
                    return True
            elif any(variant in line for variant in variants):
                return True
        return False

    def _places(self, literal: Literal, line: str) -> Iterator[int]:
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

    def _matches(self, prefilter: Prefilter, regex: re.Pattern[str], line: str) -> bool:
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

    def _shapes_match(self, prefilter: Prefilter, regex: re.Pattern[str]) -> bool:
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

    def matching_lines(self, prefilter: Prefilter,
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


ANCHOR_LENGTH = 4
# Four-letter runs common in any English text make poor anchors: they are nearly always present.
_COMMON = frozenset({"tion", "ment", "ther", "that", "with", "have", "this", "from", "ould",
                     "ally", "ence", "ance", "able", "ight", "ions", "ated", "ting"})


def anchors(shapes: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
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


class Signal(NamedTuple):
    name: str
    prefilter: Prefilter | None
    words: tuple[str, ...] | None  # see SIGNAL_WORDS
    regex: re.Pattern[str]

    def holds(self, chunk: TextChunk) -> bool:
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

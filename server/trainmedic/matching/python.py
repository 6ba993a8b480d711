"""Fingerprints → hits: the pure-Python matcher backend.

A pattern runs only on text that contains one of its required literals, and the literals are
tested through shared anchors, so a quiet chunk costs a few dozen substring searches.
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
from trainmedic.logs.reader import Chunk, byte_offsets
from trainmedic.logs.tracebacks import MARKERS
from trainmedic.metrics.samples import SIGNAL_WORDS, SIGNALS, metric_signal, signal_matches
from trainmedic.model import Hit


class Found(NamedTuple):
    """What one pass over a chunk found; offsets are of its characters."""

    hits: list[tuple[int, Hit]]  # (offset, hit), in no particular order
    signals: frozenset[str]  # the metric sampler's SIGNALS present
    marks: list[int]  # line starts of traceback headers and chain markers, in order
    metric_lines: list[int]  # line starts where a rule's metric pattern matches, in order
    # where each of the sampler's SCALE_WORDS starts, in order (None: not looked for)
    scale_words: tuple[list[int], ...] | None = None


@dataclass(frozen=True)
class _Pattern:
    rule_id: str
    fingerprint: Fingerprint

    @cached_property
    def literals(self) -> tuple[str, ...] | None:
        return required_literals(self.fingerprint.pattern, self.fingerprint.ignore_case)


class _Index(NamedTuple):
    """The patterns by their required literals, grouped under shared anchors."""

    always: list[_Pattern]  # no literal: they run on every text
    by_literal: dict[str, list[_Pattern]]
    groups: list[tuple[str, list[str]]]
    singles: list[str]


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


def signal_patterns(catalogue: Catalogue) -> dict[str, str]:
    """Every signal a matcher reports, by name: the metric sampler's SIGNALS, and each rule's
    metric pattern (so the sampler runs one only on chunks where it can match)."""
    return {**SIGNALS, **{metric_signal(pattern): pattern for rule in catalogue.rules
                          for pattern in rule.metric_patterns}}


def _holds(text: str, literals: tuple[str, ...] | None, words: tuple[str, ...] | None,
           regex: re.Pattern[str]) -> bool:
    """Whether a signal's regex matches `text`: around its words, or where its literals are."""
    if words is not None:
        return bool(signal_matches(regex, text, words, first_only=True))
    return (literals is None or any(lit in text for lit in literals)) and \
        regex.search(text) is not None


class Matcher:
    """Every fingerprint of a catalogue, scanned over a chunk of text (pure-Python backend).

    A pattern runs only on chunks that contain one of its required literals; literals are
    tested through shared anchors, so most chunks of a healthy log run almost no regex.
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

    @cached_property
    def _signals(self) -> list[tuple[str, tuple[str, ...] | None, tuple[str, ...] | None,
                                     re.Pattern[str]]]:
        """Compiled when first looked for (a native backend finds them itself)."""
        return [(name, required_literals(pattern, False), SIGNAL_WORDS.get(name),
                 re.compile(pattern, re.MULTILINE))
                for name, pattern in signal_patterns(self.catalogue).items()]

    @cached_property
    def _metric_patterns(self) -> list[tuple[str, tuple[str, ...] | None, re.Pattern[str]]]:
        return [(name, literals, regex) for name, literals, _, regex in self._signals
                if name not in SIGNALS]

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
        by_literal: dict[str, list[_Pattern]] = {}
        for pattern in self.patterns:
            for literal in pattern.literals or ():
                by_literal.setdefault(literal, []).append(pattern)
        groups, singles = _anchors(list(by_literal))
        return _Index([p for p in self.patterns if p.literals is None], by_literal, groups,
                      singles)

    def _candidates(self, text: str) -> list[_Pattern]:
        index = self._index
        present = [lit for lit in index.singles if lit in text]
        for anchor, literals in index.groups:
            if anchor in text:
                present.extend(lit for lit in literals if lit in text)
        chosen = {id(p): p for lit in present for p in index.by_literal[lit]}
        return [*index.always, *chosen.values()]

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        """(offset, hit) for every match in `text`, in no particular order."""
        for pattern in self._candidates(text):
            yield from self._confirm(pattern, text)

    def signals(self, text: str) -> frozenset[str]:
        """Which of the metric sampler's SIGNALS (and rules' metric patterns) `text` holds."""
        return frozenset(name for name, literals, words, regex in self._signals
                         if _holds(text, literals, words, regex))

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
        lines: dict[int, None] = {}  # where a rule's metric pattern matches, by line start
        metric_signals = set()
        for name, literals, regex in self._metric_patterns:
            if literals is not None and not any(lit in text for lit in literals):
                continue
            for match in regex.finditer(text):
                metric_signals.add(name)
                lines[text.rfind("\n", 0, match.start()) + 1] = None
        signals = frozenset(name for name, literals, words, regex in self._signals
                            if name in SIGNALS and _holds(text, literals, words, regex))
        return Found(list(self.scan(text)), signals | metric_signals, self.marks(text),
                     sorted(lines))

    def find_chunk(self, chunk: Chunk) -> Found:
        """`find` over a chunk's text, at byte offsets of the chunk."""
        text = chunk.text
        found = self.find(text)
        if len(text) == len(chunk.data):
            return found
        at = byte_offsets(text, [*(o for o, _ in found.hits), *found.marks, *found.metric_lines])
        return Found([(at[o], hit) for o, hit in found.hits], found.signals,
                     [at[o] for o in found.marks], [at[o] for o in found.metric_lines])

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

"""What Hyperscan runs for a pattern: the part of it that finds the same lines, cheaper.

Hyperscan runs each fingerprint in prefilter mode (see `matching.hyperscan`) and reports the
candidate lines, which `re` then confirms with the whole pattern; so what it runs may match
more lines than the pattern, never fewer. After a long gap only what follows the gap is run
(`prefilter`), and an end that varies in length is left out (`without_varying_end`). Worked
out only when a database is compiled (a catalogue seen for the first time): a start that loads
a compiled database from the cache never imports this.
"""

from __future__ import annotations

import re
from typing import NamedTuple

LONG_GAP = 100  # characters: a fingerprint's gap this long may be left out of what Hyperscan runs
LONG_LITERAL = 8  # characters: the literal the part after the gap must hold, to find it rarely
_GAP = re.compile(r"\.(?:[*+]|\{\d*,(?P<most>\d*)\})\??")  # `.*`, `.{0,400}?`, ...
_QUANTIFIER = re.compile(r"[?*+]|\{\d*(?:,\d*)?\}")
_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
_BACKREFERENCE = re.compile(r"\\\d|\(\?P=")


def prefilter(pattern: str) -> str:
    """What Hyperscan runs for a fingerprint: the part after a long gap (`_after_long_gap`),
    without the end that varies in length (`without_varying_end`)."""
    return without_varying_end(_after_long_gap(pattern))


def _after_long_gap(pattern: str) -> str:
    """A fingerprint `X.{0,N}Y` whose gap is long: `Y` alone, if it holds a literal of
    LONG_LITERAL characters outside its groups.

    Every match of the whole ends where a match of `Y` ends, on the same line, and `re`
    confirms each candidate line with the whole: the hits are the same, and Hyperscan no longer
    follows every `X` for N characters. Megatron-LM's step line holds the `X` of the overflow
    fingerprint ("loss scale: ... | ... skipped iterations: 1"), and following it cost as much
    as scanning for most of the rest of the catalogue. A pattern with an alternation at its top
    level, or whose `Y` refers back to `X`, is run whole.
    """
    if not any(_long(gap) for gap in _GAP.finditer(pattern)):  # most: not read char by char
        return pattern
    depth, cut, position, in_class = 0, 0, 0, False
    run = longest = 0  # the literal characters in a row after the last long gap, the most so far
    while position < len(pattern):
        char, step, literal = pattern[position], 1, False
        if char == "\\":
            step, escaped = 2, pattern[position + 1:position + 2]
            literal = not in_class and depth == 0 and not escaped.isalnum()  # `\.`, not `\d`
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            step += pattern.startswith("^", position + 1)
            step += pattern.startswith("]", position + step)  # a `]` first in a class is in it
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0 and char == "|":
            return pattern
        elif depth == 0 and (gap := _GAP.match(pattern, position)) is not None:
            step = gap.end() - position
            if _long(gap):
                cut, run, longest = gap.end(), 0, 0
        elif (quantifier := _QUANTIFIER.match(pattern, position)) is not None:
            step = quantifier.end() - position
            if char != "+":
                run = max(run - 1, 0)  # the character before is optional
        else:
            literal = depth == 0 and char not in ".^$"
        if literal:
            run += 1
        else:
            longest, run = max(longest, run), 0
        position += step
    longest = max(longest, run)
    tail = pattern[cut:]
    if (not cut or longest < LONG_LITERAL or tail[0] in "*+?{"
            or _BACKREFERENCE.search(tail)):
        return pattern
    flags = _GLOBAL_FLAGS.match(pattern)
    return (flags.group() if flags else "") + tail


def _long(gap: re.Match[str]) -> bool:
    return not gap["most"] or int(gap["most"]) >= LONG_GAP  # `*`, `+`, `{m,}`, or long


# A pattern's pieces: an escape, a class, a group's opening, its close, a quantifier, or one
# character.
_TOKEN = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\((?:\?(?:P<\w+>|<[=!]|[:=!]|[aiLmsux-]*:?))?"
                    rf"|\)|(?:{_QUANTIFIER.pattern})[?+]?|.", re.DOTALL)
_QUANTIFIERS = "?*+{"
_FIXED_COUNT = re.compile(r"\{\d+\}[?+]?")
_ZERO_WIDTH_GROUP = re.compile(r"\(\?(?:<?[=!]|[aiLmsux-]+$)")  # a lookaround, or flags alone
_ZERO_WIDTH = frozenset({"^", "$", "\\b", "\\B", "\\A", "\\Z"})
_MAY_VARY_AT_END = re.compile(r"(?:[?*+})$]|\\[bBAZ])$")


class _Piece(NamedTuple):
    """One token of a pattern, or a group with the pieces inside it; with its quantifier."""

    text: str  # the token, or the group's opening
    inside: list[_Piece] | None  # None: not a group
    quantifier: str = ""

    def __str__(self) -> str:
        inside = "" if self.inside is None else "".join(map(str, self.inside)) + ")"
        return self.text + inside + self.quantifier

    @property
    def matches_nothing(self) -> bool:
        return not self.quantifier and (self.text in _ZERO_WIDTH or (
            self.inside is not None and _ZERO_WIDTH_GROUP.match(self.text) is not None))

    @property
    def repeats(self) -> bool:
        return bool(self.quantifier) and not _FIXED_COUNT.fullmatch(self.quantifier)

    @property
    def literal(self) -> bool:
        """One character standing for itself, once (`a`, `\\.`; not `\\d`, `.`, a class)."""
        return self.inside is None and not self.quantifier and self.text not in (".", "^", "$") \
            and self.text[0] != "[" and not (self.text[0] == "\\" and self.text[1:].isalnum())


def _pieces(pattern: str) -> list[_Piece]:
    """The pattern's top level as pieces; joined again, they are the pattern."""
    outer: list[_Piece] = []
    levels = [outer]
    for token in _TOKEN.finditer(pattern):
        text, pieces = token.group(), levels[-1]
        if text[0] in _QUANTIFIERS and pieces and pieces[-1].text != "|":
            pieces[-1] = pieces[-1]._replace(quantifier=pieces[-1].quantifier + text)
        elif text[0] == "(":
            inside: list[_Piece] = []
            pieces.append(_Piece(text, inside))
            levels.append(inside)
        elif text == ")" and len(levels) > 1:
            levels.pop()
        else:
            pieces.append(_Piece(text, None))
    return outer


def _cut_end(pieces: list[_Piece]) -> tuple[list[_Piece], bool]:
    """The pieces without those at the end that repeat or match nothing (looking into a last
    group that neither alternates nor repeats), and whether a repeating one went."""
    end, cut = len(pieces), False
    while end and (pieces[end - 1].repeats or pieces[end - 1].matches_nothing):
        cut |= pieces[end - 1].repeats
        end -= 1
    last = pieces[end - 1] if end else None  # not a lookaround: those went with the rest
    if last is not None and last.inside is not None and not last.quantifier \
            and all(piece.text != "|" for piece in last.inside):
        inside, cut_inside = _cut_end(last.inside)
        if cut_inside and inside:
            return [*pieces[:end - 1], last._replace(inside=inside)], True
        if cut_inside:  # all of the group went: what is before it may end so too
            return _cut_end(pieces[:end - 1])[0], True
    return pieces[:end], cut


def without_varying_end(pattern: str) -> str:
    """`pattern` without what ends it when that can end in several places (a number, a name:
    `\\d{1,20}`, also at the end of a last group) and what follows that matching no text
    (`\\b`, a lookahead), if what is left holds a literal of LONG_LITERAL characters outside
    its groups and its top level does not alternate.

    Hyperscan reports every place a match can end: `reducing loss scale to (?P<scale>[0-9.]+)`
    ends thirteen times on "... reducing loss scale to 0.00048828125", and each report is a
    call into Python; the part before the number ends once. Every match of the whole starts
    with a match of the part, which ends on its line, so that line is still a candidate, and
    `re` confirms it with the whole.
    """
    if not _MAY_VARY_AT_END.search(pattern):
        return pattern
    pieces = _pieces(pattern)
    if any(piece.text == "|" for piece in pieces):
        return pattern
    kept, cut = _cut_end(pieces)
    return "".join(map(str, kept)) if cut and _holds_long_literal(kept) else pattern


def _holds_long_literal(pieces: list[_Piece]) -> bool:
    """Whether every match holds LONG_LITERAL literal characters in a row: at this level, or
    in each branch of a group that is always there."""
    run = 0
    for piece in pieces:
        if piece.literal:
            run += 1
            if run >= LONG_LITERAL:
                return True
            continue
        run = 0
        if piece.inside is not None and not piece.quantifier and not piece.matches_nothing:
            branches: list[list[_Piece]] = [[]]
            for inner in piece.inside:
                if inner.text == "|":
                    branches.append([])
                else:
                    branches[-1].append(inner)
            if all(map(_holds_long_literal, branches)):
                return True
    return False

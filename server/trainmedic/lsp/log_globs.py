"""Which documents are logs: the `logGlobs` setting, VS Code's glob syntax, matched on paths.

Shared by the log diagnostics, which take those documents, and the script checks, which leave
them alone. A glob is matched without regular-expression backtracking, so a setting such as
nine `**/` in a row costs time linear in the path per star, never exponential: `**` is
matched over whole path segments and `*` within one, each by the greedy two-pointer wildcard
walk (back to the last star only).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TypeVar

MAX_ALTERNATIVES = 256  # `{a,b}` expansions of one glob; more is not a list of log names

T = TypeVar("T")
Piece = Callable[[str], bool] | None  # one element's test; None for a star


class GlobError(ValueError):
    """A glob that cannot be matched; `str()` says why."""


def _braces(pattern: str) -> list[str]:
    """`pattern` with its `{a,b}` groups expanded (nested ones too)."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth, commas = 0, []
    for end in range(start, len(pattern)):
        if pattern[end] == "{":
            depth += 1
        elif pattern[end] == "}":
            depth -= 1
            if depth == 0:
                break
        elif pattern[end] == "," and depth == 1:
            commas.append(end)
    else:
        return [pattern]  # an unclosed `{` is a character, as before
    cuts = [start, *commas, end]
    rests = _braces(pattern[end + 1 :])
    out: list[str] = []
    for left, right in itertools.pairwise(cuts):
        for middle in _braces(pattern[left + 1 : right]):
            out.extend(pattern[:start] + middle + rest for rest in rests)
            if len(out) > MAX_ALTERNATIVES:
                raise GlobError(f"more than {MAX_ALTERNATIVES} {{...}} alternatives")
    return out


def _any_character(char: str) -> bool:
    return True


def _in_class(one: re.Pattern[str]) -> Callable[[str], bool]:
    def test(char: str) -> bool:
        return one.fullmatch(char) is not None

    return test


def _segment(segment: str) -> list[Piece]:
    """One path segment's glob as pieces: a star, or a test of one character."""
    pieces: list[Piece] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        end = segment.find("]", i + 2) if char == "[" else -1
        if char == "*":
            if not pieces or pieces[-1] is not None:
                pieces.append(None)
        elif char == "?":
            pieces.append(_any_character)
        elif end > 0:
            body = segment[i + 1 : end].replace("\\", "\\\\")
            try:
                one = re.compile("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            except re.error as error:
                raise GlobError(f"{segment[i : end + 1]}: {error}") from None
            pieces.append(_in_class(one))
            i = end
        else:
            pieces.append(char.__eq__)
        i += 1
    return pieces


def _wildcard(pieces: Sequence[Callable[[T], bool] | None], items: Sequence[T]) -> bool:
    """Whether `items` match `pieces` (None: any run of items), backtracking only to the last
    star: O(len(pieces) * len(items))."""
    p = i = 0
    star, resume = -1, 0
    while i < len(items):
        if p < len(pieces) and pieces[p] is not None and pieces[p](items[i]):  # type: ignore[misc]
            p, i = p + 1, i + 1
        elif p < len(pieces) and pieces[p] is None:
            star, resume = p, i
            p += 1
        elif star >= 0:
            resume += 1
            p, i = star + 1, resume
        else:
            return False
    return all(piece is None for piece in pieces[p:])


Matcher = Callable[[str], bool]


def _path_pieces(pattern: str) -> list[Callable[[str], bool] | None]:
    """One brace-free glob as pieces over path segments: None for `**`, else a segment test.
    A segment that starts with `**` (`**.log`) is any folders, then a `*` segment."""
    pieces: list[Callable[[str], bool] | None] = []
    for segment in pattern.split("/"):
        glob = segment
        if segment.startswith("**"):
            if not pieces or pieces[-1] is not None:
                pieces.append(None)
            if not segment.lstrip("*"):
                continue
            glob = "*" + segment.lstrip("*")
        pieces.append(functools.partial(_wildcard, _segment(glob)))
    return pieces


@lru_cache(maxsize=64)
def glob_matcher(pattern: str) -> Matcher:
    """A VS Code glob (`**`, `*`, `?`, `{a,b}`, `[...]`) as a test of a `/`-separated path;
    GlobError when it cannot be one (`[z-a]`, thousands of alternatives)."""
    alternatives = [_path_pieces(p) for p in _braces(pattern.replace("\\", "/"))]
    return lambda path: any(_wildcard(a, path.split("/")) for a in alternatives)


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable glob, or None when it is."""
    try:
        glob_matcher(pattern)
    except GlobError as error:
        return str(error)
    return None


def is_log(path: str, globs: Iterable[str], roots: Iterable[str]) -> bool:
    """Whether `path` matches a glob, taken from a workspace folder or absolute (an invalid
    glob matches nothing; the settings report it)."""
    path = path.replace("\\", "/")
    candidates = [path]
    for root in roots:
        try:
            candidates.append(str(PurePosixPath(path).relative_to(root.replace("\\", "/"))))
        except ValueError:
            continue
    matchers = [m for glob in globs if glob_problem(glob) is None
                for m in (glob_matcher(glob),)]
    return any(match(c) for match in matchers for c in candidates)

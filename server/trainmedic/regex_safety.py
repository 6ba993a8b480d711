"""Refuse fingerprint patterns whose matching time can explode on a hostile line.

Python's `re` backtracks, so the catalogue keeps to a subset where it cannot go exponential:
no backreferences, no unbounded repetition nested inside another unbounded repetition.
"""

from __future__ import annotations

import importlib
from typing import Any


def _module(modern: str, legacy: str) -> Any:
    """The regex parser's internals: `re._parser` since 3.11, `sre_parse` before."""
    try:
        return importlib.import_module(modern)
    except ImportError:  # Python 3.10
        return importlib.import_module(legacy)


_c = _module("re._constants", "sre_constants")
_p = _module("re._parser", "sre_parse")

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_UNBOUNDED = 1 << 16


def _walk(items: Any) -> str | None:
    for op, arg in items:
        if op in (_c.GROUPREF, getattr(_c, "GROUPREF_EXISTS", None)):
            return "backreferences are not allowed (they make matching super-linear)"
        if op in _REPEATS:
            _, high, sub = arg
            unbounded = high >= _UNBOUNDED or high == _c.MAXREPEAT
            if unbounded and _is_unbounded_repeat(sub):
                return ("nested unbounded repetition such as (a+)+ can backtrack "
                        "exponentially; rewrite it without the outer repeat")
            problem = _walk(sub)
            if problem:
                return problem
        elif op is _c.SUBPATTERN:
            problem = _walk(arg[-1])
            if problem:
                return problem
        elif op is _c.BRANCH:
            for branch in arg[1]:
                problem = _walk(branch)
                if problem:
                    return problem
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            problem = _walk(arg[1])
            if problem:
                return problem
    return None


def _is_unbounded_repeat(items: Any) -> bool:
    """True when `items` is, after unwrapping groups, one unbounded repeat."""
    items = list(items)
    while len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        items = list(items[0][1][-1])
    if len(items) != 1 or items[0][0] not in _REPEATS:
        return False
    high = items[0][1][1]
    return bool(high >= _UNBOUNDED or high == _c.MAXREPEAT)


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` is refused, or None when it is in the safe subset."""
    try:
        parsed = _p.parse(pattern)
    except Exception as error:  # re.error and friends
        return f"invalid regex: {error}"
    return _walk(parsed)


def _longest_literal(items: Any) -> str:
    best, run = "", []
    for op, arg in list(items) + [(None, None)]:
        if op is _c.LITERAL:
            run.append(chr(arg))
            continue
        if op is _c.SUBPATTERN and arg[1] == 0 and arg[2] == 0 and \
                all(o is _c.LITERAL for o, _ in arg[-1]):
            run.extend(chr(a) for _, a in arg[-1])
            continue
        if op is _c.AT:
            continue
        text = "".join(run)
        best = text if len(text) > len(best) else best
        run = []
        if op is _c.SUBPATTERN and arg[1] == 0 and arg[2] == 0:
            inner = _longest_literal(arg[-1])
            best = inner if len(inner) > len(best) else best
    return best


def required_literals(pattern: str, ignore_case: bool = False) -> tuple[str, ...] | None:
    """Literals one of which every match contains, for a cheap `in` prefilter; None if none.

    A plain sequence gives its longest literal; a top-level alternation gives one per branch.
    """
    if ignore_case:
        return None
    try:
        parsed = list(_p.parse(pattern))
    except Exception:
        return None
    while len(parsed) == 1 and parsed[0][0] is _c.SUBPATTERN and parsed[0][1][1:3] == (0, 0):
        parsed = list(parsed[0][1][-1])
    if len(parsed) == 1 and parsed[0][0] is _c.BRANCH:
        branches = [_longest_literal(branch) for branch in parsed[0][1][1]]
        return tuple(branches) if all(len(b) >= 3 for b in branches) else None
    best = _longest_literal(parsed)
    return (best,) if len(best) >= 3 else None

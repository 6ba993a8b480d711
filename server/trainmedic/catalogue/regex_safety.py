"""Refuse fingerprint patterns whose matching time could grow faster than the text.

Python's `re` backtracks, so every fingerprint, bundled or user-written, keeps to a subset in
which the work per starting position is bounded by the pattern alone, making a scan linear in
the length of the text: no backreferences, no unbounded repetition (`*`, `+`, `{n,}`: write
`{0,200}`), no repetition of a body that itself repeats or alternates unless the body begins
with a literal character, and a leading repetition of at most LEADING_REPEAT_MAX.
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
LEADING_REPEAT_MAX = 256


def _repeats_or_branches(items: Any) -> bool:
    for op, arg in items:
        if (op in _REPEATS and arg[1] > 1) or op is _c.BRANCH:
            return True
        if op is _c.SUBPATTERN and _repeats_or_branches(arg[-1]):
            return True
    return False


def _starts_with_literal(items: Any) -> bool:
    items = list(items)
    while items and items[0][0] is _c.SUBPATTERN:
        items = list(items[0][1][-1])
    return bool(items) and items[0][0] is _c.LITERAL


def _walk(items: Any) -> str | None:
    for op, arg in items:
        if op in (_c.GROUPREF, getattr(_c, "GROUPREF_EXISTS", None)):
            return "backreferences are not allowed (they make matching super-linear)"
        if op in _REPEATS:
            _, high, sub = arg
            if high >= _UNBOUNDED or high == _c.MAXREPEAT:
                return ("unbounded repetition (*, +, {n,}) can make matching super-linear; "
                        "bound it, e.g. {0,200}")
            if high > 1 and _repeats_or_branches(sub) and not _starts_with_literal(sub):
                return ("a repeated group that itself repeats or alternates can backtrack "
                        "exponentially; start the group with a literal character or flatten it")
            problem = _walk(sub)
        elif op is _c.SUBPATTERN:
            problem = _walk(arg[-1])
        elif op is _c.BRANCH:
            problem = next((p for p in map(_walk, arg[1]) if p), None)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            problem = _walk(arg[1])
        else:
            problem = None
        if problem:
            return problem
    return None


def _leading_repeat(items: Any) -> int:
    """The maximum count of a repetition the pattern starts with (0 when it starts otherwise).

    A pattern anchored at a line start tries once per line, so its leading repeat is harmless.
    """
    for op, arg in items:
        if op is _c.AT:
            return 0
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            continue
        if op is _c.SUBPATTERN:
            return _leading_repeat(arg[-1])
        return int(arg[1]) if op in _REPEATS else 0
    return 0


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` is refused, or None when it is in the safe subset."""
    try:
        parsed = _p.parse(pattern)
    except Exception as error:  # re.error and friends
        return f"invalid regex: {error}"
    problem = _walk(parsed)
    if problem is None and _leading_repeat(parsed) > LEADING_REPEAT_MAX:
        problem = (f"a pattern that starts with a repetition may repeat at most "
                   f"{LEADING_REPEAT_MAX} times; start it with a literal instead")
    return problem


def _longest_literal(items: Any) -> str:
    best, run = "", []
    for op, arg in [*items, (None, None)]:
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
    parsed = [node for node in parsed if node[0] is not _c.AT]  # anchors match no text
    while len(parsed) == 1 and parsed[0][0] is _c.SUBPATTERN and parsed[0][1][1:3] == (0, 0):
        parsed = [node for node in parsed[0][1][-1] if node[0] is not _c.AT]
    if len(parsed) == 1 and parsed[0][0] is _c.BRANCH:
        branches = [_longest_literal(branch) for branch in parsed[0][1][1]]
        return tuple(branches) if all(len(b) >= 3 for b in branches) else None
    best = _longest_literal(parsed)
    return (best,) if len(best) >= 3 else None

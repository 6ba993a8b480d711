r"""Refuse fingerprint patterns whose matching time could grow faster than the text.

Python's `re` backtracks, so every fingerprint, bundled or user-written, keeps to a subset in
which the work per starting position is bounded by a small multiple of the pattern's size,
making a scan linear in the length of the text:
- no backreferences, no unbounded repetition (`*`, `+`, `{n,}`: write `{0,200}`);
- repetition counts of at most MAX_COUNT, multiplied along nested repetitions (Hyperscan,
  the native backend, refuses larger ones);
- a repeated body that varies in length or alternates starts with a character that the rest
  of the body cannot match, so each repetition begins at one place only, and matches a text
  in one way only (`(?:\.\d{1,6}){0,4}`, not `(a|aa){1,200}` or `(?:xa{0,9}a{0,9}){0,50}`);
- next to each other, repetitions that can match the same characters multiply the ways a
  line splits between them, tried at every start: that product, divided by how far apart two
  starts must be (the period of the literal the pattern begins with), stays within
  MAX_SPLITS (`\d{1,6}[-,\d]{0,300}`, `Tried to allocate .{0,1500}?\d{1,9}`, not
  `a{0,100}a{0,100}`). Each split costs SLOW_TAIL times more when what follows the last
  repetition is not a literal character, unless the pattern is anchored at a line start;
- a leading repetition of at most LEADING_REPEAT_MAX.

The same reading of a pattern tells the pure-Python matcher what lets it skip text: the
literals every match contains and how far before them a match starts (`required_literals`),
and whether a match survives every digit made 0 (`matches_with_digits_zeroed`).

Annotations are evaluated, as in `model`, for the records' sake.
"""

import functools
import importlib
from typing import Any, NamedTuple


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
MAX_COUNT = 4000
MAX_SPLITS = 1 << 13  # about a tenth of a second on a 10,000-character line
# After each split, `re` tries what follows the repetitions. A literal it checks at once (1-2 ns
# a split on 10,000 characters of `a`, measured); a class, `\w` or `\b` it tries in full (9 to 30
# ns). Charging those splits 4 times keeps the worst admitted pattern near half a second on
# such a line. A pattern anchored at a line start is tried once a line, not at each character:
# it keeps the plain count.
SLOW_TAIL = 4

# Characters as the analysis sees them: the ASCII codes, and one code standing for all others.
# Letters stand for both their cases, so patterns compiled case-insensitively are covered.
_OTHER = 128
_ALL = frozenset(range(_OTHER + 1))
_CATEGORIES = {
    "CATEGORY_DIGIT": frozenset(range(48, 58)) | {_OTHER},
    "CATEGORY_SPACE": frozenset(b" \t\n\r\f\v") | {_OTHER},
    "CATEGORY_WORD": frozenset(b"_0123456789abcdefghijklmnopqrstuvwxyz"
                               b"ABCDEFGHIJKLMNOPQRSTUVWXYZ") | {_OTHER},
}


def _cased(code: int) -> frozenset[int]:
    if code >= _OTHER:
        return frozenset({_OTHER})
    return frozenset({code, ord(chr(code).swapcase())})


def _category(name: str) -> frozenset[int]:
    if name.startswith("CATEGORY_NOT_"):
        return (_ALL - _CATEGORIES.get("CATEGORY_" + name[13:], frozenset())) | {_OTHER}
    return _CATEGORIES.get(name, _ALL)


def _in_set(items: Any) -> frozenset[int]:
    found: set[int] = set()
    negate = False
    for op, arg in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            found |= _cased(arg)
        elif op is _c.RANGE:
            low, high = arg
            for code in range(low, min(high, _OTHER - 1) + 1):
                found |= _cased(code)
            if high >= _OTHER:
                found.add(_OTHER)
        elif op is _c.CATEGORY:
            found |= _category(str(arg))
        else:
            found |= _ALL
    return (_ALL - found) | {_OTHER} if negate else frozenset(found)


def _chars(items: Any) -> frozenset[int]:
    """Every character some item of `items` can match."""
    found: frozenset[int] = frozenset()
    for op, arg in items:
        if op is _c.LITERAL:
            found |= _cased(arg)
        elif op is _c.NOT_LITERAL or op is _c.ANY:
            found |= _ALL
        elif op is _c.IN:
            found |= _in_set(arg)
        elif op in _REPEATS:
            found |= _chars(arg[2])
        elif op is _c.SUBPATTERN:
            found |= _chars(arg[-1])
        elif op is _c.BRANCH:
            for branch in arg[1]:
                found |= _chars(branch)
        elif op is _c.CATEGORY:
            found |= _category(str(arg))
        elif op not in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            found |= _ALL  # anything else: assume the worst
    return found


def _width(items: Any) -> tuple[int, int]:
    low, high = _p.SubPattern(_p.State(), list(items)).getwidth()
    return int(low), int(high)


def _first(items: Any) -> frozenset[int]:
    """The characters a match of `items` can begin with."""
    found: frozenset[int] = frozenset()
    for item in items:
        op, arg = item
        if op in _REPEATS:
            found |= _first(arg[2])
        elif op is _c.SUBPATTERN:
            found |= _first(arg[-1])
        elif op is _c.BRANCH:
            for branch in arg[1]:
                found |= _first(branch)
        else:
            found |= _chars([item])
        if _width([item])[0] > 0:
            break
    return found


def _splits(items: Any, slow_tail: int = 1) -> tuple[int, bool]:
    """The most ways a line can split between adjacent repetitions of `items` that can match
    the same characters (1 when none can), looking into groups as well, each counted
    `slow_tail` times when no literal character follows the last repetition; and whether any
    can (the items can then match one text in more than one way).

    A literal between such repetitions keeps them adjacent (the first can match it too), but
    only the places where the whole literal matches count: a literal of period p leaves one
    place in p.
    """
    worst, ways, open_chars, ambiguous = 1, 1, frozenset[int](), False
    run = ""  # the literal read since the last repetition of the chain
    pieces = _flat(items)
    for index, item in enumerate(pieces):
        for body in _bodies(item):
            inner, inner_ambiguous = _splits(body, slow_tail)
            worst, ambiguous = max(worst, inner), ambiguous or inner_ambiguous
        if item[0] is _c.BRANCH and _alternatives_overlap(item[1][1]):
            ambiguous = True
        low, high = _width([item])
        if high == 0:
            continue  # an anchor or a lookaround: it consumes nothing
        span = _ends(item)
        overlaps = bool(_first([item]) & open_chars)
        if span == 1:
            if overlaps and item[0] is _c.LITERAL:
                run += chr(item[1]).lower()
            elif not overlaps:  # a piece the repetitions before it cannot match ends them
                ways, open_chars, run = 1, frozenset(), ""
            continue
        if overlaps:
            ways, ambiguous = max(ways // _period(run), 1) * span, True
        elif low == 0 and open_chars:  # it may be skipped: the chain goes on past it
            ways = max(ways, span)
        else:
            ways = span
        run = ""
        after = pieces[index + 1][0] if index + 1 < len(pieces) else None
        worst = max(worst, ways * (1 if after is _c.LITERAL else slow_tail))
        # What the next piece could take from: this repetition, and those before it too
        # when this one can be empty.
        chars = _chars([item])
        open_chars = open_chars | chars if low == 0 else chars
    return worst, ambiguous


def _flat(items: Any) -> list[Any]:
    """`items` with their groups (not repeated, not alternations) opened in place: a group
    is its pieces, each next to what comes before and after it."""
    found = []
    for item in items:
        if item[0] is _c.SUBPATTERN:
            found.extend(_flat(item[1][-1]))
        else:
            found.append(item)
    return found


def _alternatives_overlap(alternatives: Any) -> bool:
    """Whether two alternatives can match at the same place: both empty, or beginning with
    a common character."""
    if sum(_width(alt)[0] == 0 for alt in alternatives) > 1:
        return True
    firsts = [_first(alt) for alt in alternatives]
    return any(a & b for i, a in enumerate(firsts) for b in firsts[i + 1:])


def _ends(item: Any) -> int:
    """How many places a match of `item` can end at, from one start: one per length, and
    for an alternation one per length of each alternative."""
    op, arg = item
    if op is _c.SUBPATTERN and len(arg[-1]) == 1:
        return _ends(arg[-1][0])
    if op is _c.BRANCH:
        return sum(high - low + 1 for low, high in map(_width, arg[1]))
    low, high = _width([item])
    return min(high, _UNBOUNDED) - low + 1


def _bodies(item: Any) -> list[Any]:
    op, arg = item
    if op in _REPEATS:
        return [arg[2]]
    if op is _c.SUBPATTERN:
        return [arg[-1]]
    if op is _c.BRANCH:
        return list(arg[1])
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [arg[1]]
    return []


def _self_delimiting(body: Any) -> bool:
    """Whether each repetition of `body` can begin at one place only: the body starts with a
    single character that no later part of it can match."""
    items = list(body)
    while len(items) >= 1 and items[0][0] is _c.SUBPATTERN:
        items = list(items[0][1][-1]) + items[1:]
    if not items or _width(items[:1]) != (1, 1) or items[0][0] in _REPEATS:
        return False
    return not (_chars(items[:1]) & _chars(items[1:]))


def _prefix(items: Any) -> str:
    """The literal every match begins with (letters folded: patterns may ignore case)."""
    found = []
    for op, arg in items:
        if op is _c.AT:
            continue
        if op is not _c.LITERAL:
            break
        found.append(chr(arg).lower())
    return "".join(found)


def _period(text: str) -> int:
    """The least distance between two overlapping occurrences of `text` (1 when empty)."""
    return next((p for p in range(1, len(text)) if text[p:] == text[:-p]), max(len(text), 1))


def _counts(items: Any, outer: int = 1) -> int:
    """The largest product of repetition counts along a nesting of `items`."""
    worst = outer
    for item in items:
        op, arg = item
        inner = outer * int(arg[1]) if op in _REPEATS else outer
        for body in _bodies(item):
            worst = max(worst, _counts(body, inner))
    return worst


def _repeats_or_branches(items: Any) -> bool:
    for op, arg in items:
        if (op in _REPEATS and arg[1] > 1) or op is _c.BRANCH:
            return True
        if op is _c.SUBPATTERN and _repeats_or_branches(arg[-1]):
            return True
    return False


def _walk(items: Any) -> str | None:
    for op, arg in items:
        if op in (_c.GROUPREF, getattr(_c, "GROUPREF_EXISTS", None)):
            return "backreferences are not allowed (they make matching super-linear)"
        if op in _REPEATS:
            _, high, sub = arg
            if high >= _UNBOUNDED or high == _c.MAXREPEAT:
                return ("unbounded repetition (*, +, {n,}) can make matching super-linear; "
                        "bound it, e.g. {0,200}")
            if high > 1 and (_repeats_or_branches(sub) or len(set(_width(sub))) > 1) \
                    and not (_self_delimiting(sub) and not _splits(sub)[1]):
                return ("a repeated group that itself repeats or alternates can backtrack "
                        "exponentially; start the group with a character the rest of it "
                        "cannot match, or flatten it")
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


def _anchored(items: Any) -> bool:
    """Whether the pattern can match only at a line's (or the text's) start."""
    for op, arg in items:
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            continue
        return op is _c.AT and arg in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)
    return False


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
    if problem is None and _counts(parsed) > MAX_COUNT:
        problem = (f"repetition counts may reach at most {MAX_COUNT} (multiplied along nested "
                   "repetitions); bound it lower")
    slow_tail = 1 if _anchored(parsed) else SLOW_TAIL
    if problem is None and \
            _splits(parsed, slow_tail)[0] // _period(_prefix(parsed)) > MAX_SPLITS:
        problem = ("adjacent repetitions that can match the same characters backtrack over "
                   f"every way a line splits between them (more than {MAX_SPLITS}); separate "
                   "them with a character neither matches, or merge them into one")
    return problem


@functools.lru_cache(maxsize=4096)
def _parsed(pattern: str) -> Any:
    """The parsed pattern, for the analyses below (the pure matcher asks several of each)."""
    return _p.parse(pattern)


class Literals(NamedTuple):
    """Strings one of which every match of a pattern contains; in any case when `caseless`.
    `before`: the fewest and the most characters a match can have before the one it contains
    (so a match can start only that far before an occurrence)."""

    texts: tuple[str, ...]
    caseless: bool
    before: tuple[int, int]


MIN_LITERAL = 3  # shorter literals are in nearly every text: no use as a prefilter


def _caseless_in(item_flags: tuple[int, int], caseless: bool) -> bool:
    """Whether a group with these (added, removed) inline flags matches blind to case."""
    added, removed = item_flags
    return (caseless or bool(added & _c.SRE_FLAG_IGNORECASE)) and \
        not removed & _c.SRE_FLAG_IGNORECASE


def _after(prefix: tuple[int, int], found: list[Literals]) -> list[Literals]:
    """`found`, a part's literals, with what comes before that part added to `before`."""
    return [f._replace(before=(prefix[0] + f.before[0], prefix[1] + f.before[1]))
            for f in found]


def _required(items: Any, caseless: bool) -> list[Literals]:
    """The sets of literals one of each of which every match of `items` contains: runs of
    literal characters, and what groups, alternations of such sets and repetitions of at
    least once require; best first (the longest shortest literal, then the fewest)."""
    items = list(items)
    options: list[Literals] = []
    run: list[str] = []
    run_start = 0
    for index, (op, arg) in enumerate([*items, (None, None)]):
        if op is _c.AT:
            continue  # anchors match no text
        if op is _c.LITERAL:
            run.append(chr(arg))
            continue
        if op is _c.SUBPATTERN and arg[1:3] == (0, 0) and \
                all(o is _c.LITERAL for o, _ in arg[-1]):
            run.extend(chr(a) for _, a in arg[-1])
            continue
        if run:
            options.append(Literals(("".join(run),), caseless, _width(items[:run_start])))
            run = []
        run_start = index + 1
        if op is None:
            break
        prefix = _width(items[:index])
        if op is _c.SUBPATTERN:
            options += _after(prefix, _required(arg[-1], _caseless_in(arg[1:3], caseless)))
        elif op is _c.BRANCH:
            branches = [_required(branch, caseless) for branch in arg[1]]
            if all(branches):
                known = [b[0] for b in branches]
                options.append(Literals(
                    tuple(t for b in known for t in b.texts), any(b.caseless for b in known),
                    (prefix[0] + min(b.before[0] for b in known),
                     prefix[1] + max(b.before[1] for b in known))))
        elif op in _REPEATS and arg[0] >= 1:
            reach = _width(items[index:index + 1])[1]  # in any of the repetitions
            options += [f._replace(before=(prefix[0] + f.before[0], prefix[1] + reach))
                        for f in _required(arg[2], caseless)]
    options = [o for o in options if min(map(len, o.texts)) >= MIN_LITERAL]
    return sorted(options, key=lambda o: (-min(map(len, o.texts)), len(o.texts)))


def required_literals(pattern: str, ignore_case: bool = False) -> list[Literals]:
    """Sets of literals one of each of which every match contains, for cheap substring
    prefilters, best first; none when none is known. Caseless where the pattern, or the group
    they come from, ignores case."""
    try:
        parsed = _parsed(pattern)
    except Exception:
        return []
    return _required(parsed, ignore_case or bool(parsed.state.flags & _c.SRE_FLAG_IGNORECASE))


_ZERO = ord("0")
_DIGITS = frozenset(range(_ZERO, _ZERO + 10))


def _digits_in(items: Any) -> frozenset[int] | None:
    """Which digits a character class (IN's items) matches; None when it cannot tell."""
    negate, found = False, set()
    for op, arg in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            found.add(arg)
        elif op is _c.RANGE:
            found.update(range(arg[0], arg[1] + 1))
        elif op is _c.CATEGORY:
            found.update(_category(str(arg)))
        else:
            return None
    return _DIGITS - found if negate else _DIGITS & found


def _zero_safe(items: Any, reversed_: bool) -> bool:
    """Whether each character test in `items` passed by a digit is passed by 0 too (or, when
    `reversed_`, inside a negative lookaround: passed by every digit if by 0)."""
    for op, arg in items:
        if op is _c.LITERAL or op is _c.NOT_LITERAL:  # one digit, or all but one
            if arg in _DIGITS and (reversed_ == (arg == _ZERO)) != (op is _c.NOT_LITERAL):
                return False
        elif op is _c.IN:
            digits = _digits_in(arg)
            if digits is None or (digits and (len(digits) < 10 if reversed_ and _ZERO in digits
                                              else not reversed_ and _ZERO not in digits)):
                return False
        elif op in _REPEATS:
            if not _zero_safe(arg[2], reversed_):
                return False
        elif op is _c.SUBPATTERN:
            if not _zero_safe(arg[-1], reversed_):
                return False
        elif op is _c.BRANCH:
            if not all(_zero_safe(branch, reversed_) for branch in arg[1]):
                return False
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            if not _zero_safe(arg[1], reversed_ != (op is _c.ASSERT_NOT)):
                return False
        elif op not in (_c.AT, _c.ANY):
            return False  # a backreference, or anything else: assume it tells digits apart
    return True


def matches_with_digits_zeroed(pattern: str) -> bool:
    """Whether wherever `pattern` matches a line, it matches that line with each digit made 0
    too: it tells no digit from 0 that 0 would fail (`\\d`, `0`, `[0-9]`, not `[1-9]`), so a
    line's digit-free shape can rule it out."""
    try:
        return _zero_safe(_parsed(pattern), False)
    except Exception:
        return False

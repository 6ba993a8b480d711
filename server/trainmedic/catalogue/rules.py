"""The rule catalogue as typed data: rules, their fingerprints, conditions and detectors.

`catalogue.load` builds it from the bundled compiled JSON or from validated YAML packs. A
fingerprint or detector that pins down one cause of its rule may carry that cause's own fix
(and verification); `Rule.advice` picks it when that part is what matched. Its annotations are
evaluated, as in `model`, for the records' sake.
"""

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from trainmedic.model import Role

if TYPE_CHECKING:
    from trainmedic.catalogue.examples import Examples

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
_WHERE = re.compile(r"^([a-z_][a-z0-9_]*) *(<=|>=|==|!=|<|>) *([a-z_][a-z0-9_]*|[0-9.eE+-]+)$")
_QUANTITY = re.compile(
    r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([KMGTP]i?B|B|bytes)?\s*$")
_UNIT = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "PiB": 1 << 50, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}


class RuleError(Exception):
    """A rule file that cannot be used; `str()` is the one line a user sees."""

    def __init__(self, path: str, line: int | None, field_name: str, reason: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {field_name}: {reason}")
        self.path, self.line, self.field_name, self.reason = path, line, field_name, reason


def quantity(text: str) -> float | None:
    """A number, or a size such as `3.87 GiB` in bytes; None when the text is neither."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    return float(match.group(1)) * _UNIT.get(match.group(2) or "B", 1)


class Condition(NamedTuple):
    """`left op right` over a fingerprint's named groups (or a number on the right)."""

    left: str
    op: str
    right: str

    @classmethod
    def parse(cls, text: str) -> "Condition":
        match = _WHERE.match(text.strip())
        if not match:
            raise ValueError(f"not a comparison: {text!r}")
        return cls(*match.groups())

    @property
    def names(self) -> tuple[str, ...]:
        return (self.left,) + ((self.right,) if _is_name(self.right) else ())

    def holds(self, groups: Mapping[str, str | None]) -> bool:
        left = groups.get(self.left)
        a = quantity(left) if left else None
        if a is None:
            return False
        if _is_name(self.right):
            right = groups.get(self.right)
            b = quantity(right) if right else None
        else:
            b = _number(self.right)
        return b is not None and _OPERATORS[self.op](a, b)


def _is_name(side: str) -> bool:
    return side[0].isalpha() or side[0] == "_"


# What is worked out from a pattern's text is kept for the patterns used last (bounded: a
# language server lives through many edits of a rule pack, each with new patterns).
KEPT_PATTERNS = 1 << 14

_number = lru_cache(KEPT_PATTERNS)(quantity)  # a condition's number, read once, not per line


class Advice(NamedTuple):
    """What to change, and the command that proves the change on the user's machine."""

    fix: str
    verify_command: str
    verify_explains: str


def _own_advice(part: Mapping[str, Any], rule: Mapping[str, Any]) -> Advice | None:
    """A fingerprint's or detector's own fix; its verification, else the rule's."""
    if "fix" not in part:
        return None
    verify = part.get("verify") or rule["verify"]
    return Advice(part["fix"].strip(), verify["command"], verify["explains"].strip())


class Fingerprint(NamedTuple):
    name: str
    pattern: str
    weight: float
    ignore_case: bool = False
    min_count: int = 1
    where: Condition | None = None
    advice: Advice | None = None  # when this line pins down one cause of the rule

    @property
    def regex(self) -> re.Pattern[str]:
        return _regex(self.pattern, self.ignore_case)


@lru_cache(KEPT_PATTERNS)
def _regex(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """A fingerprint's pattern compiled once: re's own cache holds fewer than a catalogue's."""
    return re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))


class DetectorRef(NamedTuple):
    """A numeric detector counted as evidence, like a fingerprint with this weight."""

    name: str
    weight: float
    params: tuple[tuple[str, float], ...] = ()
    advice: Advice | None = None


WAITED_FOR = "waited-for-rank"
ATTRIBUTIONS = {
    WAITED_FOR: "no root-cause rule fired, and the rank attribution found the rank the others "
                "waited for: its collective sequence number lags theirs, it alone is missing "
                "from their timeout reports, or the launcher terminated it while they timed out "
                "(and it raised nothing itself); the finding names that rank and cites the "
                "lines that settle it",
}


class AttributionRef(NamedTuple):
    """The rule also fires from a result of the rank attribution, `when` (one of ATTRIBUTIONS),
    with this weight as its confidence."""

    when: str
    weight: float


class Reference(NamedTuple):
    title: str
    url: str


class Rule(NamedTuple):
    id: str
    title: str
    category: str
    role: Role
    summary: str
    symptoms: tuple[str, ...]
    causes: tuple[str, ...]
    fix: str
    prevention: tuple[str, ...]
    verify_command: str
    verify_explains: str
    affected_systems: tuple[str, ...]
    fingerprints: tuple[Fingerprint, ...]
    monitor: str
    tags: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    references: tuple[Reference, ...] = ()
    outranks: tuple[str, ...] = ()
    threshold: float = 0.5
    detectors: tuple[DetectorRef, ...] = ()
    metric_patterns: tuple[str, ...] = ()
    attribution: AttributionRef | None = None
    source: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "") -> "Rule":
        return cls(
            id=data["id"],
            title=data["title"],
            category=data["category"],
            role=Role(data["role"]),
            summary=data["summary"].strip(),
            symptoms=tuple(data["symptoms"]),
            causes=tuple(data["causes"]),
            fix=data["fix"].strip(),
            prevention=tuple(data["prevention"]),
            verify_command=data["verify"]["command"],
            verify_explains=data["verify"]["explains"].strip(),
            affected_systems=tuple(data["affected_systems"]),
            fingerprints=tuple(
                Fingerprint(
                    name=fp["name"],
                    pattern=fp["pattern"],
                    weight=float(fp["weight"]),
                    ignore_case=bool(fp.get("ignore_case", False)),
                    min_count=int(fp.get("min_count", 1)),
                    where=Condition.parse(fp["where"]) if fp.get("where") else None,
                    advice=_own_advice(fp, data),
                )
                for fp in data["fingerprints"]
            ),
            monitor=data["monitor"],
            tags=tuple(data.get("tags", ())),
            related=tuple(data.get("related", ())),
            references=tuple(Reference(r["title"], r["url"]) for r in data.get("references", ())),
            outranks=tuple(data.get("outranks", ())),
            threshold=float(data.get("threshold", 0.5)),
            detectors=tuple(
                DetectorRef(d["name"], float(d["weight"]),
                            tuple(sorted((k, float(v)) for k, v in d.get("params", {}).items())),
                            _own_advice(d, data))
                for d in data.get("detectors", ())
            ),
            metric_patterns=tuple(m["pattern"] for m in data.get("metrics", ())),
            attribution=AttributionRef(data["attribution"]["when"],
                                       float(data["attribution"]["weight"]))
            if data.get("attribution") else None,
            source=source,
        )

    @property
    def parts(self) -> tuple[Fingerprint | DetectorRef, ...]:
        """What counts as evidence: the fingerprints, then the detectors."""
        return (*self.fingerprints, *self.detectors)

    def advice(self, matched: Iterable[str] = ()) -> Advice:
        """The advice of the first of the `matched` fingerprints and detectors (names, in
        evidence order) that has its own, else the rule's."""
        for name in matched:
            own = next((p.advice for p in self.parts if p.name == name and p.advice), None)
            if own is not None:
                return own
        return Advice(self.fix, self.verify_command, self.verify_explains)


class Catalogue:
    """The rules, and the rules by id (built once, here: every stage looks rules up by id).

    The rules' examples come from `examples`, called when one is first asked for: a diagnosis
    never needs them, and the bundled catalogue's are two fifths of its data."""

    __slots__ = ("_examples", "by_id", "rules", "sources")

    def __init__(self, rules: tuple[Rule, ...], sources: tuple[str, ...] = (),
                 examples: "Callable[[], Mapping[str, Examples]]" = dict) -> None:
        self.rules, self.sources = rules, sources
        self.by_id = {rule.id: rule for rule in rules}
        self._examples = cache(examples)

    def __reduce__(self) -> tuple[type["Catalogue"], tuple[object, ...]]:
        """Pickled without the examples (a function's): what is pickled is scanned with (the
        language server's workers read their catalogue so)."""
        return Catalogue, (self.rules, self.sources)

    def get(self, rule_id: str) -> Rule | None:
        return self.by_id.get(rule_id)

    def examples(self, rule_id: str) -> "Examples":
        """The examples of the rule with this id (none for an unknown id)."""
        from trainmedic.catalogue.examples import NO_EXAMPLES

        return self._examples().get(rule_id, NO_EXAMPLES)

    def merged(self, other: "Catalogue") -> "Catalogue":
        """This catalogue with `other`'s rules added, replacing rules of the same id."""
        rules = dict(self.by_id)
        rules.update(other.by_id)
        return Catalogue(tuple(sorted(rules.values(), key=lambda r: (r.category, r.id))),
                         self.sources + other.sources,
                         lambda: {**self._examples(), **other._examples()})

"""The rule catalogue as typed data: rules, their fingerprints, conditions and detectors.

`catalogue.load` builds it from the bundled compiled JSON or from validated YAML packs. A
fingerprint or detector that pins down one cause of its rule may carry that cause's own fix
(and verification); `Rule.advice` picks it when that part is what matched.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from trainmedic.model import Role

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


@dataclass(frozen=True)
class Condition:
    """`left op right` over a fingerprint's named groups (or a number on the right)."""

    left: str
    op: str
    right: str

    @classmethod
    def parse(cls, text: str) -> Condition:
        match = _WHERE.match(text.strip())
        if not match:
            raise ValueError(f"not a comparison: {text!r}")
        return cls(*match.groups())

    @cached_property
    def names(self) -> tuple[str, ...]:
        return (self.left,) + ((self.right,) if self.right[0].isalpha() or self.right[0] == "_"
                               else ())

    @cached_property
    def _number(self) -> float | None:
        """The right side when it is a number: read once, not again on every line."""
        return None if len(self.names) > 1 else quantity(self.right)

    def holds(self, groups: Mapping[str, str | None]) -> bool:
        left = groups.get(self.left)
        a = quantity(left) if left else None
        if a is None:
            return False
        if len(self.names) > 1:
            right = groups.get(self.right)
            b = quantity(right) if right else None
        else:
            b = self._number
        return b is not None and _OPERATORS[self.op](a, b)


@dataclass(frozen=True)
class Advice:
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


@dataclass(frozen=True)
class Fingerprint:
    name: str
    pattern: str
    weight: float
    ignore_case: bool = False
    min_count: int = 1
    where: Condition | None = None
    advice: Advice | None = None  # when this line pins down one cause of the rule

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0))


@dataclass(frozen=True)
class DetectorRef:
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


@dataclass(frozen=True)
class AttributionRef:
    """The rule also fires from a result of the rank attribution, `when` (one of ATTRIBUTIONS),
    with this weight as its confidence."""

    when: str
    weight: float


@dataclass(frozen=True)
class Example:
    text: str
    source: str


@dataclass(frozen=True)
class Reference:
    title: str
    url: str


@dataclass(frozen=True)
class Rule:
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
    examples_match: tuple[Example, ...]
    examples_no_match: tuple[Example, ...]
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
    def from_dict(cls, data: Mapping[str, Any], source: str = "") -> Rule:
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
            examples_match=tuple(Example(e["text"], e["source"])
                                 for e in data["examples"]["match"]),
            examples_no_match=tuple(Example(e["text"], e["source"])
                                    for e in data["examples"]["no_match"]),
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


@dataclass(frozen=True)
class Catalogue:
    rules: tuple[Rule, ...]
    sources: tuple[str, ...] = field(default=())

    @cached_property
    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}

    def get(self, rule_id: str) -> Rule | None:
        return self.by_id.get(rule_id)

    def merged(self, other: Catalogue) -> Catalogue:
        """This catalogue with `other`'s rules added, replacing rules of the same id."""
        rules = dict(self.by_id)
        rules.update(other.by_id)
        return Catalogue(tuple(sorted(rules.values(), key=lambda r: (r.category, r.id))),
                         self.sources + other.sources)

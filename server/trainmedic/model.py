"""The frozen data passed between the stages: lines, events, findings, diagnosis.

Records are NamedTuples, not dataclasses: a dataclass compiles its methods from source when
its class is made, about 1 ms each, and the forty on a diagnosis's path took a third of a
200-line diagnosis's start. State that changes is a plain class with slots. The annotations
here are evaluated, not kept as text (no `from __future__ import annotations`): a NamedTuple
compiles each field's annotation that is text.
"""

from enum import Enum
from typing import TYPE_CHECKING, NamedTuple


class Line(NamedTuple):
    """One line of a log as an editor numbers it (1-based, split on newlines only)."""

    path: str
    number: int
    text: str
    rank: int | None = None
    timestamp: float | None = None


class Hit(NamedTuple):
    """A fingerprint that matched a line, with its named groups."""

    rule_id: str
    fingerprint: str
    groups: tuple[tuple[str, str], ...] = ()

    def group(self, name: str) -> str | None:
        for key, value in self.groups:  # a few groups: a scan beats building a dict
            if key == name:
                return value
        return None


# What a traceback chained from: another. Written as text, the annotation would be compiled when
# the class is made, and a process's first compile() builds the classes of Python's syntax tree
# first: 1.4 ms of a short diagnosis. So the type checker reads this alias, and Python `object`.
if TYPE_CHECKING:
    from typing import TypeAlias

    _Cause: TypeAlias = "Traceback | None"
else:
    _Cause = object


class Traceback(NamedTuple):
    """A Python traceback recognised as one unit; `cause` is the exception it chained from."""

    rank: int | None
    first_line: int
    last_line: int
    exception: str
    message: str
    frames: tuple[str, ...]
    cause: _Cause = None


class Event(NamedTuple):
    """A line that matters, with what it matched."""

    line: Line
    hits: tuple[Hit, ...] = ()
    traceback: Traceback | None = None


class Role(str, Enum):
    ROOT = "root"
    COLLATERAL = "collateral"


class Finding(NamedTuple):
    """A rule whose evidence holds on one rank (or on the whole log when the rank is unknown)."""

    rule_id: str
    role: Role
    rank: int | None
    confidence: float
    evidence: tuple[Line, ...]
    first_by_rank: tuple[tuple[int, Line], ...] = ()
    matched: tuple[str, ...] = ()  # the fingerprints and detectors counted, in evidence order
    # Every rank that printed it went on training after it (went_on), or these ranks did.
    went_on: bool = False
    ranks_went_on: tuple[int, ...] = ()

    @property
    def first(self) -> Line:
        return self.evidence[0]

    def rank_of(self, line: Line) -> int | None:
        """The rank that printed an evidence line, also when only the matched text named it."""
        if line.rank is not None:
            return line.rank
        ranks = [rank for rank, first in self.first_by_rank if first == line]
        if ranks:
            return ranks[0]
        return self.rank if len(self.first_by_rank) <= 1 else None


class RankStatus(str, Enum):
    FAILED_FIRST = "failed-first"
    FAILED = "failed"  # failed by itself, but whether first cannot be told from the input
    FAILED_COLLATERAL = "failed-collateral"
    KILLED = "killed"
    HEALTHY = "healthy"
    SILENT = "silent"


class Basis(str, Enum):
    """How the initiating rank was chosen (or why none was)."""

    FIRST_ROOT_CAUSE = "first-root-cause"  # its root-cause error came before any other's
    EXITED_BY_ITSELF = "exited-by-itself"  # the launcher saw it end alone; it ended the rest
    NAMED_BY_PEERS = "named-by-peers"  # the others' collective-mismatch reports name it
    LAGGING_SEQUENCE = "lagging-sequence"  # its collective sequence number lags the others'
    MISSING_FROM_REPORTS = "missing-from-reports"  # the one rank absent from the timeouts
    ONLY_RANK_IN_INPUT = "only-rank-in-input"  # the one rank here: first or not, unknown
    ALL_RANKS_ALIKE = "all-ranks-alike"  # every rank failed the same way at once
    UNDETERMINED = "undetermined"


class RankReport(NamedTuple):
    status: RankStatus
    first_failure: Line | None = None
    rule_id: str | None = None


class Anomaly(NamedTuple):
    """Where a detector fired: the line, and the x (step, else line number) it marks."""

    detector: str
    line: Line
    x: float
    means: str = ""  # what the detector saw, with its parameters filled in


class Plot(NamedTuple):
    """One metric of one rank, thinned to a plot's size, with the anomalies marked on it."""

    metric: str
    rank: int | None
    points: tuple[tuple[float, float | None], ...]  # None: NaN or inf
    anomalies: tuple[Anomaly, ...] = ()
    # The other ranks' points of the same metric, by rank, for a chart that switches rank.
    other_ranks: tuple[tuple[int, tuple[tuple[float, float | None], ...]], ...] = ()


class Unexplained(NamedTuple):
    """A failure no rule explains: an exception that ended a rank's run, or a worker's exit."""

    exception: str  # the exception's name, or how the worker ended ("exit code 1", "SIGKILL")
    message: str
    rank: int | None
    line: Line  # the exception line, or the launcher's report of the exit


class Diagnosis(NamedTuple):
    """Ordered findings (most likely root cause first), the initiating rank, each rank's state."""

    findings: tuple[Finding, ...]
    initiating_rank: int | None
    ranks: dict[int, RankReport]  # first failure first
    reason: str = ""
    initiating_basis: Basis = Basis.UNDETERMINED
    initiating_host: str | None = None  # where the initiating rank ran, when the input says
    series: tuple[Plot, ...] = ()
    failure_order: tuple[int, ...] = ()  # the ranks that failed, first failure first
    tracebacks: tuple[Traceback, ...] = ()
    warnings: tuple[str, ...] = ()
    unexplained: tuple[Unexplained, ...] = ()  # failures no rule explains, first failure first

    @property
    def root_causes(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.role is Role.ROOT)

    @property
    def unexplained_anomalies(self) -> tuple[Anomaly, ...]:
        """Where a detector fired that no finding counted: numbers that no rule explains."""
        counted = {name for finding in self.findings for name in finding.matched}
        return tuple(anomaly for plot in self.series for anomaly in plot.anomalies
                     if anomaly.detector not in counted)

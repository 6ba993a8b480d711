"""What launchers say about their workers: exit codes, signals, pids, and their own guess.

torchrun's agent, srun and mpirun print which worker exited how, in lines that carry no rank
prefix. These lines are matched like fingerprints (rule id `LAUNCHER`) and read here into facts.
torchelastic's "Root Cause (first observed failure)" is kept as one fact among others: it is
wrong when a rank was killed before writing an error file or the first error was collateral.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainmedic.model import Hit, Line

LAUNCHER = "@launcher"
SIGTERM = 15

# (name, pattern): named groups rank, local_rank, pid, exitcode, signal.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("agent-sigterm", r"Sending process (?P<pid>\d{1,9}) closing signal "
                      r"SIG(?P<signame>[A-Z]{2,6})"),
    ("agent-failed", r"failed \(exitcode: (?P<exitcode>-?\d{1,4})\) "
                     r"local_rank: (?P<local_rank>\d{1,6}) \(pid: (?P<pid>\d{1,9})\)"),
    ("summary-root", r"Root Cause \(first observed failure\):"),
    ("summary-rank", r"^ {0,8}rank {0,10}: (?P<rank>\d{1,6}) "
                     r"\(local_rank: (?P<local_rank>\d{1,6})\)"),
    ("summary-exitcode", r"^ {0,8}exitcode {0,10}: (?P<exitcode>-?\d{1,4}) "
                         r"\(pid: (?P<pid>\d{1,9})\)"),
    ("srun-task", r"srun: error: [\w.-]{1,100}: tasks? (?P<rank>\d{1,6})(?:-\d{1,6})?: "
                  r"(?:Exited with exit code (?P<exitcode>\d{1,4})|(?P<killed>Killed))"),
    ("mpirun-rank", r"process rank (?P<rank>\d{1,6}) with PID (?P<pid>\d{1,9}) on node "
                    r"\S{1,100} (?:exited on signal (?P<signal>\d{1,3})|"
                    r"exited with status (?P<exitcode>\d{1,4}))"),
    ("world-size", r"(?:world_size|world size|WORLD_SIZE|World size)\s{0,2}[=:]\s{0,2}"
                   r"(?P<world>\d{1,6})\b"),
)


@dataclass(frozen=True)
class WorkerExit:
    """One worker's end as a launcher reported it; `signal` is set when a signal killed it."""

    rank: int | None
    pid: int | None
    exitcode: int | None
    signal: int | None
    line: Line
    torchelastic_root: bool = False


@dataclass(frozen=True)
class LauncherReport:
    exits: tuple[WorkerExit, ...]
    terminated_pids: frozenset[int]
    world_size: int | None

    @property
    def torchelastic_root(self) -> WorkerExit | None:
        return next((e for e in self.exits if e.torchelastic_root), None)

    def rank_of_pid(self, pid: int) -> int | None:
        return next((e.rank for e in self.exits if e.pid == pid and e.rank is not None), None)

    def killed_by_launcher(self, rank: int) -> bool:
        """The launcher terminated this rank (SIGTERM) rather than the rank failing by itself."""
        return any(e.rank == rank and (e.signal == SIGTERM or e.pid in self.terminated_pids)
                   for e in self.exits)


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


def read_report(facts: Iterable[tuple[Line, Hit]]) -> LauncherReport:
    """Fold the launcher's lines, in order, into worker exits."""
    exits: list[WorkerExit] = []
    terminated: set[int] = set()
    world: int | None = None
    pending_rank: int | None = None
    pending_root = in_root = False
    for line, hit in facts:
        g = dict(hit.groups)
        name = hit.fingerprint
        if name == "agent-sigterm" and g.get("signame") == "TERM":
            terminated.add(int(g["pid"]))
        elif name == "agent-failed":
            code = int(g["exitcode"])
            exits.append(WorkerExit(int(g["local_rank"]), int(g["pid"]), code,
                                    -code if code < 0 else None, line))
        elif name == "summary-root":
            in_root = True
        elif name == "summary-rank":
            pending_rank, pending_root = int(g["rank"]), in_root
        elif name == "summary-exitcode" and pending_rank is not None:
            code = int(g["exitcode"])
            exits.append(WorkerExit(pending_rank, int(g["pid"]), code,
                                    -code if code < 0 else None, line, pending_root))
            pending_rank = None
        elif name == "srun-task":
            exits.append(WorkerExit(int(g["rank"]), None, _int(g.get("exitcode")),
                                    9 if g.get("killed") else None, line))
        elif name == "mpirun-rank":
            exits.append(WorkerExit(int(g["rank"]), _int(g.get("pid")), _int(g.get("exitcode")),
                                    _int(g.get("signal")), line))
        elif name == "world-size":
            world = max(world or 0, int(g["world"]))
    return LauncherReport(tuple(exits), frozenset(terminated), world)

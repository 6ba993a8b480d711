"""What launchers say about their workers: exit codes, signals, pids, and their own guess.

torchrun's agent, torch.multiprocessing.spawn, srun, mpirun, Horovod and Ray Train print which
worker exited how, in lines that carry no rank prefix. These lines are matched like fingerprints
(rule id `LAUNCHER`) and read here into facts: which workers ended by themselves and which the
launcher ended (its SIGTERMs, srun's "Killed") once the first had gone, and on which host.
torchelastic's "Root Cause (first observed failure)" is kept as one fact among others: it is
wrong when a rank was killed before writing an error file or the first error was collateral.
On several nodes each node's agent prints its own summary; their Root Causes' times order them.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Iterable
from typing import NamedTuple

from trainmedic.logs.timestamps import Clock, read_stamp
from trainmedic.model import Hit, Line

LAUNCHER = "@launcher"
SIGKILL = 9
SIGTERM = 15
# Signals a crash of the code itself raises (illegal instruction, abort, bus error, arithmetic
# fault, segfault): code that every rank runs, unlike SIGKILL, which someone sends to one.
CODE_SIGNALS = frozenset({4, 6, 7, 8, 11})
MAX_TASKS = 4096  # ranks read from one grouped srun line ("tasks 0-3,6-7")
MAX_EXITS = 1 << 16  # worker exits kept from one input
# Linux numbers of the signals launchers name (spawn says "SIGSEGV", srun strsignal's words).
SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
           "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
           "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGXCPU": 24,
           "Hangup": 1, "Interrupt": 2, "Quit": 3, "Illegal instruction": 4, "Aborted": 6,
           "Bus error": 7, "Floating point exception": 8, "Killed": 9, "Out Of Memory": 9,
           "Segmentation fault": 11, "Terminated": 15}

# (name, pattern): named groups rank, local_rank, pid, exitcode, signal, signame, tasks.
PATTERNS: tuple[tuple[str, str], ...] = (
    # torchelastic's agent (torch/distributed/elastic/multiprocessing/api.py), any prefix.
    ("agent-sigterm", r"Sending process (?P<pid>\d{1,9}) closing signal "
                      r"SIG(?P<signame>[A-Z]{2,6})"),
    ("agent-failed", r"failed \(exitcode: (?P<exitcode>-?\d{1,4})\) "
                     r"local_rank: (?P<local_rank>\d{1,6}) \(pid: (?P<pid>\d{1,9})\)"),
    ("summary-failures", r"^[^\n]{0,40}Failures:[ \t]{0,20}$"),
    ("summary-root", r"Root Cause \(first observed failure\):"),
    ("summary-time", r"^[^\n]{0,40}\btime[ \t]{0,10}: (?P<time>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)"
                     r"[ \t]{0,20}$"),
    ("summary-host", r"^[^\n]{0,40}\bhost[ \t]{0,10}: (?P<host>[\w.-]{1,253})[ \t]{0,20}$"),
    ("summary-rank", r"\brank[ \t]{0,10}: (?P<rank>\d{1,6}) "
                     r"\(local_rank: (?P<local_rank>\d{1,6})\)"),
    ("summary-exitcode", r"\bexitcode[ \t]{0,10}: (?P<exitcode>-?\d{1,4}) "
                         r"\(pid: (?P<pid>\d{1,9})\)"),
    # torch.multiprocessing.spawn: ProcessContext.join raises for the first child it finds
    # dead (its index is the local rank), then terminates the others.
    ("spawn-exited", r"(?:ProcessExitedException|Exception): process (?P<rank>\d{1,6}) "
                     r"terminated with (?:exit code (?P<exitcode>-?\d{1,4})|"
                     r"signal (?P<signame>SIG[A-Z]{2,8}))"),
    ("spawn-raised", r"-- Process (?P<rank>\d{1,6}) terminated with the following error:"),
    # srun: one line per task or group of tasks ("tasks 0-3,6-7: Killed").
    ("srun-task", r"srun: error: (?P<host>[\w.-]{1,100}): tasks? (?P<tasks>\d[\d,-]{0,400}): "
                  r"(?:Exited with exit code (?P<exitcode>\d{1,4})|"
                  r"(?P<signame>Out Of Memory|[A-Z][a-z]{1,20}(?: [a-z]{1,20}){0,3}))"),
    # Open MPI: "mpirun noticed that process rank 7 ... exited on signal 9", or its summary
    # "The first process to do so was: / Process name: [[jobid,1],vpid] / Exit code: 1";
    # Horovod's gloo launcher prints the same summary with a bare index as the name.
    ("mpirun-rank", r"process rank (?P<rank>\d{1,6}) with PID (?P<pid>\d{1,9}) on node "
                    r"(?P<host>\S{1,100}) (?:exited on signal (?P<signal>\d{1,3})|"
                    r"exited with status (?P<exitcode>\d{1,4}))"),
    ("first-process", r"The first process to do so was:"),
    ("process-name", r"Process name:[ \t]{0,8}(?:\[\[\d{1,10},\d{1,10}\],)?(?P<rank>\d{1,6})\]?"
                     r"[ \t]{0,20}$"),
    ("exit-code", r"Exit code:[ \t]{0,8}(?P<exitcode>-?\d{1,4})[ \t]{0,20}$"),
    # Ray Train: the trainer lists each worker's pid and world rank; a worker prefix with a
    # rank on the line ties its pid too; the driver reports a dead worker by pid; Ray Train 2
    # groups the failed ranks' errors ("[Rank 0,3 Error Snippet]:").
    ("ray-world-rank", r"pid=(?P<pid>\d{1,9})\) world_rank=(?P<rank>\d{1,6})"),
    ("ray-worker", r"\(RayTrainWorker pid=(?P<pid>\d{1,9})[,)]"),
    ("ray-worker-died", r"Worker PID: (?P<pid>\d{1,9}) Worker exit type: "
                        r"(?P<exittype>[A-Z_]{4,30})"),
    ("ray-error-snippet", r"\[Rank (?P<tasks>\d{1,6}(?:,\d{1,6}){0,64}) Error Snippet\]:"),
    ("world-size", r"(?:world_size|world size|WORLD_SIZE|World size)\s{0,2}[=:]\s{0,2}"
                   r"(?P<world>\d{1,6})\b"),
)
# Facts that say the same thing each time they repeat (a pid's rank on every line it prints):
# the engine keeps one of each.
REPEATED = frozenset({"ray-worker", "world-size"})
_AGENT = frozenset({"agent-sigterm", "agent-failed", "summary-root", "summary-rank"})
_RAY_EXPECTED_EXITS = ("INTENDED_",)
# Names a launcher prints for the machine it runs on that name no machine at all.
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "127.0.0.1"})
_RANGE = re.compile(r"(\d{1,6})(?:-(\d{1,6}))?")
_FIRST_PROCESS_SPAN = 6  # facts after "The first process to do so was:" that belong to it


class WorkerExit(NamedTuple):
    """One worker's end as a launcher reported it; `signal` is set when a signal killed it,
    `terminated` when the launcher itself ended it after another worker had failed."""

    rank: int | None
    pid: int | None
    exitcode: int | None
    signal: int | None
    line: Line
    torchelastic_root: bool = False
    launcher: str = "torchelastic"
    local_rank: int | None = None
    terminated: bool = False
    host: str | None = None  # where it ran, when the launcher says
    time: float | None = None  # when it failed (torchelastic's summary: whole seconds)


class LauncherReport(NamedTuple):
    exits: tuple[WorkerExit, ...]
    terminated_pids: frozenset[int]
    world_size: int | None
    one_node_of_several: bool = False  # a torchelastic agent that saw only its own node
    root_unseen: bool = False  # its summary lists other failures, its Root Cause is cut off
    # The agent's own lines (no summary) name workers whose pids leave gaps: the workers in
    # between, if any, had ended before it looked, and it names only the first it found dead.
    pids_unaccounted: bool = False
    summary_ranks: frozenset[tuple[int, int]] = frozenset()  # torchelastic's (rank, local_rank)

    def global_ranks(self) -> dict[int, int]:
        """The global rank torchelastic's summary names for each local rank it names with one
        only (each node has a local rank N: two failed workers with it leave it ambiguous)."""
        named: dict[int, set[int]] = {}
        for rank, local_rank in self.summary_ranks:
            named.setdefault(local_rank, set()).add(rank)
        return {local: next(iter(ranks)) for local, ranks in named.items() if len(ranks) == 1}

    @property
    def torchelastic_root(self) -> WorkerExit | None:
        """The first observed failure: the earliest of the agents' Root Causes when every one
        has its time (one per node's agent), else the first printed."""
        roots = self.torchelastic_roots()
        if roots and all(r.time is not None for r in roots):
            return min(roots, key=lambda r: r.time or 0.0)
        return roots[0] if roots else None

    def torchelastic_roots(self) -> tuple[WorkerExit, ...]:
        """Every agent's Root Cause, as printed (a summary printed twice counts once)."""
        seen: dict[tuple[int | None, int | None, str | None, float | None], WorkerExit] = {}
        for e in self.exits:
            if e.torchelastic_root:
                seen.setdefault((e.rank, e.pid, e.host, e.time), e)
        return tuple(seen.values())

    def host_of(self, rank: int) -> str | None:
        """The host a launcher says the rank ran on (not a loopback name: it names none)."""
        return next((e.host for e in self.exits if e.rank == rank and e.host
                     and e.host not in LOOPBACK_NAMES), None)

    def rank_of_pid(self, pid: int) -> int | None:
        return next((e.rank for e in self.exits if e.pid == pid and e.rank is not None), None)

    def killed_by_launcher(self, rank: int) -> bool:
        """The launcher terminated this rank (SIGTERM) rather than the rank failing by itself."""
        return rank in self.ended_by_launcher()

    def ended_by_launcher(self) -> frozenset[int]:
        """The ranks the launcher ended (its SIGTERMs, srun's kills) after another had failed."""
        return frozenset(e.rank for e in self.exits if e.rank is not None and (
            e.terminated or e.signal == SIGTERM or e.pid in self.terminated_pids))

    def self_exits(self) -> tuple[WorkerExit, ...]:
        """The ranks that ended by themselves (not by the launcher's hand), first report each."""
        ended = self.ended_by_launcher()
        seen: dict[int, WorkerExit] = {}
        for exit_ in self.exits:
            if exit_.rank is not None and exit_.rank not in ended and exit_.rank not in seen:
                seen[exit_.rank] = exit_
        return tuple(seen.values())


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


def _tasks(text: str) -> list[int]:
    """srun's and Ray's rank lists: "5", "0-3,6-7", "0,3" (at most MAX_TASKS ranks)."""
    ranks: list[int] = []
    for low, high in _RANGE.findall(text):
        start = int(low)
        end = min(int(high or low), start + MAX_TASKS - len(ranks) - 1)
        ranks.extend(range(start, end + 1))
        if len(ranks) >= MAX_TASKS:
            break
    return ranks


def _summary_time(text: str | None) -> float | None:
    """torchelastic's "2024-08-20_11:37:36" (ISO 8601 with "_" for "T", in UTC) as seconds;
    every node's agent prints its own clock, so these order failures across nodes to the
    second."""
    return Clock().date(read_stamp(text)) if text is not None else None


def _code_and_signal(exitcode: str | None, signame: str | None) -> tuple[int | None, int | None]:
    code = _int(exitcode)
    if signame is not None:
        return code, SIGNALS.get(signame, SIGNALS.get("SIG" + signame))
    return code, (-code if code is not None and code < 0 else None)


class _Reader:
    """The fold of read_report: the state that spans a launcher's multi-line reports."""

    def __init__(self) -> None:
        self.exits: list[WorkerExit] = []
        self.terminated: set[int] = set()
        self.world: int | None = None
        self.pid_ranks: dict[int, int] = {}  # Ray workers' pids
        self.summary_ranks: dict[int, int] = {}  # pid -> global rank, from torchelastic's summary
        self.pending_rank: tuple[int, int] | None = None  # summary entry: (rank, local_rank)
        self.pending_where: dict[str, str] = {}  # summary entry: its time and host
        self.summary_pairs: set[tuple[int, int]] = set()
        self.in_root = False
        self.first_process: dict[str, int] = {}
        self.first_process_left = 0
        self.agent = False
        self.summary_root_seen = self.summary_others = False
        self.srun: list[WorkerExit] = []
        self.ray_dead: list[tuple[int, Line]] = []

    def read(self, line: Line, name: str, g: dict[str, str]) -> None:
        if len(self.exits) + len(self.srun) + len(self.ray_dead) >= MAX_EXITS:
            return
        self.agent |= name in _AGENT
        if self.first_process_left:
            self.first_process_left -= 1
        read = _READERS.get(name)
        if read is not None:
            read(self, line, g)

    def _agent_sigterm(self, line: Line, g: dict[str, str]) -> None:
        if g.get("signame") in ("TERM", "KILL"):
            self.terminated.add(int(g["pid"]))

    def _agent_failed(self, line: Line, g: dict[str, str]) -> None:
        code, signal = _code_and_signal(g["exitcode"], None)
        local = int(g["local_rank"])
        self.exits.append(WorkerExit(local, int(g["pid"]), code, signal, line,
                                     local_rank=local))

    def _summary_failures(self, line: Line, g: dict[str, str]) -> None:
        self.in_root, self.pending_where = False, {}

    def _summary_root(self, line: Line, g: dict[str, str]) -> None:
        self.in_root, self.pending_where = True, {}

    def _summary_where(self, line: Line, g: dict[str, str]) -> None:
        self.pending_where.update(g)

    def _summary_rank(self, line: Line, g: dict[str, str]) -> None:
        self.pending_rank = int(g["rank"]), int(g["local_rank"])

    def _summary_exitcode(self, line: Line, g: dict[str, str]) -> None:
        if self.pending_rank is None:
            return
        rank, local = self.pending_rank
        code, signal = _code_and_signal(g["exitcode"], None)
        self.summary_ranks[int(g["pid"])] = rank
        where, self.pending_where = self.pending_where, {}
        self.summary_pairs.add((rank, local))
        self.exits.append(WorkerExit(rank, int(g["pid"]), code, signal, line, self.in_root,
                                     local_rank=local, host=where.get("host"),
                                     time=_summary_time(where.get("time"))))
        self.pending_rank = None
        self.summary_root_seen |= self.in_root
        self.summary_others |= not self.in_root and signal != SIGTERM

    def _spawn_exited(self, line: Line, g: dict[str, str]) -> None:
        code, signal = _code_and_signal(g.get("exitcode"), g.get("signame"))
        self.exits.append(WorkerExit(int(g["rank"]), None, code, signal, line, launcher="spawn"))

    def _spawn_raised(self, line: Line, g: dict[str, str]) -> None:
        self.exits.append(WorkerExit(int(g["rank"]), None, None, None, line, launcher="spawn"))

    def _srun_task(self, line: Line, g: dict[str, str]) -> None:
        code, signal = _code_and_signal(g.get("exitcode"), g.get("signame"))
        # srun kills (SIGKILL) or terminates the remaining tasks once one has exited badly.
        ended = signal in (SIGKILL, SIGTERM) and g.get("signame") != "Out Of Memory"
        for rank in _tasks(g["tasks"]):
            self.srun.append(WorkerExit(rank, None, code, signal, line, launcher="srun",
                                        terminated=ended, host=g.get("host")))

    def _mpirun_rank(self, line: Line, g: dict[str, str]) -> None:
        self.exits.append(WorkerExit(int(g["rank"]), _int(g.get("pid")), _int(g.get("exitcode")),
                                     _int(g.get("signal")), line, launcher="mpirun",
                                     host=g.get("host")))

    def _first_process(self, line: Line, g: dict[str, str]) -> None:
        self.first_process, self.first_process_left = {}, _FIRST_PROCESS_SPAN

    def _process_name(self, line: Line, g: dict[str, str]) -> None:
        self._first_process_part(line, "rank", int(g["rank"]))

    def _exit_code(self, line: Line, g: dict[str, str]) -> None:
        self._first_process_part(line, "exitcode", int(g["exitcode"]))

    def _first_process_part(self, line: Line, key: str, value: int) -> None:
        if not self.first_process_left:
            return
        self.first_process[key] = value
        if {"rank", "exitcode"} <= self.first_process.keys():
            code = self.first_process["exitcode"]
            self.exits.append(WorkerExit(self.first_process["rank"], None, code,
                                         -code if code < 0 else None, line, launcher="mpirun"))
            self.first_process_left = 0

    def _ray_world_rank(self, line: Line, g: dict[str, str]) -> None:
        self.pid_ranks.setdefault(int(g["pid"]), int(g["rank"]))

    def _ray_worker(self, line: Line, g: dict[str, str]) -> None:
        if line.rank is not None:
            self.pid_ranks.setdefault(int(g["pid"]), line.rank)

    def _ray_worker_died(self, line: Line, g: dict[str, str]) -> None:
        if not g["exittype"].startswith(_RAY_EXPECTED_EXITS):
            self.ray_dead.append((int(g["pid"]), line))

    def _ray_error_snippet(self, line: Line, g: dict[str, str]) -> None:
        for rank in _tasks(g["tasks"]):
            self.exits.append(WorkerExit(rank, None, None, None, line, launcher="ray"))

    def _world_size(self, line: Line, g: dict[str, str]) -> None:
        self.world = max(self.world or 0, int(g["world"]))

    def report(self) -> LauncherReport:
        exits = [self._with_global_rank(e) for e in self.exits]
        # Under srun, a torchelastic agent is srun's task: its task number is a node, not a rank.
        several_nodes = self.agent and any(e.rank for e in self.srun)
        if not self.agent:
            exits += self.srun
        exits += [WorkerExit(self.pid_ranks.get(pid), pid, None, None, line, launcher="ray")
                  for pid, line in self.ray_dead]
        several_nodes |= any(e.local_rank is not None and e.rank != e.local_rank for e in exits)
        return LauncherReport(tuple(exits), frozenset(self.terminated), self.world,
                              several_nodes, self.summary_others and not self.summary_root_seen,
                              self._pids_unaccounted(), frozenset(self.summary_pairs))

    def _pids_unaccounted(self) -> bool:
        """The agent starts its workers one after another; without its summary, a gap in the
        pids it names may be a worker that ended unseen."""
        if self.summary_ranks:
            return False
        pids = self.terminated | {e.pid for e in self.exits
                                  if e.launcher == "torchelastic" and e.pid is not None}
        return len(pids) > 1 and max(pids) - min(pids) + 1 > len(pids)

    def _with_global_rank(self, exit_: WorkerExit) -> WorkerExit:
        """An agent's "failed ... local_rank: N" line, with the global rank its summary gives."""
        rank = self.summary_ranks.get(exit_.pid) if exit_.pid is not None else None
        return exit_ if rank is None else exit_._replace(rank=rank)



_READERS = {
    "agent-sigterm": _Reader._agent_sigterm, "agent-failed": _Reader._agent_failed,
    "summary-failures": _Reader._summary_failures, "summary-root": _Reader._summary_root,
    "summary-time": _Reader._summary_where, "summary-host": _Reader._summary_where,
    "summary-rank": _Reader._summary_rank, "summary-exitcode": _Reader._summary_exitcode,
    "spawn-exited": _Reader._spawn_exited, "spawn-raised": _Reader._spawn_raised,
    "srun-task": _Reader._srun_task, "mpirun-rank": _Reader._mpirun_rank,
    "first-process": _Reader._first_process, "process-name": _Reader._process_name,
    "exit-code": _Reader._exit_code, "ray-world-rank": _Reader._ray_world_rank,
    "ray-worker": _Reader._ray_worker, "ray-worker-died": _Reader._ray_worker_died,
    "ray-error-snippet": _Reader._ray_error_snippet, "world-size": _Reader._world_size,
}

def read_report(facts: Iterable[tuple[Line, Hit]]) -> LauncherReport:
    """Fold the launcher's lines, in order, into worker exits."""
    reader = _Reader()
    for line, hit in facts:
        reader.read(line, hit.fingerprint, dict(hit.groups))
    return reader.report()

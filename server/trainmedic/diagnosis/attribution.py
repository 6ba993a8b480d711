"""Which rank started the failure, and what every rank did.

The initiating rank is the one whose root-cause failure came first. Collateral reports (peer
timeouts, lost connections, the launcher's SIGTERMs) never start a failure. A launcher that saw
one worker end by itself and ended the rest names it, even when its own error is not in the
input. When no rank says why, the answer comes from the shape of the reports: the rank the
others name in a collective mismatch, the rank whose collective sequence number lags, or the one
rank that is missing from everyone's timeout reports (the rank they waited for); failing that,
the rank of the first failure no rule explains. When every rank failed alike at once, or only
one rank's output is here, no rank is said to have failed first. On several nodes, each
node's torchelastic agent names its own first failure: the earliest of them started it. Each
answer carries its basis (model.Basis), the rule that chose it, and the rank's host where a
launcher or a line prefix names it, so the bad node can be drained.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cmp_to_key
from typing import NamedTuple, TypeVar

from trainmedic.logs.launcher import CODE_SIGNALS, SIGTERM, LauncherReport, WorkerExit
from trainmedic.logs.prefixes import host_prefix, rank_of_path
from trainmedic.model import Basis, Finding, Line, RankReport, RankStatus, Role, Unexplained

T = TypeVar("T")
SIMULTANEOUS_SECONDS = 1.0
WAITING_SHOWN = 4  # the other ranks' reports cited for a rank they waited for
# Root causes that a rank also reports when a peer died under it: NCCL's "unhandled system
# error" is how a collective saw a peer's socket close before NCCL 2.12 had ncclRemoteError.
PEER_LOSS_ROOTS = frozenset({"nccl-system-error"})
# Rules that quote the launcher's summary (which ranks exited), not a rank's own output: the
# launcher's facts (logs/launcher.py) say the same, read line by line.
LAUNCHER_SUMMARIES = frozenset({"elastic-child-failed"})
_LAUNCHER_NAMES = {"torchelastic": "torchrun's agent", "spawn": "torch.multiprocessing.spawn",
                   "srun": "srun", "mpirun": "the MPI launcher", "ray": "Ray"}
_MISMATCH_PEER = re.compile(r"but Rank (\d{1,6}) is running collective")
_SEQ = re.compile(r"SeqNum=(\d{1,12})")


def _compare(a: Line, b: Line, order: Mapping[str, int]) -> int:
    if a.path == b.path:
        return (a.number > b.number) - (a.number < b.number)
    if a.timestamp is not None and b.timestamp is not None and a.timestamp != b.timestamp:
        return -1 if a.timestamp < b.timestamp else 1
    pa, pb = order.get(a.path, 0), order.get(b.path, 0)
    return (pa > pb) - (pa < pb) or (a.number > b.number) - (a.number < b.number)


def chronological(lines: Iterable[Line], order: Mapping[str, int]) -> list[Line]:
    """Lines in the order they happened: line order within a file, timestamps across files."""
    return in_time_order(lines, lambda line: line, order)


def in_time_order(items: Iterable[T], line_of: Callable[[T], Line],
                  order: Mapping[str, int]) -> list[T]:
    """Items in the order their lines happened (see `chronological`).

    Where only some lines have a time, that order is not total (a timed line of one file may
    come before a line of another that came before it by file order), so what a sort makes of
    it depends on the order it is given: the items are first put in file and line order, so
    that a set's (which follows the hashes of None, random in every process) does not count."""
    every = sorted(items, key=lambda item: _place(line_of(item), order))
    if len({line_of(item).path for item in every}) <= 1:  # one file: its line order, quicker
        return every

    def compare(a: T, b: T) -> int:
        return _compare(line_of(a), line_of(b), order)

    return sorted(every, key=cmp_to_key(compare))


def _place(line: Line, order: Mapping[str, int]) -> tuple[int, str, int, int, str]:
    """Where a line stands among the inputs, and what tells apart lines of the same place."""
    return (order.get(line.path, 0), line.path, line.number,
            -1 if line.rank is None else line.rank, line.text)


def before(a: Line, b: Line, order: Mapping[str, int]) -> bool:
    """`a` happened before `b`."""
    return _compare(a, b, order) < 0


class Attribution(NamedTuple):
    rank: int | None
    ranks: dict[int, RankReport]
    reason: str
    failure_order: tuple[int, ...] = ()  # the ranks that failed, first failure first
    basis: Basis = Basis.UNDETERMINED
    # The lines that show the others waited for `rank` (its own lagging report first): set
    # when that is how the rank was found and it did not fail by itself.
    waited_for: tuple[Line, ...] = ()
    host: str | None = None  # where `rank` ran, when the input says


def _first_lines(findings: Iterable[Finding], order: Mapping[str, int],
                 skip: frozenset[tuple[str, int]] = frozenset()) -> dict[int, tuple[Line, str]]:
    """Each rank's first failure line and its rule, leaving out the lines at `skip`."""
    table: dict[int, tuple[Line, str]] = {}
    for finding in findings:
        for rank, line in finding.first_by_rank:
            if skip and (line.path, line.number) in skip:  # a line per rank in a flood
                continue
            current = table.get(rank)
            if current is None or _compare(line, current[0], order) < 0:
                table[rank] = (line, finding.rule_id)
    return table


def _global_ranks(table: dict[int, tuple[Line, str]], report: LauncherReport,
                  local_only: Callable[[str], int | None]) -> dict[int, tuple[Line, str]]:
    """The table with a rank read from a local-rank prefix alone (torchrun's `[default1]:`)
    renamed to the global rank the launcher's summary names for that local rank, when it
    names one only and no line already speaks for that global rank."""
    renamed: dict[int, tuple[Line, str]] = {}
    global_ranks = report.global_ranks()  # a few, while a job's flood has a line per rank
    for rank, entry in table.items():
        named = global_ranks.get(rank)
        if named is None or named in table or local_only(entry[0].text) != rank:
            named = rank
        renamed[named] = entry
    return renamed


def _ranks_text(ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    shown = ", ".join(map(str, ranks[:8]))
    return shown + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _ranks_named(ranks: Iterable[int]) -> str:
    """"rank 3" or "ranks 0, 1 and 2 more": the words before a verb."""
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {_ranks_text(ranks)}"


def _named_by_mismatch(findings: list[Finding]) -> tuple[int, int] | None:
    """The rank that the other ranks' collective-mismatch reports name, and by how many."""
    votes: Counter[int] = Counter()
    for finding in findings:
        for line in finding.evidence:
            peers = {int(p) for p in _MISMATCH_PEER.findall(line.text)}
            votes.update(peers - ({line.rank} if line.rank is not None else set()))
    ranked = votes.most_common()[:2]  # sorted: most_common(2) imports heapq, slow to import
    if ranked and ranked[0][1] >= 2 and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return ranked[0]
    return None


def _lagging_sequence(collateral: dict[int, tuple[Line, str]]
                      ) -> tuple[int, int, int, Line] | None:
    """The one rank stuck in an earlier collective than the rest: (rank, its seq, others',
    the first report of a rank that reached the others' seq)."""
    seqs = {}
    for rank, (line, _) in collateral.items():
        match = _SEQ.search(line.text)
        if match:
            seqs[rank] = int(match.group(1))
    if len(seqs) < 2:
        return None
    low, high = min(seqs.values()), max(seqs.values())
    laggards = [r for r, s in seqs.items() if s == low]
    if len(laggards) == 1 and len(seqs) > 2:
        ahead = next(collateral[r][0] for r, s in sorted(seqs.items()) if s == high)
        return laggards[0], low, high, ahead
    return None


def _alike(top: Finding, failing: Iterable[int], order: Mapping[str, int]) -> bool:
    """Every failing rank hit the top root cause, with no order between them to trust."""
    ranks = dict(top.first_by_rank)
    if len(ranks) < 2 or set(failing) - ranks.keys():
        return False
    stamps = [line.timestamp for line in ranks.values()]
    if any(stamp is None for stamp in stamps):
        return True
    known = [s for s in stamps if s is not None]
    return max(known) - min(known) <= SIMULTANEOUS_SECONDS


class _Choice(NamedTuple):
    rank: int | None
    basis: Basis
    reason: str
    waited_for: tuple[Line, ...] = ()  # the lines that show the others waited for the rank


def _named_by_peers(findings: list[Finding]) -> _Choice | None:
    mismatch = _named_by_mismatch([f for f in findings if f.rule_id == "collective-mismatch"])
    if mismatch is None:
        return None
    return _Choice(mismatch[0], Basis.NAMED_BY_PEERS,
                   f"{mismatch[1]} ranks report a collective mismatch naming rank {mismatch[0]} "
                   "as the one running a different collective")


def _all_alike(roots: list[Finding], first_root: dict[int, tuple[Line, str]],
               first_any: dict[int, tuple[Line, str]],
               order: Mapping[str, int]) -> _Choice | None:
    if not (first_root and roots and _alike(roots[0], first_any, order)):
        return None
    return _Choice(None, Basis.ALL_RANKS_ALIKE,
                   f"ranks {_ranks_text(dict(roots[0].first_by_rank))} all failed with "
                   f"{roots[0].rule_id} at the same time: the cause is common to every rank "
                   "(code, data or configuration), no single rank started it")


def _launcher_name(exit_: WorkerExit) -> str:
    return _LAUNCHER_NAMES.get(exit_.launcher, exit_.launcher)


def _how_it_ended(exit_: WorkerExit) -> str:
    if exit_.signal:
        return f"signal {exit_.signal}"
    if exit_.exitcode is not None:
        return f"exit code {exit_.exitcode}"
    return "its process died"


def _when(exit_: WorkerExit) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(exit_.time or 0.0))
    return f"rank {exit_.rank}" + (f" on {exit_.host}" if exit_.host else "") + f" at {stamp}"


def _first_across_nodes(report: LauncherReport, own_root: dict[int, tuple[Line, str]],
                        own_any: dict[int, tuple[Line, str]]) -> _Choice | None:
    """Several nodes' agents, each naming its first observed failure: the earliest started
    it, unless its own output shows it a victim or another rank says why and it does not."""
    roots = report.torchelastic_roots()
    if len(roots) < 2 or any(r.time is None or r.rank is None for r in roots):
        return None
    ordered = sorted(roots, key=lambda r: r.time or 0.0)
    first, rank = ordered[0], ordered[0].rank
    told = "; ".join(map(_when, ordered))
    said = f"the agents of {len(roots)} nodes name their first failures: {told}"
    if first.time == ordered[1].time:
        return _Choice(None, Basis.UNDETERMINED,
                       f"{said}: the first two in the same second, so which came first "
                       "cannot be told")
    if rank is None:
        return None
    own = own_root.get(rank)
    if rank in own_any and (own is None or own[1] in PEER_LOSS_ROOTS):
        return None  # its own output shows it failed because another rank had
    if own is None and any(r != rank and v[1] not in PEER_LOSS_ROOTS
                           for r, v in own_root.items()):
        return None  # another rank says why and this one does not: the ranks' output decides
    return _Choice(rank, Basis.EXITED_BY_ITSELF, f"{said}: rank {rank}'s came first")


def _exited_alike(report: LauncherReport,
                  own_root: dict[int, tuple[Line, str]]) -> _Choice | None:
    """Several ranks killed by the same signal in one launcher report, none saying why."""
    exits = report.self_exits()
    signals = {e.signal for e in exits}
    if len(exits) < 2 or len(signals) != 1 or None in signals or own_root:
        return None
    ranks = _ranks_text(e.rank for e in exits if e.rank is not None)
    return _Choice(None, Basis.ALL_RANKS_ALIKE,
                   f"{_launcher_name(exits[0])} reports ranks {ranks} all ended by "
                   f"{_how_it_ended(exits[0])} together: the cause is common to them (memory, "
                   "the host, a shared file), no single rank started it")


def _exited_by_itself(report: LauncherReport, own_root: dict[int, tuple[Line, str]],
                      own_any: dict[int, tuple[Line, str]], unranked_collateral: Line | None,
                      order: Mapping[str, int]) -> _Choice | None:
    """The one rank the launcher saw end by itself, the others having been ended by it.

    Its word decides unless the rank's own output shows it was a victim (a collateral or a
    peer-loss error of its own), or another rank shows a root cause no lost peer explains:
    then the launcher's order of exits says nothing about which failure came first.
    """
    exits = report.self_exits()
    if report.one_node_of_several or report.root_unseen or len(exits) != 1 \
            or exits[0].rank is None:
        return None
    exit_, rank = exits[0], exits[0].rank
    own = own_root.get(rank)
    if rank in own_any and (own is None or own[1] in PEER_LOSS_ROOTS):
        return None
    said = (f"{_launcher_name(exit_)} saw rank {rank} end by itself ({_how_it_ended(exit_)}, "
            f"{exit_.line.path}:{exit_.line.number})")
    if own is None and exit_.signal in CODE_SIGNALS and report.pids_unaccounted:
        return _Choice(None, Basis.UNDETERMINED,
                       f"{said}, but a crash by signal {exit_.signal} is one every rank running "
                       "the same code may meet, and the agent neither stopped nor reported the "
                       "workers whose pids fall between those it names: if they crashed in the "
                       "same poll, it names only the lowest local rank among them")
    if own is None and unranked_collateral is not None:
        where = unranked_collateral
        return _Choice(None, Basis.UNDETERMINED,
                       f"{said}, but a report of a failure elsewhere that names no rank "
                       f"({where.path}:{where.number}) may be its own: it may have ended "
                       "because another rank failed, which this input does not show")
    others = {r: v for r, v in own_root.items() if r != rank and v[1] not in PEER_LOSS_ROOTS}
    if others and own is None:
        other = _earliest(others, order)
        return _Choice(None, Basis.UNDETERMINED,
                       f"{said}, but its error is not in this input, while rank {other} "
                       f"failed with {others[other][1]}: which came first cannot be told")
    if others or (own is not None and _earliest(own_root, order) == rank):
        return None  # its own root cause came first, or two ranks say why: the earlier decides
    peers = sorted(r for r in own_any if r != rank)
    if peers:
        said += f"; {_ranks_named(peers)} failed after losing it"
    return _Choice(rank, Basis.EXITED_BY_ITSELF, said)


def _only_rank(seen: set[int], own_root: dict[int, tuple[Line, str]]) -> _Choice | None:
    """One rank's output is all there is: its failure is shown, not that it came first."""
    if len(seen) != 1 or set(own_root) != seen:
        return None
    rank = next(iter(seen))
    line, rule = own_root[rank]
    return _Choice(rank, Basis.ONLY_RANK_IN_INPUT,
                   f"rank {rank} is the only rank in this input ({rule}, {line.path}:"
                   f"{line.number}); the other ranks' output would show whether one of them "
                   "failed before it")


def _earliest(first: dict[int, tuple[Line, str]], order: Mapping[str, int]) -> int:
    earliest = chronological([line for line, _ in first.values()], order)[0]
    return next(r for r, (line, _) in first.items() if line is earliest)


def _first_root_cause(first_root: dict[int, tuple[Line, str]],
                      first_any: dict[int, tuple[Line, str]],
                      order: Mapping[str, int]) -> _Choice | None:
    if not first_root:
        return None
    rank = _earliest(first_root, order)
    earliest = first_root[rank][0]
    if earliest.number == 1 and rank_of_path(earliest.path) is None:
        # a log of several ranks that starts at this failure was cut there (a rank's own
        # file may well start with its error: the others' files hold their output)
        return _Choice(None, Basis.UNDETERMINED,
                       f"rank {rank} failed with a root cause ({first_root[rank][1]}, "
                       f"{earliest.path}:1), but its input begins with that line: what was "
                       "printed before it, other ranks' failures too, is cut off, so which rank "
                       "failed first cannot be told")
    others = sorted(set(first_any) - {rank})
    reason = (f"rank {rank} failed first with a root cause ({first_root[rank][1]}, "
              f"{earliest.path}:{earliest.number})")
    if others:
        reason += f"; {_ranks_named(others)} failed after it"
    return _Choice(rank, Basis.FIRST_ROOT_CAUSE, reason)


def _waited_for(first_any: dict[int, tuple[Line, str]], known: set[int],
                report: LauncherReport, order: Mapping[str, int]) -> _Choice | None:
    """Only collateral failures: the rank the others waited for, if their reports show it
    (a rank the launcher saw exit by itself did not hang: it is not the missing one)."""
    if not first_any:
        return None
    lag = _lagging_sequence(first_any)
    quiet = known - set(first_any) - {e.rank for e in report.self_exits()}
    if lag is not None:
        return _Choice(lag[0], Basis.LAGGING_SEQUENCE,
                       f"rank {lag[0]} is stuck at collective sequence number {lag[1]} while "
                       f"the others reached {lag[2]}: the others waited for it",
                       (first_any[lag[0]][0], lag[3]))
    if len(quiet) == 1:
        rank = next(iter(quiet))
        how = "was terminated by the launcher" if report.killed_by_launcher(rank) \
            else "printed no failure"
        exits = [e.line for e in report.exits if e.rank == rank]
        waiting = chronological([line for line, _ in first_any.values()], order)
        return _Choice(rank, Basis.MISSING_FROM_REPORTS,
                       f"{_ranks_named(first_any)} reported collateral failures (timeouts, "
                       f"lost peers) and rank {rank} {how}: it is the rank they waited for",
                       (*exits[:1], *waiting[:WAITING_SHOWN]))
    return None


def _nothing_said(first_any: dict[int, tuple[Line, str]]) -> _Choice:
    if not first_any:
        return _Choice(None, Basis.UNDETERMINED, "")
    return _Choice(None, Basis.UNDETERMINED,
                   f"only collateral failures on ranks {_ranks_text(first_any)}; the rank "
                   "that started it printed nothing here (add its log)")


def _signal_deaths(report: LauncherReport) -> dict[int, tuple[Line, str]]:
    """Workers killed by a signal the launcher did not send: each failed by itself."""
    return {e.rank: (e.line, f"signal {e.signal}") for e in report.self_exits()
            if e.rank is not None and e.signal and e.signal != SIGTERM}


def _first_unexplained(unexplained: Sequence[Unexplained]) -> _Choice | None:
    """With nothing else to go on, the rank of the first failure no rule explains."""
    lead = unexplained[0] if unexplained and unexplained[0].rank is not None else None
    if lead is None:
        return None
    return _Choice(lead.rank, Basis.FIRST_ROOT_CAUSE,
                   f"rank {lead.rank} failed first, with {lead.exception} "
                   f"({lead.line.path}:{lead.line.number}), which no rule explains")


def _own_failure(choice: _Choice, unexplained: Sequence[Unexplained]) -> _Choice:
    """A rank the others waited for that failed by itself did not hang: its failure says so."""
    first = {u.rank: u for u in reversed(unexplained) if u.rank is not None}
    own = first.get(choice.rank) if choice.waited_for and choice.rank is not None else None
    if own is None:
        return choice
    return _Choice(choice.rank, choice.basis,
                   f"{choice.reason}; rank {choice.rank} itself failed with {own.exception} "
                   f"({own.line.path}:{own.line.number}), which no rule explains")


def attribute_ranks(findings: list[Finding], ranks_seen: Iterable[int],
                    report: LauncherReport, order: Mapping[str, int],
                    local_only: Callable[[str], int | None],
                    unexplained: Sequence[Unexplained] = (),
                    unranked_reports: Sequence[Line] = ()) -> Attribution:
    """The initiating rank, why, and each rank's part; `unexplained` are the failures no rule
    explains (first failure first), which name the rank when no finding does;
    `unranked_reports` are reports of a failure elsewhere that name no rank (see
    engine.unranked_reports), which may be the launcher's failed worker's own. `local_only` is
    `local_only_rank`, cached for the diagnosis: its tables share most lines."""
    findings = [f for f in findings if f.rule_id not in LAUNCHER_SUMMARIES]
    # A failure its ranks trained on after did not end the run: when another root cause did,
    # the attribution reads only the failures the run ended with, on the ranks it ended.
    ended = [f._replace(first_by_rank=tuple((r, line) for r, line in f.first_by_rank
                                            if r not in f.ranks_went_on))
             for f in findings if not f.went_on]
    if any(f.role is Role.ROOT for f in ended):
        findings = ended
    roots = [f for f in findings if f.role is Role.ROOT]
    # What the ranks printed themselves, without the launcher's lines that rules also match.
    said_by_launcher = frozenset((e.line.path, e.line.number) for e in report.exits)
    own_root = _global_ranks(_first_lines(roots, order, said_by_launcher), report, local_only)
    own_any = _global_ranks(_first_lines(findings, order, said_by_launcher), report, local_only)
    unranked = [*(f.first for f in findings if f.role is Role.COLLATERAL
                  and not f.first_by_rank), *unranked_reports]
    unranked_collateral = chronological(unranked, order)[0] if unranked else None
    deaths = _signal_deaths(report)
    first_root = {**deaths, **_global_ranks(_first_lines(roots, order), report, local_only)}
    first_any = {**deaths, **_global_ranks(_first_lines(findings, order), report, local_only)}
    seen = set(ranks_seen)
    known = seen | {e.rank for e in report.exits if e.rank is not None}
    if report.world_size:
        known |= set(range(report.world_size))

    choice = (_named_by_peers(findings)
              or _all_alike(roots, first_root, first_any, order)
              or _first_across_nodes(report, own_root, own_any)
              or _exited_alike(report, own_root)
              or _exited_by_itself(report, own_root, own_any, unranked_collateral, order)
              or _only_rank(seen, own_root)
              or _first_root_cause(first_root, first_any, order)
              or _waited_for(first_any, known, report, order)
              # a worker's exit is the launcher's to read (above): here only exceptions count
              or _first_unexplained([u for u in unexplained
                                     if (u.line.path, u.line.number) not in said_by_launcher])
              or _nothing_said(first_any))
    choice = _own_failure(choice, unexplained)
    rank, reason = choice.rank, choice.reason
    elastic = report.torchelastic_root
    if elastic is not None and elastic.rank is not None and rank is not None \
            and elastic.rank != rank:
        reason += (f"; torchelastic's 'Root Cause' names rank {elastic.rank}, which only "
                   "reported the failure second-hand")

    alone = {u.rank: u.line for u in reversed(unexplained) if u.rank is not None}
    ranks = _statuses(choice, known, seen, first_root, first_any, alone, report)
    failed = in_time_order(((n, r.first_failure) for n, r in ranks.items()
                            if r.first_failure is not None), lambda item: item[1], order)
    return Attribution(rank, ranks, reason, tuple(n for n, _ in failed), choice.basis,
                       choice.waited_for, _host(rank, ranks, report))


def _host(rank: int | None, ranks: Mapping[int, RankReport],
          report: LauncherReport) -> str | None:
    """Where the rank ran: as its launcher says (torchelastic's summary, srun, mpirun), else
    the host prefix of its first failure's line (pdsh)."""
    if rank is None:
        return None
    line = ranks[rank].first_failure if rank in ranks else None
    return report.host_of(rank) or (host_prefix(line.text) if line is not None else None)


def _statuses(choice: _Choice, known: set[int], seen: set[int],
              first_root: dict[int, tuple[Line, str]], first_any: dict[int, tuple[Line, str]],
              alone: dict[int, Line], report: LauncherReport) -> dict[int, RankReport]:
    """Each rank's part: failed first, failed (first or not, unknown), failed as a
    consequence, killed, healthy or silent; `alone` are the ranks' first failures that no rule
    explains."""
    ranks: dict[int, RankReport] = {}
    ordered = choice.basis not in (Basis.ONLY_RANK_IN_INPUT, Basis.ALL_RANKS_ALIKE,
                                   Basis.UNDETERMINED)
    exited = {e.rank: e.line for e in report.self_exits() if e.rank is not None}
    ended = report.ended_by_launcher()
    for r in sorted(known | set(first_any) | set(alone)):
        if r == choice.rank or (not ordered and r in first_root):
            status = RankStatus.FAILED_FIRST if ordered else RankStatus.FAILED
            line_rule = first_root.get(r) or first_any.get(r)
            ranks[r] = RankReport(status, *line_rule) if line_rule else RankReport(
                status, alone.get(r) or exited.get(r)
                or next((e.line for e in report.exits if e.rank == r), None))
        elif r in first_any:
            ranks[r] = RankReport(RankStatus.FAILED_COLLATERAL, *first_any[r])
        elif r in exited or r in alone:
            ranks[r] = RankReport(RankStatus.FAILED, alone.get(r) or exited[r])
        elif r in ended:
            ranks[r] = RankReport(RankStatus.KILLED)
        elif r in seen:
            ranks[r] = RankReport(RankStatus.HEALTHY)
        else:
            ranks[r] = RankReport(RankStatus.SILENT)
    return ranks

"""Which rank started the failure, and what every rank did.

The initiating rank is the one whose root-cause failure came first. Collateral reports (peer
timeouts, lost connections, the launcher's SIGTERMs) never start a failure. When no rank says
why, the answer comes from the shape of the reports: the rank the others name in a collective
mismatch, the rank whose collective sequence number lags, or the one rank that is missing from
everyone's timeout reports (the rank they waited for); failing that, the rank of the first
failure no rule explains. When every rank failed alike at once, no rank is blamed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import TypeVar

from trainmedic.logs.launcher import SIGTERM, LauncherReport
from trainmedic.model import Finding, Line, RankReport, RankStatus, Role, Unexplained

SIMULTANEOUS_SECONDS = 1.0
WAITING_SHOWN = 4  # the other ranks' reports cited for a rank they waited for
_MISMATCH_PEER = re.compile(r"but Rank (\d{1,6}) is running collective")
_SEQ = re.compile(r"SeqNum=(\d{1,12})")
T = TypeVar("T")


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
    """Items in the order their lines happened (see `chronological`)."""
    def compare(a: T, b: T) -> int:
        return _compare(line_of(a), line_of(b), order)

    return sorted(items, key=cmp_to_key(compare))


def before(a: Line, b: Line, order: Mapping[str, int]) -> bool:
    """`a` happened before `b`."""
    return _compare(a, b, order) < 0


@dataclass(frozen=True)
class Attribution:
    rank: int | None
    ranks: dict[int, RankReport]
    reason: str
    failure_order: tuple[int, ...] = ()  # the ranks that failed, first failure first
    # The lines that show the others waited for `rank` (its own lagging report first): set
    # when that is how the rank was found and it did not fail by itself.
    waited_for: tuple[Line, ...] = ()


def _first_lines(findings: Iterable[Finding], order: Mapping[str, int]
                 ) -> dict[int, tuple[Line, str]]:
    table: dict[int, tuple[Line, str]] = {}
    for finding in findings:
        for rank, line in finding.first_by_rank:
            current = table.get(rank)
            if current is None or _compare(line, current[0], order) < 0:
                table[rank] = (line, finding.rule_id)
    return table


def _ranks_text(ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    shown = ", ".join(map(str, ranks[:8]))
    return shown + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _named_by_mismatch(findings: list[Finding]) -> tuple[int, int] | None:
    """The rank that the other ranks' collective-mismatch reports name, and by how many."""
    votes: Counter[int] = Counter()
    for finding in findings:
        for line in finding.evidence:
            peers = {int(p) for p in _MISMATCH_PEER.findall(line.text)}
            votes.update(peers - ({line.rank} if line.rank is not None else set()))
    ranked = votes.most_common(2)
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


def attribute_ranks(findings: list[Finding], ranks_seen: Iterable[int],
                    report: LauncherReport, order: Mapping[str, int],
                    unexplained: Sequence[Unexplained] = ()) -> Attribution:
    """The initiating rank, why, and each rank's part; `unexplained` are the failures no rule
    explains (first failure first), which name the rank when no finding does."""
    roots = [f for f in findings if f.role is Role.ROOT]
    first_root = _first_lines(roots, order)
    first_any = _first_lines(findings, order)
    for exit_ in report.exits:
        # A worker killed by a signal the launcher did not send failed by itself.
        if exit_.rank is not None and exit_.signal and exit_.signal != SIGTERM \
                and exit_.rank not in first_root:
            first_root[exit_.rank] = first_any[exit_.rank] = (exit_.line, f"signal {exit_.signal}")
    seen = set(ranks_seen)
    known = seen | {e.rank for e in report.exits if e.rank is not None}
    if report.world_size:
        known |= set(range(report.world_size))

    first_unexplained = {u.rank: u for u in reversed(unexplained) if u.rank is not None}
    lead = unexplained[0] if unexplained and unexplained[0].rank is not None else None
    rank: int | None = None
    reason = ""
    waited_for: tuple[Line, ...] = ()
    mismatch = _named_by_mismatch([f for f in findings if f.rule_id == "collective-mismatch"])
    if mismatch is not None:
        rank = mismatch[0]
        reason = (f"{mismatch[1]} ranks report a collective mismatch naming rank {rank} as the "
                  "one running a different collective")
    elif first_root and roots and _alike(roots[0], first_any, order):
        reason = (f"ranks {_ranks_text(dict(roots[0].first_by_rank))} all failed with "
                  f"{roots[0].rule_id} at the same time: the cause is common to every rank "
                  "(code, data or configuration), no single rank started it")
    elif first_root:
        earliest = chronological([line for line, _ in first_root.values()], order)[0]
        rank = next(r for r, (line, _) in first_root.items() if line is earliest)
        others = sorted(set(first_any) - {rank})
        reason = (f"rank {rank} failed first with a root cause ({first_root[rank][1]}, "
                  f"{earliest.path}:{earliest.number})")
        if others:
            reason += f"; ranks {_ranks_text(others)} failed after it"
    elif first_any:
        rank, reason, waited_for = _from_collateral(first_any, known, report, order,
                                                    first_unexplained, lead)
    elif lead is not None:
        rank, reason = lead.rank, _unexplained_reason(lead)

    elastic = report.torchelastic_root
    if elastic is not None and elastic.rank is not None and rank is not None \
            and elastic.rank != rank:
        reason += (f"; torchelastic's 'Root Cause' names rank {elastic.rank}, which only "
                   "reported the failure second-hand")

    alone = {r: u.line for r, u in first_unexplained.items()}
    ranks = _statuses(rank, known, seen, first_root, first_any, alone, report)
    failed = [(n, r.first_failure) for n, r in ranks.items() if r.first_failure is not None]

    def earlier(a: tuple[int, Line], b: tuple[int, Line]) -> int:
        return _compare(a[1], b[1], order)

    failed.sort(key=cmp_to_key(earlier))
    return Attribution(rank, ranks, reason, tuple(n for n, _ in failed), waited_for)


def _from_collateral(first_any: dict[int, tuple[Line, str]], known: set[int],
                     report: LauncherReport, order: Mapping[str, int],
                     first_unexplained: Mapping[int, Unexplained], lead: Unexplained | None
                     ) -> tuple[int | None, str, tuple[Line, ...]]:
    """With collateral reports only: the rank the others waited for (and the lines that show
    it), else the rank of the first failure no rule explains."""
    rank: int | None = None
    waited_for: tuple[Line, ...] = ()
    lag = _lagging_sequence(first_any)
    quiet = known - set(first_any)
    if lag is not None:
        rank = lag[0]
        reason = (f"rank {rank} is stuck at collective sequence number {lag[1]} while the "
                  f"others reached {lag[2]}: the others waited for it")
        waited_for = (first_any[rank][0], lag[3])
    elif len(quiet) == 1:
        rank = next(iter(quiet))
        how = "was terminated by the launcher" if report.killed_by_launcher(rank) \
            else "printed no failure"
        reason = (f"ranks {_ranks_text(first_any)} reported collateral failures (timeouts, "
                  f"lost peers) and rank {rank} {how}: it is the rank they waited for")
        exits = [e.line for e in report.exits if e.rank == rank]
        waiting = chronological([line for line, _ in first_any.values()], order)
        waited_for = (*exits[:1], *waiting[:WAITING_SHOWN])
    elif lead is not None:
        return lead.rank, _unexplained_reason(lead), ()
    else:
        return None, (f"only collateral failures on ranks {_ranks_text(first_any)}; the rank "
                      "that started it printed nothing here (add its log)"), ()
    if rank is not None and rank in first_unexplained:
        own = first_unexplained[rank]
        reason += (f"; rank {rank} itself failed with {own.exception} "
                   f"({own.line.path}:{own.line.number}), which no rule explains")
        waited_for = ()
    return rank, reason, waited_for


def _unexplained_reason(failure: Unexplained) -> str:
    return (f"rank {failure.rank} failed first, with {failure.exception} "
            f"({failure.line.path}:{failure.line.number}), which no rule explains")


def _statuses(rank: int | None, known: set[int], seen: set[int],
              first_root: dict[int, tuple[Line, str]], first_any: dict[int, tuple[Line, str]],
              alone: dict[int, Line], report: LauncherReport) -> dict[int, RankReport]:
    """Each rank's part: failed first, failed as a consequence, killed, healthy or silent;
    `alone` are the ranks' first failures that no rule explains."""
    ranks: dict[int, RankReport] = {}
    for r in sorted(known | set(first_any) | set(alone)):
        if r == rank:
            line_rule = first_root.get(r) or first_any.get(r)
            exit_line = next((e.line for e in report.exits if e.rank == r), None)
            ranks[r] = RankReport(RankStatus.FAILED_FIRST,
                                  line_rule[0] if line_rule else alone.get(r, exit_line),
                                  line_rule[1] if line_rule else None)
        elif r in first_any:
            ranks[r] = RankReport(RankStatus.FAILED_COLLATERAL, *first_any[r])
        elif r in alone:
            ranks[r] = RankReport(RankStatus.FAILED_COLLATERAL, alone[r])
        elif report.killed_by_launcher(r):
            ranks[r] = RankReport(RankStatus.KILLED)
        elif r in seen:
            ranks[r] = RankReport(RankStatus.HEALTHY)
        else:
            ranks[r] = RankReport(RankStatus.SILENT)
    return ranks

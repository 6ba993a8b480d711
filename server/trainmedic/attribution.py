"""Which rank started the failure, and what every rank did.

A first version: the initiating rank is the rank of the earliest root-cause evidence; ranks
with only collateral evidence, or root evidence after it, failed as a consequence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cmp_to_key

from trainmedic.model import Finding, Line, RankReport, RankStatus, Role


def _compare(a: Line, b: Line, order: Mapping[str, int]) -> int:
    if a.path == b.path:
        return (a.number > b.number) - (a.number < b.number)
    if a.timestamp is not None and b.timestamp is not None and a.timestamp != b.timestamp:
        return -1 if a.timestamp < b.timestamp else 1
    pa, pb = order.get(a.path, 0), order.get(b.path, 0)
    return (pa > pb) - (pa < pb) or (a.number > b.number) - (a.number < b.number)


def chronological(lines: Iterable[Line], order: Mapping[str, int]) -> list[Line]:
    """Lines in the order they happened: line order within a file, timestamps across files."""
    def compare(a: Line, b: Line) -> int:
        return _compare(a, b, order)

    return sorted(lines, key=cmp_to_key(compare))


def attribute_ranks(findings: list[Finding], ranks_seen: Iterable[int],
                    order: Mapping[str, int]) -> tuple[int | None, dict[int, RankReport]]:
    first_root: dict[int, Line] = {}
    first_any: dict[int, Line] = {}
    for finding in findings:
        for line in finding.evidence:
            if line.rank is None:
                continue
            for table in (first_any,) + ((first_root,) if finding.role is Role.ROOT else ()):
                current = table.get(line.rank)
                if current is None or _compare(line, current, order) < 0:
                    table[line.rank] = line
        if finding.role is Role.ROOT and finding.rank is not None:
            line = finding.first
            current = first_root.get(finding.rank)
            if current is None or _compare(line, current, order) < 0:
                first_root[finding.rank] = line
    initiating = None
    if first_root:
        earliest = chronological(first_root.values(), order)[0]
        initiating = next(r for r, line in first_root.items() if line is earliest)
    ranks: dict[int, RankReport] = {}
    for rank in sorted(set(ranks_seen) | first_any.keys()):
        if rank == initiating:
            ranks[rank] = RankReport(RankStatus.FAILED_FIRST, first_root[rank])
        elif rank in first_any:
            ranks[rank] = RankReport(RankStatus.FAILED_COLLATERAL, first_any[rank])
        else:
            ranks[rank] = RankReport(RankStatus.HEALTHY)
    return initiating, ranks

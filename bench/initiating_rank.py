"""Initiating-rank accuracy on the labelled multi-rank logs, per launcher and per basis, against
two baselines.

Usage: python bench/initiating_rank.py [CORPUS_DIR]

Every labels.yaml under CORPUS_DIR (at any depth) is read. Logs whose label settles the rank are
scored; on logs labelled `initiating_rank: null` an answer is acceptable when it names no rank
or says why it cannot be first (only-rank-in-input, all-ranks-alike, undetermined).
Baselines, measured in the same run on the same parsed input:
  elastic  the rank of torchelastic's "Root Cause (first observed failure)" (where printed)
  first-tb the rank of the first Python traceback in the log (where one has a rank)
A baseline that has no answer for a log counts as wrong on it; the "applies" columns count only
the logs where it has one. The launcher of a log is the one whose lines were read in it.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.logs.formats import Source
from trainmedic.logs.launcher import read_report
from trainmedic.model import Basis

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
UNCLAIMED = {Basis.ONLY_RANK_IN_INPUT, Basis.ALL_RANKS_ALIKE, Basis.UNDETERMINED}


@dataclass(frozen=True)
class Row:
    name: str
    expected: int | None
    ours: int | None
    basis: Basis
    elastic: int | None
    first_tb: int | None
    launcher: str

    @property
    def right(self) -> bool:
        if self.expected is None:
            return self.ours is None or self.basis in UNCLAIMED
        return self.ours == self.expected


def answer(path: Path, expected: int | None, name: str) -> Row:
    diagnoser = Diagnoser(bundled())
    with path.open("rb") as stream:
        diagnoser.read(Source(str(path), stream))
    diagnosis = diagnoser.diagnosis()
    report = read_report(diagnoser.evidence.launcher)
    root = report.torchelastic_root
    ranked = sorted((t for t in diagnoser.evidence.tracebacks if t.rank is not None),
                    key=lambda t: t.first_line)
    launchers = sorted({e.launcher for e in report.exits}) or ["(prefixes only)"]
    return Row(name, expected, diagnosis.initiating_rank, diagnosis.initiating_basis,
               root.rank if root else None, ranked[0].rank if ranked else None,
               "+".join(launchers))


def rows(corpus: Path) -> list[Row]:
    found = []
    # "*/" too: a folder given as a symlink is followed (a "**" walk does not follow links)
    for labels in sorted({*corpus.glob("*/labels.yaml"), *corpus.glob("**/labels.yaml")}):
        for case in yaml.safe_load(labels.read_text("utf-8")):
            if case.get("multi_rank"):
                name = f"{labels.parent.relative_to(corpus)}/{case['file']}"
                found.append(answer(labels.parent / case["file"], case.get("initiating_rank"),
                                    name))
    return found


def _show(value: int | None, row: Row) -> str:
    if value is None:
        return "-"
    return str(value) + ("" if row.expected is None or value == row.expected else "✗")


def _share(right: int, total: int) -> str:
    return f"{right}/{total} = {100 * right / total:.0f}%" if total else "0/0"


def _table(title: str, groups: dict[str, list[Row]]) -> None:
    print(f"\n{title:<28} right/total")
    for key, members in sorted(groups.items()):
        print(f"  {key:<26} {_share(sum(r.right for r in members), len(members))}")


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    found = rows(corpus)
    settled = [r for r in found if r.expected is not None]
    unsettled = [r for r in found if r.expected is None]
    print(f"{'log':<34} {'expected':>8} {'trainmedic':>10} {'basis':<21} {'elastic':>7} "
          f"{'first-tb':>8}  launcher")
    for row in found:
        expected = "null" if row.expected is None else str(row.expected)
        ours = _show(row.ours, row) + ("" if row.right else " ✗")
        print(f"{row.name:<34} {expected:>8} {ours:>10} {row.basis.value:<21} "
              f"{_show(row.elastic, row):>7} {_show(row.first_tb, row):>8}  {row.launcher}")
    right = sum(r.right for r in settled)
    print(f"\nsettled by the label: trainmedic {_share(right, len(settled))}")
    for label, value in (("elastic", lambda r: r.elastic), ("first-tb", lambda r: r.first_tb)):
        applies = [r for r in settled if value(r) is not None]
        theirs = sum(value(r) == r.expected for r in settled)
        ours = sum(r.right for r in applies)
        print(f"  {label:<9} {_share(theirs, len(settled))} overall; on the {len(applies)} logs "
              f"where it answers: trainmedic {ours}, {label} "
              f"{sum(value(r) == r.expected for r in applies)}")
    print(f"null in the label: acceptable {_share(sum(r.right for r in unsettled), len(unsettled))}"
          " (no rank, or a basis that claims no order)")
    by_launcher: dict[str, list[Row]] = defaultdict(list)
    by_basis: dict[str, list[Row]] = defaultdict(list)
    for row in found:
        by_launcher[row.launcher].append(row)
        by_basis[row.basis.value].append(row)
    _table("per launcher (all labels)", by_launcher)
    _table("per basis (all labels)", by_basis)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

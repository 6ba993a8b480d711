"""Initiating-rank accuracy on the labelled multi-rank corpus logs, against two baselines.

Usage: python bench/initiating_rank.py [CORPUS_DIR]

Baselines, measured in the same run on the same parsed input:
  elastic  the rank of torchelastic's "Root Cause (first observed failure)" (where printed)
  first-tb the rank of the first Python traceback in the log (where one has a rank)
A baseline that has no answer for a log counts as wrong on it; the "applies" columns count only
the logs where it has one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.logs.formats import Source
from trainmedic.logs.launcher import read_report

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def answers(path: Path) -> tuple[int | None, int | None, int | None]:
    diagnoser = Diagnoser(bundled())
    with path.open("rb") as stream:
        diagnoser.read(Source(str(path), stream))
    ours = diagnoser.diagnosis().initiating_rank
    root = read_report(diagnoser.evidence.launcher).torchelastic_root
    ranked = sorted((t for t in diagnoser.evidence.tracebacks if t.rank is not None),
                    key=lambda t: t.first_line)
    return ours, root.rank if root else None, ranked[0].rank if ranked else None


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    rows = []
    for labels in sorted(corpus.glob("*/labels.yaml")):
        for case in yaml.safe_load(labels.read_text("utf-8")):
            if case.get("multi_rank") and case.get("initiating_rank") is not None:
                expected = case["initiating_rank"]
                got = answers(labels.parent / case["file"])
                rows.append((f"{labels.parent.name}/{case['file']}", expected, *got))
    print(f"{'log':<22} {'expected':>8} {'trainmedic':>10} {'elastic':>8} {'first-tb':>8}")
    def show(value: int | None, expected: int) -> str:
        return "-" if value is None else str(value) + ("" if value == expected else "✗")

    for name, expected, ours, elastic, first in rows:
        print(f"{name:<22} {expected:>8} {show(ours, expected):>10} "
              f"{show(elastic, expected):>8} {show(first, expected):>8}")
    total = len(rows)
    print()
    for column, label in ((2, "trainmedic"), (3, "elastic"), (4, "first-tb")):
        right = sum(row[column] == row[1] for row in rows)
        applies = [row for row in rows if row[column] is not None]
        print(f"{label:<11} {right}/{total} = {100 * right / total:.0f}% overall; "
              f"{sum(r[column] == r[1] for r in applies)}/{len(applies)} where it answers")
    for column, label in ((3, "elastic"), (4, "first-tb")):
        subset = [row for row in rows if row[column] is not None]
        ours = sum(row[2] == row[1] for row in subset)
        theirs = sum(row[column] == row[1] for row in subset)
        print(f"on the {len(subset)} logs where {label} answers: trainmedic {ours}, "
              f"{label} {theirs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

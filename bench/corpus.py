"""Accuracy of the first diagnosis on the labelled corpus, per id and in total.

Usage: python bench/corpus.py [CORPUS_DIR] [--json]
CORPUS_DIR defaults to ../shared/corpus beside this repository. A log counts as right when the
first root cause (or, with none, the first finding) is its expected id or one of its also_ok
ids; healthy logs are right when no root cause is reported.

A root cause fired by the rank attribution (collective-hang: the rank the others waited for) is
read off the collateral reports that labels written before it existed name (nccl-timeout): there
the finding after it counts too, and such logs are counted apart ("via attribution").
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.inputs import opened

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def evaluate(corpus: Path) -> list[dict[str, object]]:
    catalogue = bundled()
    rows: list[dict[str, object]] = []
    for labels in sorted(corpus.glob("*/labels.yaml")):
        for case in yaml.safe_load(labels.read_text("utf-8")):
            path = labels.parent / case["file"]
            with opened([str(path)]) as streams:
                diagnosis = diagnose(streams, catalogue)
            ids = [f.rule_id for f in diagnosis.findings]
            first = ids[0] if ids else None
            accepted = {case["expected"], *(case.get("also_ok") or [])}
            rule = catalogue.get(first) if first else None
            via = first not in accepted and rule is not None and rule.attribution is not None \
                and len(ids) > 1 and ids[1] in accepted
            rows.append({
                "file": f"{labels.parent.name}/{case['file']}",
                "expected": case["expected"], "got": first, "ok": first in accepted or via,
                "via_attribution": via,
                "expected_rank": case.get("initiating_rank"),
                "rank": diagnosis.initiating_rank,
                "ids": [f.rule_id for f in diagnosis.findings][:4],
            })
    for path in sorted((corpus / "healthy").glob("*.log")):
        with opened([str(path)]) as streams:
            diagnosis = diagnose(streams, catalogue)
        roots = [f.rule_id for f in diagnosis.root_causes]
        rows.append({"file": f"healthy/{path.name}", "expected": "(no root cause)",
                     "got": roots[0] if roots else None, "ok": not roots,
                     "expected_rank": None, "rank": diagnosis.initiating_rank, "ids": roots})
    return rows


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    corpus = Path(args[0]) if args else DEFAULT
    rows = evaluate(corpus)
    if not rows:  # a folder of logs, not a corpus: its labels sit one level up
        print(f"corpus: no */labels.yaml and no healthy/*.log under {corpus}", file=sys.stderr)
        return 2
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return 0
    by_id: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        by_id[str(row["expected"])].append(bool(row["ok"]))
        if not row["ok"]:
            print(f"MISS {row['file']}: expected {row['expected']}, got {row['got']} "
                  f"(all: {row['ids']})")
    print(f"\n{'expected id':<28} right/total")
    for rule_id, oks in sorted(by_id.items()):
        print(f"{rule_id:<28} {sum(oks)}/{len(oks)}")
    right = sum(bool(r["ok"]) for r in rows)
    via = [str(r["file"]) for r in rows if r.get("via_attribution")]
    strict = right - len(via)
    print(f"{'TOTAL':<28} {right}/{len(rows)} = {100 * right / len(rows):.1f}%"
          + (f" ({len(via)} via attribution: {', '.join(via)}; strictly "
             f"{strict}/{len(rows)} = {100 * strict / len(rows):.1f}%)" if via else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

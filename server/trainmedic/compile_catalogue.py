"""Compile `rules/` (YAML, validated) into the JSON catalogue the package loads at start.

Parsing every YAML file with the pure-Python loader is too slow for a command-line start, so the
bundled rules ship pre-compiled; a test regenerates this file and fails when it is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trainmedic.catalogue import CATALOGUE_RESOURCE, load_pack

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"
OUTPUT = Path(__file__).resolve().parent / "data" / CATALOGUE_RESOURCE


def compile_rules(rules_dir: Path = RULES_DIR) -> str:
    import yaml

    catalogue = load_pack(rules_dir)  # validates every file, raising RuleError on the first bad one
    rules: list[dict[str, Any]] = []
    for rule in sorted(catalogue.rules, key=lambda r: (r.category, r.id)):
        data = yaml.safe_load((rules_dir.parent / rule.source).read_text("utf-8"))
        data["source"] = rule.source
        rules.append(data)
    return json.dumps({"rules": rules}, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    OUTPUT.write_text(compile_rules(), "utf-8")
    print(f"wrote {OUTPUT.relative_to(RULES_DIR.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

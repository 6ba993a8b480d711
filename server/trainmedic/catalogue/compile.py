"""Compile `rules/` (YAML, validated) into what is generated from it: the JSON catalogue the
package loads at start, and the Markdown reference under `docs/catalogue/`.

Parsing every YAML file with the pure-Python loader is too slow for a command-line start, so the
bundled rules ship pre-compiled; a test regenerates both and fails when either is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trainmedic.catalogue.rules import CATALOGUE_RESOURCE, Catalogue, RuleError, load_pack
from trainmedic.render.text import rule_markdown

RULES_DIR = Path(__file__).resolve().parents[3] / "rules"
OUTPUT = Path(__file__).resolve().parent / "data" / CATALOGUE_RESOURCE
DOCS = RULES_DIR.parent / "docs" / "catalogue"


def compile_rules(rules_dir: Path = RULES_DIR) -> str:
    import yaml

    catalogue = load_pack(rules_dir)  # validates every file, raising RuleError on the first bad one
    rules: list[dict[str, Any]] = []
    for rule in sorted(catalogue.rules, key=lambda r: (r.category, r.id)):
        data = yaml.safe_load((rules_dir.parent / rule.source).read_text("utf-8"))
        data["source"] = rule.source
        rules.append(data)
    return json.dumps({"rules": rules}, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def reference_pages(catalogue: Catalogue) -> dict[str, str]:
    """File name → Markdown: one page per rule and an index by category."""
    pages = {f"{rule.id}.md": rule_markdown(rule) for rule in catalogue.rules}
    index = ["# The trainmedic catalogue", "",
             f"{len(catalogue.rules)} failure modes. Generated from `rules/` by "
             "`make catalogue`; do not edit by hand.", ""]
    for category in sorted({rule.category for rule in catalogue.rules}):
        index += [f"## {category}", ""]
        index += [f"- [{rule.title}]({rule.id}.md) `{rule.id}`"
                  + (" (collateral)" if rule.role.value == "collateral" else "")
                  for rule in sorted(catalogue.rules, key=lambda r: r.id)
                  if rule.category == category]
        index.append("")
    pages["README.md"] = "\n".join(index)
    return pages


def main() -> int:
    try:
        compiled = compile_rules()
    except RuleError as error:
        print(f"invalid rule: {error}", file=sys.stderr)
        return 1
    OUTPUT.write_text(compiled, "utf-8")
    DOCS.mkdir(parents=True, exist_ok=True)
    pages = reference_pages(load_pack(RULES_DIR))
    for stale in {p.name for p in DOCS.glob("*.md")} - pages.keys():
        (DOCS / stale).unlink()
    for name, text in pages.items():
        (DOCS / name).write_text(text, "utf-8")
    print(f"wrote {OUTPUT.relative_to(RULES_DIR.parent)} and {len(pages)} pages in "
          f"{DOCS.relative_to(RULES_DIR.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

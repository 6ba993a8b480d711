"""Catalogue → its Markdown reference under `docs/catalogue/`: a page per rule and an index.

Run by `make catalogue` after `catalogue.compile`; a test fails when the pages are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainmedic.catalogue.load import load_pack
from trainmedic.catalogue.rules import Catalogue, RuleError
from trainmedic.render.markdown import rule_markdown

RULES_DIR = Path(__file__).resolve().parents[3] / "rules"
DOCS = RULES_DIR.parent / "docs" / "catalogue"


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
        pages = reference_pages(load_pack(RULES_DIR))
    except RuleError as error:
        print(f"invalid rule: {error}", file=sys.stderr)
        return 1
    DOCS.mkdir(parents=True, exist_ok=True)
    for stale in {p.name for p in DOCS.glob("*.md")} - pages.keys():
        (DOCS / stale).unlink()
    for name, text in pages.items():
        (DOCS / name).write_text(text, "utf-8")
    print(f"wrote {len(pages)} pages in {DOCS.relative_to(RULES_DIR.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

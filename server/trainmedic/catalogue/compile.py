"""Compile `rules/` (YAML, validated) into the JSON catalogue the package loads at start and
the JSON of the rules' examples beside it, and write the detector and attribution parts of the
published rule schema from their registries.

Parsing every YAML file with the pure-Python loader is too slow for a command-line start, so the
bundled rules ship pre-compiled; a test regenerates the files and fails when one is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trainmedic.catalogue.load import (
    CATALOGUE_RESOURCE,
    DATA,
    EXAMPLES_RESOURCE,
    SCHEMA_RESOURCE,
    load_pack,
)
from trainmedic.catalogue.rules import ATTRIBUTIONS, RuleError
from trainmedic.metrics.detectors.registry import DETECTORS

RULES_DIR = Path(__file__).resolve().parents[3] / "rules"
OUTPUT = Path(DATA, CATALOGUE_RESOURCE)
EXAMPLES = Path(DATA, EXAMPLES_RESOURCE)
SCHEMA = Path(DATA, SCHEMA_RESOURCE)


def compile_rules(rules_dir: Path = RULES_DIR) -> tuple[str, str]:
    """The JSON of the catalogue, and of its rules' examples (by rule id)."""
    import yaml

    catalogue = load_pack(rules_dir)  # validates every file, raising RuleError on the first bad one
    rules: list[dict[str, Any]] = []
    examples: dict[str, Any] = {}
    for rule in sorted(catalogue.rules, key=lambda r: (r.category, r.id)):
        data = yaml.safe_load((rules_dir.parent / rule.source).read_text("utf-8"))
        data["source"] = rule.source
        examples[rule.id] = data.pop("examples")
        rules.append(data)
    return _dumped({"rules": rules}), _dumped(examples)


def _dumped(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def schema_text(current: str) -> str:
    """The schema with its detector names and parameters as the registry declares them, and
    the attribution results a rule can fire from as the rules model declares them."""
    schema = json.loads(current)
    schema["properties"]["attribution"]["properties"]["when"] = {
        "enum": list(ATTRIBUTIONS),
        "description": "; ".join(f"{name}: {means}" for name, means in ATTRIBUTIONS.items())}
    item = schema["properties"]["detectors"]["items"]["properties"]
    item["name"] = {"enum": list(DETECTORS),
                    "description": "; ".join(f"{name}: {d.MEANS}" for name, d in DETECTORS.items())}
    item["params"] = {
        "type": "object", "additionalProperties": {"type": "number"},
        "description": "Overrides of the detector's defaults: " + "; ".join(
            f"{name}: " + ", ".join(f"{k}={v:g}" for k, v in d.DEFAULTS.items())
            for name, d in DETECTORS.items())}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    SCHEMA.write_text(schema_text(SCHEMA.read_text("utf-8")), "utf-8")
    try:
        compiled, examples = compile_rules()
    except RuleError as error:
        print(f"invalid rule: {error}", file=sys.stderr)
        return 1
    OUTPUT.write_text(compiled, "utf-8")
    EXAMPLES.write_text(examples, "utf-8")
    print(f"wrote {SCHEMA.relative_to(RULES_DIR.parent)}, "
          f"{OUTPUT.relative_to(RULES_DIR.parent)} and "
          f"{EXAMPLES.relative_to(RULES_DIR.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

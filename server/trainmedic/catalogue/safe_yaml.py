"""YAML read with limits, for rule packs and training configs that may come from anyone.

PyYAML's SafeLoader constructs only plain data, but it still follows aliases (a 300-byte
"billion laughs" document expands to a tree of billions of nodes for whoever walks it) and
composes nested collections recursively (a 50,000-deep document ends in RecursionError). This
loader refuses aliases (no rule pack, Accelerate or DeepSpeed config needs them: they are
flat mappings a few levels deep), refuses nesting deeper than `MAX_DEPTH` and files larger than
`MAX_BYTES`, each as a `yaml.YAMLError` with the mark of the offending node, so every caller
reports it through the path it already has for invalid YAML.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 64
MAX_BYTES = 1 << 20


class LimitError(yaml.YAMLError):
    """A document over one of the limits; `problem` and `problem_mark` as PyYAML's own."""

    def __init__(self, problem: str, problem_mark: Any) -> None:
        super().__init__(problem)
        self.problem, self.problem_mark = problem, problem_mark


class LimitedLoader(yaml.SafeLoader):
    """SafeLoader without aliases and with bounded nesting (size is checked on the text)."""

    def __init__(self, stream: str) -> None:
        if len(stream) > MAX_BYTES:
            raise LimitError(f"larger than {MAX_BYTES >> 20} MiB, not a rule or config", None)
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise LimitError(f"aliases are not allowed (*{event.anchor})", event.start_mark)
        if self.depth >= MAX_DEPTH:
            raise LimitError(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def compose_and_load(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree of a one-document YAML text (for line numbers) and its data, within the
    limits."""
    loader = LimitedLoader(text)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()

"""A rule's examples, its own test cases, as records: made only where examples are read (see
`rules.Catalogue.examples`), never on a diagnosis's way.

Annotations are evaluated, as in `model`, for the records' sake.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple


class Example(NamedTuple):
    text: str
    source: str


class Examples(NamedTuple):
    """A rule's own test cases: lines it must fire on, and look-alikes it must not."""

    match: tuple[Example, ...]
    no_match: tuple[Example, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Examples":
        return cls(tuple(Example(e["text"], e["source"]) for e in data["match"]),
                   tuple(Example(e["text"], e["source"]) for e in data["no_match"]))


NO_EXAMPLES = Examples((), ())

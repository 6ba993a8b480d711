"""Inline suppression: `# trainmedic: ignore[TM104]`, or a bare `# trainmedic: ignore`.

The comment counts on the finding's first line, or on the line that ends it when that line
is continued with a backslash (a comment cannot follow a `\\`, so it goes at the end of the
logical line). JSON has no comments, so findings there cannot be suppressed inline.
"""

from __future__ import annotations

import re

from trainmedic.checks.findings import CheckFinding, Position, Range, TextEdit

IGNORE = re.compile(r"#\s*trainmedic:\s*ignore\b(?:\[([^\]]*)\])?")


def _logical(lines: list[str], line: int) -> range:
    end = line
    while end + 1 < len(lines) and lines[end].rstrip().endswith("\\"):
        end += 1
    return range(line, end + 1)


def suppressed(lines: list[str], finding: CheckFinding) -> bool:
    for number in _logical(lines, finding.range.start.line):
        for match in IGNORE.finditer(lines[number]):
            codes = match.group(1)
            if codes is None or finding.code in {c.strip() for c in codes.split(",")}:
                return True
    return False


def ignore_edit(path: str, lines: list[str], finding: CheckFinding) -> TextEdit | None:
    """The edit that suppresses `finding` where it is; None where no comment can go."""
    if path.endswith(".json"):
        return None
    number = _logical(lines, finding.range.start.line)[-1]
    line = lines[number]
    if line.rstrip().endswith("\\"):
        return None
    existing = next((m for m in IGNORE.finditer(line) if m.group(1) is not None), None)
    if existing:
        at = Position(number, existing.end(1))
        return TextEdit(Range(at, at), f", {finding.code}")
    end = len(line.rstrip())
    return TextEdit(Range(Position(number, end), Position(number, len(line))),
                    f"  # trainmedic: ignore[{finding.code}]")

"""What checks produce and sources are read into: lines, positions, edits, findings.

Positions are 0-based lines and columns counted in code points, the way Python indexes a
`str`, over the lines `split_lines` cuts; the language server converts them to the client's
encoding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

NEWLINES = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines as Python, editors and LSP count them (`\\n`, `\\r\\n` or `\\r`)."""
    return NEWLINES.split(text)


@dataclass(frozen=True, order=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class TextEdit:
    """Replace `range` with `new_text` (an insertion when the range is empty)."""

    range: Range
    new_text: str


class Severity(str, Enum):
    WARNING = "warning"
    INFORMATION = "information"


@dataclass(frozen=True)
class CheckFinding:
    """One risky spot: its check code, the catalogue entry it links to, where, and a fix.

    `fix` is every edit needed for this one finding, applied together; None when no rewrite
    is safe to make without knowing more than the file says.
    """

    code: str
    rule_id: str
    message: str
    severity: Severity
    range: Range
    fix: tuple[TextEdit, ...] | None = None


# A script or config longer than this is generated (a protobuf module, a data dump), not
# written: parsing and checking it would cost seconds and hundreds of MB at every edit.
MAX_CHECKED_CHARS = 1 << 20


class CheckError(Exception):
    """A file the checks cannot read (a syntax error); `str()` is the one line a user sees."""

    def __init__(self, message: str, line: int = 0, character: int = 0) -> None:
        super().__init__(message)
        self.line, self.character = line, character

"""What every check shares: positions, edits, findings, and the `Check` base class.

Positions are 0-based lines and columns counted in code points, the way Python indexes a
`str`; the language server converts them to the client's encoding.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from trainmedic.checks.sources.config import ConfigDocument
    from trainmedic.checks.sources.python import PythonSource
    from trainmedic.checks.sources.shell import ShellScript


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


class CheckError(Exception):
    """A file the checks cannot read (a syntax error); `str()` is the one line a user sees."""

    def __init__(self, message: str, line: int = 0, character: int = 0) -> None:
        super().__init__(message)
        self.line, self.character = line, character


SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")
_HEADING = re.compile(r"^## (.+?)\s*$", re.MULTILINE)


class Check:
    """A check: a code, the catalogue entry it links to, and its own documentation.

    Subclasses override the reader for each kind of file they look at; the docstring holds the
    sections of `SECTIONS` as `## ` headings, which the docs and the hover are rendered from.
    """

    code: ClassVar[str]
    rule_id: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING

    def python(self, src: PythonSource) -> Iterable[CheckFinding]:
        return ()

    def config(self, doc: ConfigDocument) -> Iterable[CheckFinding]:
        return ()

    def shell(self, script: ShellScript) -> Iterable[CheckFinding]:
        return ()

    def finding(self, range_: Range, message: str,
                fix: Iterable[TextEdit] | None = None) -> CheckFinding:
        return CheckFinding(self.code, self.rule_id, message, self.severity, range_,
                            tuple(fix) if fix is not None else None)

    @classmethod
    def summary(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "").split("\n", 1)[0]

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's `## ` sections by heading, in order."""
        text = inspect.cleandoc(cls.__doc__ or "")
        heads = list(_HEADING.finditer(text))
        return {head.group(1): text[head.end():nxt.start() if nxt else len(text)].strip()
                for head, nxt in zip(heads, [*heads[1:], None], strict=True)}

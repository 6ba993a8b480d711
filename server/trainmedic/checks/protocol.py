"""The `Check` base class: a code, the catalogue entry it links to, its documentation."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from trainmedic.checks.findings import CheckFinding, Range, Severity, TextEdit

if TYPE_CHECKING:
    from trainmedic.checks.sources.config import ConfigDocument
    from trainmedic.checks.sources.python import PythonSource
    from trainmedic.checks.sources.shell import ShellScript


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

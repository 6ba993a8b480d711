"""Diagnosis → LSP diagnostics on the evidence lines, and the per-line index hovers read.

The root cause gets an Error on the initiating rank's first failure line; every other evidence
line gets the collateral severity and a link back to that line; a failure no rule explains gets
a Warning on its line (code `unexplained`). Line numbers are mapped from
the core's (lines split on newlines only, a `\\r` overwrite resolved to its last text) to the
editor's, which also breaks lines at a lone `\\r`: by `LineMap` over a text in memory, by
`LineIndex` over a file read as it grows.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Protocol

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import PositionCodec

from trainmedic.catalogue.rules import Catalogue
from trainmedic.model import Diagnosis, Finding, Line
from trainmedic.render.unexplained import HEADLINE, failure_text

SOURCE = "trainmedic"
UNEXPLAINED = "unexplained"
ENTRY_URL = "https://trainmedic.dev/rules/{}"

SEVERITIES = {
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
    "warning": types.DiagnosticSeverity.Warning,
}


@dataclass(frozen=True)
class Published:
    """What the server last published on a document; hovers read `findings_at` (by line)."""

    diagnosis: Diagnosis
    catalogue: Catalogue
    diagnostics: tuple[types.Diagnostic, ...]
    findings_at: dict[int, tuple[Finding, ...]]


def root_cause(diagnosis: Diagnosis) -> tuple[Finding, Line] | None:
    """The most likely root cause and its line: the initiating rank's first failure."""
    roots = diagnosis.root_causes
    if not roots:
        return None
    top = roots[0]
    rank = diagnosis.initiating_rank
    report = diagnosis.ranks.get(rank) if rank is not None else None
    if report is not None and report.first_failure is not None and \
            report.rule_id in (None, top.rule_id):
        return top, report.first_failure
    return top, top.first


UTF16 = PositionCodec()  # what a client that states no encoding counts in


class LineMap:
    """Where the core's line N of `text` is in the editor, for text starting at `start`."""

    def __init__(self, text: str, start: types.Position,
                 codec: PositionCodec = UTF16) -> None:
        self.start, self.codec = start, codec
        self.lines = text.split("\n")
        self.before: list[int] | None = None  # lone CRs before each line, when there are any
        if "\r" in text:
            before, total = [], 0
            for line in self.lines:
                before.append(total)
                total += line.rstrip("\r").count("\r")
            self.before = before

    def range(self, number: int) -> types.Range:
        index = min(max(number - 1, 0), len(self.lines) - 1)
        text = self.lines[index].rstrip("\r")
        line = self.start.line + index
        if self.before is not None:
            line += self.before[index] + text.count("\r")
        column = self.start.character if line == self.start.line else 0
        end = column + self.codec.client_num_units(text.rsplit("\r", 1)[-1])
        return types.Range(start=types.Position(line=line, character=column),
                           end=types.Position(line=line, character=end))

    def place(self, line: Line) -> types.Range:
        return self.range(line.number)


class LineIndex:
    """Where the core's line N of a file is in the editor, kept up as the file's bytes arrive.

    `LineMap` for a followed log, without its text: only the lines that hold lone `\\r`s (a
    progress bar) are remembered. A line ends where its text as the core keeps it ends (ANSI
    escapes left out), the only place it may differ from `LineMap`.
    """

    def __init__(self, codec: PositionCodec = UTF16) -> None:
        self.codec = codec
        self.lines = 0  # complete lines so far
        self.marked: list[int] = []  # the (0-based) lines with lone CRs, in order
        self.shifts: list[int] = []  # lone CRs up to and including each marked line
        self.crs = self.trailing = 0  # in the line still being read; trailing CRs are no breaks

    def feed(self, data: bytes) -> None:
        """The next bytes of the file."""
        if not self.crs and b"\r" not in data:
            self.lines += data.count(b"\n")
            return
        *complete, rest = data.split(b"\n")
        for piece in complete:
            self._extend(piece)
            lone = self.crs - self.trailing
            if lone:
                self.marked.append(self.lines)
                self.shifts.append((self.shifts[-1] if self.shifts else 0) + lone)
            self.lines += 1
            self.crs = self.trailing = 0
        self._extend(rest)

    def _extend(self, piece: bytes) -> None:
        kept = piece.rstrip(b"\r")
        self.crs += piece.count(b"\r")
        self.trailing = len(piece) - len(kept) + (0 if kept else self.trailing)

    def place(self, line: Line) -> types.Range:
        index = line.number - 1
        marked = bisect_right(self.marked, index)
        row = index + (self.shifts[marked - 1] if marked else 0)
        end = self.codec.client_num_units(line.text)
        return types.Range(start=types.Position(line=row, character=0),
                           end=types.Position(line=row, character=end))


class Positions(Protocol):
    """Where a core line is in the editor: a `LineMap` or a `LineIndex`."""

    def place(self, line: Line) -> types.Range: ...


def _on(rank: int | None) -> str:
    return f" on rank {rank}" if rank is not None else ""


def publishable(diagnosis: Diagnosis, catalogue: Catalogue, uri: str, lines: Positions,
                collateral: str, path: str | None = None) -> Published:
    """The diagnostics for `diagnosis` in document `uri`, whose lines are placed by `lines`.

    With `path`, the diagnosis is of several files and `uri` shows the one named `path`: only
    its lines are diagnostics, and links to the root cause go to the root cause's file.
    """
    severity = SEVERITIES[collateral]
    root = root_cause(diagnosis)

    def shown(line: Line) -> bool:
        return path is None or line.path == path
    diagnostics: list[types.Diagnostic] = []
    findings_at: dict[int, list[Finding]] = {}

    related: list[types.DiagnosticRelatedInformation] | None = None

    def add(finding: Finding, line: Line, message: str, is_root: bool) -> None:
        if not shown(line):
            return
        rule = catalogue.by_id[finding.rule_id]
        advice = rule.advice(finding.matched)
        where = lines.place(line)
        data: dict[str, Any] = {"rule_id": rule.id, "fix": advice.fix,
                                "verify": advice.verify_command,
                                "role": finding.role.value, "rank": finding.rank_of(line)}
        diagnostics.append(types.Diagnostic(
            range=where, message=message, source=SOURCE, code=rule.id,
            severity=types.DiagnosticSeverity.Error if is_root else severity,
            code_description=types.CodeDescription(href=ENTRY_URL.format(rule.id)),
            related_information=None if is_root else related, data=data))
        here = findings_at.setdefault(where.start.line, [])
        if finding not in here:
            here.append(finding)

    tail = " (no root cause was found in this text)"
    initiating = diagnosis.initiating_rank
    if root is not None:
        top, root_line = root
        title = catalogue.by_id[top.rule_id].title
        add(top, root_line, f"Root cause{_on(initiating)}: {title} "
            f"(confidence {top.confidence:.2f})", True)
        at = lines.place(root_line)
        root_uri = uri if shown(root_line) else from_fs_path(root_line.path) or root_line.path
        related = [types.DiagnosticRelatedInformation(
            location=types.Location(uri=root_uri, range=at),
            message=f"root cause{_on(initiating)}: {title}")]
        in_file = "" if shown(root_line) else f"{PurePath(root_line.path).name}:"
        tail = f" (root cause{_on(initiating)} at {in_file or 'line '}{at.start.line + 1})"
    for finding in diagnosis.findings:
        title = catalogue.by_id[finding.rule_id].title
        for line in finding.evidence:
            if root is not None and finding is root[0] and line == root[1]:
                continue
            rank = finding.rank_of(line)
            if root is not None and finding is root[0] and initiating in (None, rank):
                message = f"Evidence for the root cause{_on(rank)}: {title}"
            else:
                message = f"Collateral{_on(rank)}: {title}{tail}"
            add(finding, line, message, False)
    words = HEADLINE if root is None else "Failed, with nothing in the catalogue to explain it: "
    for failure in diagnosis.unexplained:
        if not shown(failure.line):
            continue
        diagnostics.append(types.Diagnostic(
            range=lines.place(failure.line), message=words + failure_text(failure), source=SOURCE,
            code=UNEXPLAINED, severity=types.DiagnosticSeverity.Warning,
            data={"exception": failure.exception, "rank": failure.rank}))
    return Published(diagnosis, catalogue, tuple(diagnostics),
                     {n: tuple(f) for n, f in findings_at.items()})

"""Jupyter notebooks (`.ipynb`): the code cells joined into one script for the Python checks,
and the way back from a place in that script to a cell and a line of it.

A notebook's cells run top to bottom in one namespace, so a scaler made in one cell and
stepped in another is one script to the checks. IPython syntax is not Python: a line magic or
shell escape (`%time ...`, `!pip ...`, `files = !ls`) becomes `pass` at its indentation, so
the lines around it still parse; a cell magic (`%%bash`) cell, and a cell that does not parse
on its own, are left out.
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trainmedic.checks.findings import (
    MAX_CHECKED_CHARS,
    NEWLINES,
    CheckError,
    CheckFinding,
    Position,
    Range,
    TextEdit,
    split_lines,
)
from trainmedic.logs.formats.notebook import nbformat_text

_IPYTHON_LINE = re.compile(r"^(\s*)(?:[%!]|[\w.]+\s*=\s*[%!])")
MAX_CELLS = 10_000


@dataclass(frozen=True)
class Cell:
    """A code cell: its index among all the notebook's cells, its source, and the line it
    starts on in the joined script."""

    index: int
    source: str
    first_line: int

    @property
    def lines(self) -> list[str]:
        return split_lines(self.source)


@dataclass(frozen=True)
class CellEdit:
    cell: int
    edit: TextEdit


@dataclass(frozen=True)
class CellFinding:
    """A finding placed in its cell: `finding.range` counts lines from the cell's start, and
    `fix` holds every edit of its fix with the cell it changes (None: no fix)."""

    cell: int
    finding: CheckFinding
    fix: tuple[CellEdit, ...] | None


def _python_lines(source: str) -> str | None:
    """The cell as plain Python (IPython lines made `pass`), or None when it is not Python
    (or too long to be a cell anyone wrote)."""
    if source.lstrip().startswith("%%") or len(source) > MAX_CHECKED_CHARS:
        return None
    lines = [f"{m.group(1)}pass" if (m := _IPYTHON_LINE.match(line)) else line
             for line in split_lines(source)]
    text = "\n".join(lines)
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return text


@dataclass(frozen=True)
class NotebookScript:
    """The code cells that are Python, joined with newlines into `text`."""

    path: str
    cells: tuple[Cell, ...]
    text: str

    @classmethod
    def join(cls, path: str, sources: Iterable[tuple[int, str]]) -> NotebookScript:
        """`sources` are (cell index, source) of the code cells, in order."""
        cells: list[Cell] = []
        parts: list[str] = []
        line = 0
        for index, source in sources:
            python = _python_lines(source)
            if python is None:
                continue
            cells.append(Cell(index, source, line))
            parts.append(python)
            line += len(split_lines(source))
        return cls(path, tuple(cells), "\n".join(parts))

    def _cell(self, line: int) -> int:
        return max(bisect_right([c.first_line for c in self.cells], line) - 1, 0)

    def _local(self, at: int, pos: Position) -> Position:
        return Position(pos.line - self.cells[at].first_line, pos.character)

    def _end_of(self, at: int) -> Position:
        lines = self.cells[at].lines
        return Position(len(lines) - 1, len(lines[-1]))

    def _edit(self, edit: TextEdit, finding_cell: int) -> CellEdit | None:
        """The edit inside one cell, or None when it spans cells.

        A script position at the start of a cell's first line is also the end of the cell
        before: an edit that ends there, or an insertion for a finding in an earlier cell (a
        line added after the last statement), belongs to that earlier cell.
        """
        start, end = edit.range.start, edit.range.end
        first, last = self._cell(start.line), self._cell(end.line)
        at_boundary = last > 0 and end == Position(self.cells[last].first_line, 0)
        if at_boundary and (first < last or finding_cell < last):
            last -= 1
            if start == end:  # an insertion moved to the end of the cell before
                first = last
                tail = self._end_of(last)
                text = edit.new_text
                if tail.character and (nl := NEWLINES.search(text)) and nl.end() == len(text):
                    text = nl.group(0) + text[:nl.start()]
                return CellEdit(self.cells[last].index, TextEdit(Range(tail, tail), text))
            return CellEdit(self.cells[last].index,
                            TextEdit(Range(self._local(first, start), self._end_of(last)),
                                     edit.new_text)) if first == last else None
        if first != last:
            return None
        return CellEdit(self.cells[first].index, TextEdit(
            Range(self._local(first, start), self._local(first, end)), edit.new_text))

    def place(self, finding: CheckFinding) -> CellFinding:
        """`finding` (found in `text`) in its cell; a fix that spans cells is dropped."""
        at = self._cell(finding.range.start.line)
        end = min(finding.range.end, Position(
            self.cells[at].first_line + len(self.cells[at].lines) - 1,
            len(self.cells[at].lines[-1])))
        local = Range(self._local(at, finding.range.start), self._local(at, end))
        fix: tuple[CellEdit, ...] | None = None
        if finding.fix:
            edits = [self._edit(e, at) for e in finding.fix]
            fix = tuple(e for e in edits if e is not None) if None not in edits else None
        return CellFinding(self.cells[at].index,
                           CheckFinding(finding.code, finding.rule_id, finding.message,
                                        finding.severity, local), fix)


# --- the .ipynb file ------------------------------------------------------------------------------

@dataclass(frozen=True)
class NotebookFile:
    """A parsed `.ipynb` (nbformat 4): its JSON, and how it was indented, to write it back."""

    data: dict[str, Any]
    indent: int | None

    @classmethod
    def parse(cls, text: str) -> NotebookFile:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise CheckError(f"not a notebook: invalid JSON ({error})") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise CheckError("not a notebook: no list of cells")
        if len(data["cells"]) > MAX_CELLS:
            raise CheckError(f"more than {MAX_CELLS} cells")
        indent = re.match(r"\{\r?\n( *)", text)
        return cls(data, len(indent.group(1)) if indent else None)

    def code_cells(self) -> list[tuple[int, str]]:
        """(index, source) of every code cell."""
        return [(index, cell_source(cell)) for index, cell in enumerate(self.data["cells"])
                if isinstance(cell, dict) and cell.get("cell_type") == "code"]

    def with_sources(self, sources: dict[int, str]) -> str:
        """The notebook's JSON with these cells' sources replaced, written as nbformat
        writes it (a list of lines), everything else kept."""
        cells = list(self.data["cells"])
        for index, source in sources.items():
            cells[index] = {**cells[index], "source": source.splitlines(keepends=True)}
        text = json.dumps({**self.data, "cells": cells}, indent=self.indent,
                          ensure_ascii=False)
        return text + "\n"


def cell_source(cell: dict[str, Any]) -> str:
    """A cell's source, which nbformat stores as a string or a list of lines."""
    return nbformat_text(cell.get("source"))

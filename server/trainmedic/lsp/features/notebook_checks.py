"""Script checks in Jupyter notebooks: diagnostics, hover and quick fixes on code cells.

The client syncs the notebook (notebookDocument/didOpen, didChange, didClose) with its cells
as text documents; the code cells are joined into one script, as they share one namespace
when run, and each finding is published on its cell's document. A fix may change other cells
(an import in the first cell): its edit names each cell's document.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from lsprotocol import types
from pygls.uris import to_fs_path

from trainmedic.checks import ignore_edit
from trainmedic.checks.findings import CheckError, split_lines
from trainmedic.checks.runner import check_script
from trainmedic.checks.sources.notebook import CellFinding, NotebookScript
from trainmedic.lsp.check_conversions import (
    DEBOUNCE_SECONDS,
    client_edit,
    diagnostic,
    finding_actions,
    findings_hover,
    from_client,
)
from trainmedic.lsp.server import SETTINGS_CHANGED, TrainmedicServer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckedNotebook:
    """One version of a notebook: its cells' documents in order, their lines, the findings."""

    version: int
    cells: tuple[str, ...]             # every cell's document URI, markdown included
    lines: dict[str, list[str]]        # a code cell's lines, by its URI
    findings: tuple[CellFinding, ...]

    def in_cell(self, uri: str) -> list[CellFinding]:
        return [f for f in self.findings if self.cells[f.cell] == uri]


class Notebooks:
    """The last findings per notebook, and the checks in flight (a newer edit wins)."""

    def __init__(self, ls: TrainmedicServer) -> None:
        self.ls = ls
        self.checked: dict[str, CheckedNotebook] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def read(self, uri: str) -> tuple[NotebookScript, CheckedNotebook] | None:
        """The notebook's cells as a script, and its state before the checks run."""
        notebook = self.ls.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = tuple(cell.document for cell in notebook.cells)
        code = [(index, self.ls.workspace.get_text_document(cell.document).source)
                for index, cell in enumerate(notebook.cells)
                if cell.kind == types.NotebookCellKind.Code]
        script = NotebookScript.join(to_fs_path(uri) or uri, code)
        lines = {cells[index]: split_lines(source) for index, source in code}
        return script, CheckedNotebook(notebook.version, cells, lines, ())

    def schedule(self, uri: str, delay: float) -> None:
        self.stop(uri)
        if self.ls.settings.script_checks:
            self.tasks[uri] = asyncio.create_task(self.check(uri, delay))
        elif uri in self.checked:
            self.publish(uri, None)

    def stop(self, uri: str) -> None:
        task = self.tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    async def check(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            found = self.read(uri)
            if found is None:
                return
            script, state = found
            try:
                findings = await asyncio.to_thread(check_script, script)
            except CheckError as error:
                logger.debug("not checked: notebook %s: %s", uri, error)
                return
            self.publish(uri, CheckedNotebook(state.version, state.cells, state.lines,
                                              tuple(findings)))
        except asyncio.CancelledError:
            pass  # a newer edit replaced this check, or the notebook closed
        except Exception:
            logger.exception("checking notebook %s failed", uri)
        finally:
            if self.tasks.get(uri) is asyncio.current_task():
                del self.tasks[uri]

    def publish(self, uri: str, checked: CheckedNotebook | None) -> None:
        """Publish each cell's diagnostics; clear the cells that had some and have none now."""
        before = self.checked.pop(uri, None)
        if checked is not None:
            self.checked[uri] = checked
        codec = self.ls.workspace.position_codec
        had = {before.cells[f.cell] for f in before.findings} if before else set()
        now = {checked.cells[f.cell] for f in checked.findings} if checked else set()
        for cell in sorted(had | now):
            findings = checked.in_cell(cell) if checked is not None and cell in now else []
            lines = checked.lines.get(cell, []) if checked is not None else []
            self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=cell, diagnostics=[diagnostic(codec, lines, f.finding) for f in findings]))

    def for_cell(self, cell_uri: str) -> tuple[CheckedNotebook, list[CellFinding]] | None:
        notebook = self.ls.workspace.get_notebook_document(cell_uri=cell_uri)
        checked = self.checked.get(notebook.uri) if notebook else None
        if notebook is None or checked is None or checked.version != notebook.version:
            return None  # not checked yet, or edited since: the next check answers
        return checked, checked.in_cell(cell_uri)


def hover(notebooks: Notebooks, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    found = notebooks.for_cell(uri)
    if found is None:
        return None
    checked, findings = found
    codec = notebooks.ls.workspace.position_codec
    lines = checked.lines[uri]
    at = from_client(codec, lines, params.position)
    here = [f.finding for f in findings if f.finding.range.start <= at <= f.finding.range.end]
    return findings_hover(codec, lines, here, notebooks.ls.rules.bundled)


def code_actions(notebooks: Notebooks, params: types.CodeActionParams) -> list[types.CodeAction]:
    """A preferred quick fix per finding in the range that has one (its edits in every cell
    it changes), and "ignore here" in the finding's cell."""
    uri = params.text_document.uri
    found = notebooks.for_cell(uri)
    if found is None:
        return []
    checked, findings = found
    codec = notebooks.ls.workspace.position_codec
    lines = checked.lines[uri]
    start = from_client(codec, lines, params.range.start)
    end = from_client(codec, lines, params.range.end)
    actions: list[types.CodeAction] = []
    for placed in findings:
        finding = placed.finding
        if finding.range.end < start or end < finding.range.start:
            continue
        changes: dict[str, list[types.TextEdit]] = {}
        for edit in placed.fix or ():
            cell = checked.cells[edit.cell]
            changes.setdefault(cell, []).append(client_edit(codec, checked.lines[cell], edit.edit))
        actions += finding_actions(codec, lines, uri, finding, changes,
                                   ignore_edit(uri, lines, finding))
    return actions


def register(ls: TrainmedicServer) -> None:
    notebooks = Notebooks(ls)

    def opened(params: types.DidOpenNotebookDocumentParams) -> None:
        notebooks.schedule(params.notebook_document.uri, 0)

    def changed(params: types.DidChangeNotebookDocumentParams) -> None:
        notebooks.schedule(params.notebook_document.uri, DEBOUNCE_SECONDS)

    def closed(params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        notebooks.stop(uri)
        if uri in notebooks.checked:
            notebooks.publish(uri, None)

    def refresh() -> None:
        for uri in list(ls.workspace.notebook_documents):
            notebooks.schedule(uri, 0)

    ls.on(types.NOTEBOOK_DOCUMENT_DID_OPEN, opened)
    ls.on(types.NOTEBOOK_DOCUMENT_DID_CHANGE, changed)
    ls.on(types.NOTEBOOK_DOCUMENT_DID_CLOSE, closed)
    ls.on(types.TEXT_DOCUMENT_HOVER, lambda params: hover(notebooks, params))
    ls.on(types.TEXT_DOCUMENT_CODE_ACTION, lambda params: code_actions(notebooks, params) or None,
          types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    ls.on(SETTINGS_CHANGED, lambda settings: refresh())

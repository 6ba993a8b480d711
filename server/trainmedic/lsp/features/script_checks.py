"""Script checks in the editor: diagnostics on Python training scripts, DeepSpeed JSON,
Accelerate YAML and launch scripts; a hover with the check's why and fix; quick fixes.

Checks run when a document opens and, debounced, when it changes. While the text does not
parse (mid-edit), the last diagnostics stay. `trainmedic.scriptChecks: false` clears them.
Documents that match `logGlobs` belong to the log diagnostics and are left alone here.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from lsprotocol import types
from pygls.uris import to_fs_path

from trainmedic.checks import (
    CheckError,
    CheckFinding,
    file_kind,
    ignore_edit,
    run_checks,
)
from trainmedic.checks.findings import split_lines
from trainmedic.lsp.check_conversions import (
    DEBOUNCE_SECONDS,
    client_edit,
    diagnostic,
    finding_actions,
    findings_hover,
    from_client,
)
from trainmedic.lsp.log_globs import is_log
from trainmedic.lsp.server import SETTINGS_CHANGED, TrainmedicServer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checked:
    """The findings for one version of a document, and the lines they index."""

    version: int | None
    lines: list[str]
    findings: tuple[CheckFinding, ...]


class ScriptDocuments:
    """The last findings per document, and the checks in flight (a newer edit wins)."""

    def __init__(self, ls: TrainmedicServer) -> None:
        self.ls = ls
        self.checked: dict[str, Checked] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def path(self, uri: str) -> str | None:
        """The document's path when the checks read it, else None."""
        path = to_fs_path(uri) or uri
        if not self.ls.settings.script_checks or file_kind(path) is None:
            return None
        workspace = self.ls.workspace
        roots = [p for p in (to_fs_path(f.uri) for f in workspace.folders.values()) if p]
        return None if is_log(path, self.ls.settings.log_globs, roots) else path

    def current(self, uri: str) -> Checked | None:
        """Findings for the document as it is now (checked again when it changed since)."""
        document = self.ls.workspace.text_documents.get(uri)
        path = self.path(uri)
        if document is None or path is None:
            return None
        known = self.checked.get(uri)
        if known is not None and known.version == document.version:
            return known
        try:
            findings = run_checks(path, document.source)
        except CheckError:
            return None
        return Checked(document.version, split_lines(document.source), tuple(findings))

    def last(self, uri: str, line: int) -> Checked | None:
        """The last findings, for a hover on `line`: right after an edit the check is still
        debounced, and a hover must not wait for it. They hold where `line` reads as it did
        when they were found; otherwise (or before the first check) it is checked now."""
        document = self.ls.workspace.text_documents.get(uri)
        known = self.checked.get(uri)
        if document is None or known is None or self.path(uri) is None:
            return self.current(uri)
        lines = document.lines
        now = lines[line].rstrip("\r\n") if line < len(lines) else None
        if line < len(known.lines) and known.lines[line] == now:
            return known
        return self.current(uri)

    def schedule(self, uri: str, delay: float) -> None:
        self.stop(uri)
        self.tasks[uri] = asyncio.create_task(self.check(uri, delay))

    def stop(self, uri: str) -> None:
        task = self.tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    async def check(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            document = self.ls.workspace.text_documents.get(uri)
            path = self.path(uri)
            if document is None or path is None:
                return
            version, text = document.version, document.source
            try:
                findings = await asyncio.to_thread(run_checks, path, text)
            except CheckError as error:
                logger.debug("not checked yet: %s: %s", path, error)
                return
            self.publish(uri, Checked(version, split_lines(text), tuple(findings)))
        except asyncio.CancelledError:
            pass  # a newer edit replaced this check, or the document closed
        except Exception:
            logger.exception("checking %s failed", uri)
        finally:
            if self.tasks.get(uri) is asyncio.current_task():
                del self.tasks[uri]

    def publish(self, uri: str, checked: Checked | None) -> None:
        codec = self.ls.workspace.position_codec
        if checked is None:
            self.checked.pop(uri, None)
        else:
            self.checked[uri] = checked
        diagnostics = [diagnostic(codec, checked.lines, f) for f in checked.findings] \
            if checked else []
        self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=checked.version if checked else None, diagnostics=diagnostics))

    def refresh(self) -> None:
        """Check every open document again, or clear them all when checks were turned off."""
        for uri in list(self.ls.workspace.text_documents):
            if self.path(uri) is not None:
                self.schedule(uri, 0)
            elif uri in self.checked:
                self.publish(uri, None)


def code_actions(documents: ScriptDocuments, uri: str,
                 requested: types.Range) -> list[types.CodeAction]:
    """A preferred quick fix per finding in the range that has one, and "ignore here"."""
    checked = documents.current(uri)
    if checked is None:
        return []
    codec = documents.ls.workspace.position_codec
    lines = checked.lines
    start, end = from_client(codec, lines, requested.start), from_client(codec, lines,
                                                                         requested.end)
    path = documents.path(uri) or uri
    found: list[types.CodeAction] = []
    for finding in checked.findings:
        if finding.range.end < start or end < finding.range.start:
            continue
        fix = {uri: [client_edit(codec, lines, e) for e in finding.fix]} if finding.fix else None
        found += finding_actions(codec, lines, uri, finding, fix,
                                 ignore_edit(path, lines, finding))
    return found


def register(ls: TrainmedicServer) -> None:
    documents = ScriptDocuments(ls)

    def opened(params: types.DidOpenTextDocumentParams) -> None:
        if documents.path(params.text_document.uri) is not None:
            documents.schedule(params.text_document.uri, 0)

    def changed(params: types.DidChangeTextDocumentParams) -> None:
        if documents.path(params.text_document.uri) is not None:
            documents.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    def closed(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        documents.stop(uri)
        if uri in documents.checked:
            documents.publish(uri, None)

    def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        checked = documents.last(uri, params.position.line)
        if checked is None:
            return None
        codec = ls.workspace.position_codec
        at = from_client(codec, checked.lines, params.position)
        here = [f for f in checked.findings if f.range.start <= at <= f.range.end]
        return findings_hover(codec, checked.lines, here, ls.rules.bundled,
                              file_kind(to_fs_path(uri) or uri))

    def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return code_actions(documents, params.text_document.uri, params.range) or None

    ls.on(types.TEXT_DOCUMENT_DID_OPEN, opened)
    ls.on(types.TEXT_DOCUMENT_DID_CHANGE, changed)
    ls.on(types.TEXT_DOCUMENT_DID_CLOSE, closed)
    ls.on(types.TEXT_DOCUMENT_HOVER, hover)
    ls.on(types.TEXT_DOCUMENT_CODE_ACTION, code_action,
          types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    ls.on(SETTINGS_CHANGED, lambda settings: documents.refresh())

"""Diagnostics on log documents: when opened, after edits (debounced), and again when the
settings or the rules change.

A document is a log when its path matches one of `logGlobs`. A newer edit, closing the
document, or the user cancelling the progress stops a diagnosis that is still running.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import PurePosixPath

from lsprotocol import types
from pygls.uris import to_fs_path

from trainmedic.lsp import jobs
from trainmedic.lsp.diagnostics import publishable
from trainmedic.lsp.server import RULES_CHANGED, SETTINGS_CHANGED, TrainmedicServer

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.3
ORIGIN = types.Position(line=0, character=0)


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        close = {"{": "}", "[": "]"}.get(char)
        end = pattern.find(close, i + 1) if close else -1
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "{" and end > i:
            alternatives = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = end + 1
            continue
        elif char == "[" and end > i + 1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A VS Code glob (`**`, `*`, `?`, `{a,b}`, `[...]`) as a regular expression over paths."""
    return re.compile(_translate(pattern.replace("\\", "/")))


def is_log(path: str, globs: Iterable[str], roots: Iterable[str]) -> bool:
    """Whether `path` matches a glob, taken from a workspace folder or absolute."""
    path = path.replace("\\", "/")
    candidates = [path]
    for root in roots:
        try:
            candidates.append(str(PurePosixPath(path).relative_to(root.replace("\\", "/"))))
        except ValueError:
            continue
    return any(glob_regex(glob).fullmatch(c) for glob in globs for c in candidates)


class LogDocuments:
    """The diagnoses in flight, one per document: a newer request replaces an older one."""

    def __init__(self, ls: TrainmedicServer) -> None:
        self.ls = ls
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def eligible(self, uri: str) -> bool:
        settings = self.ls.settings
        path = to_fs_path(uri)
        if not settings.diagnose_on_open or path is None:
            return False
        workspace = self.ls.workspace
        roots = [p for p in (to_fs_path(f.uri) for f in workspace.folders.values()) if p]
        if workspace.root_path:
            roots.append(workspace.root_path)
        return is_log(path, settings.log_globs, roots)

    def schedule(self, uri: str, delay: float) -> None:
        self.stop(uri)
        self.tasks[uri] = asyncio.create_task(self.diagnose(uri, delay))

    def stop(self, uri: str) -> None:
        task = self.tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    async def diagnose(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            await self._diagnose(uri)
        except asyncio.CancelledError:
            pass  # superseded by a newer edit, or the document was closed
        except Exception:
            logger.exception("diagnosing %s failed", uri)
        finally:
            if self.tasks.get(uri) is asyncio.current_task():
                del self.tasks[uri]

    async def _diagnose(self, uri: str) -> None:
        document = self.ls.workspace.text_documents.get(uri)
        if document is None:
            return
        version, text = document.version, document.source
        name = PurePosixPath(to_fs_path(uri) or uri).name
        try:
            diagnosis, catalogue = await jobs.run(self.ls, text, to_fs_path(uri) or uri,
                                                  threading.Event(), f"trainmedic: {name}")
        except jobs.Cancelled:
            logger.info("diagnosis of %s cancelled", name)
            return
        self.ls.publish(uri, publishable(diagnosis, catalogue, uri, text, ORIGIN,
                                         self.ls.settings.collateral_severity,
                                         self.ls.workspace.position_encoding), version)

    def refresh(self) -> None:
        """Diagnose every open log again (the settings or the rules changed)."""
        for uri in list(self.ls.workspace.text_documents):
            if self.eligible(uri):
                self.schedule(uri, 0)


def register(ls: TrainmedicServer) -> None:
    documents = LogDocuments(ls)

    def opened(params: types.DidOpenTextDocumentParams) -> None:
        if documents.eligible(params.text_document.uri):
            documents.schedule(params.text_document.uri, 0)

    def changed(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if documents.eligible(uri):
            documents.schedule(uri, DEBOUNCE_SECONDS)
        elif uri in ls.published:
            ls.publish(uri, None)  # its lines moved: stale diagnostics would point elsewhere

    def closed(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        documents.stop(uri)
        if uri in ls.published:
            ls.publish(uri, None)

    ls.on(types.TEXT_DOCUMENT_DID_OPEN, opened)
    ls.on(types.TEXT_DOCUMENT_DID_CHANGE, changed)
    ls.on(types.TEXT_DOCUMENT_DID_CLOSE, closed)
    ls.on(SETTINGS_CHANGED, lambda settings: documents.refresh())
    ls.on(RULES_CHANGED, lambda params: documents.refresh())

"""Diagnostics on log documents: when opened, after edits (debounced), as their file grows on
disk, and again when the settings or the rules change.

A document is a log when its path matches one of `logGlobs`. A newer edit, closing the
document, or the user cancelling the progress stops a diagnosis that is still running.

While a log is open its file is followed (`followLogs`): every `FOLLOW_SECONDS` the bytes it
appended are read and diagnosed, and the diagnostics republished when they change, without
waiting for the client to reload it. When the document's text is the file's (opened, or
reloaded by the client after the file grew) the follower's diagnosis is the document's and
nothing is diagnosed again; an edited document is diagnosed as text, and the follower
publishes nothing until the document is the file's again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TypeVar

from lsprotocol import types
from pygls.uris import to_fs_path

from trainmedic.lsp import jobs
from trainmedic.lsp.conversions import LineMap, publishable
from trainmedic.lsp.following import FollowedLog
from trainmedic.lsp.server import RULES_CHANGED, SETTINGS_CHANGED, TrainmedicServer

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.3
FOLLOW_SECONDS = 0.5  # how often a followed log's file is looked at
ORIGIN = types.Position(line=0, character=0)

T = TypeVar("T")


@dataclass
class Followed:
    """An open log whose file is followed, and whether the document shows that file."""

    log: FollowedLog
    on_disk: bool = False  # the text is the file's: the follower's diagnosis is the document's
    # One poll-and-publish at a time, so an older diagnosis is never published over a newer.
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[None] | None = None


class LogDocuments:
    """The diagnoses in flight, one per document: a newer request replaces an older one; and
    the logs followed on disk."""

    def __init__(self, ls: TrainmedicServer) -> None:
        self.ls = ls
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.followed: dict[str, Followed] = {}

    def eligible(self, uri: str) -> bool:
        return self.ls.diagnoses_on_open(uri)

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
        followed = self.followed.get(uri)
        if followed is not None:
            async with followed.turn:
                await self._work(followed.log.poll)  # catch up with the file first
                followed.on_disk = await self._work(followed.log.matches, text)
                if followed.on_disk:
                    await self._publish(uri, followed, always=True)
                    return
        name = PurePosixPath(to_fs_path(uri) or uri).name
        try:
            diagnosis, catalogue = await jobs.run(self.ls, text, to_fs_path(uri) or uri,
                                                  threading.Event(), f"trainmedic: {name}")
        except jobs.Cancelled:
            logger.info("diagnosis of %s cancelled", name)
            return
        lines = LineMap(text, ORIGIN, self.ls.workspace.position_codec)
        self.ls.publish(uri, publishable(diagnosis, catalogue, uri, lines,
                                         self.ls.settings.collateral_severity), version)

    def refresh(self) -> None:
        """Diagnose every open log again (the settings or the rules changed)."""
        for uri in list(self.ls.workspace.text_documents):
            if self.eligible(uri):
                self.follow(uri)
                self.schedule(uri, 0)
            else:
                self.unfollow(uri)

    # --- logs followed on disk ---------------------------------------------------------------

    def follow(self, uri: str) -> None:
        """Follow the log's file with the current rules, if following is on and it is on disk."""
        path = to_fs_path(uri)
        if not self.ls.settings.follow_logs or path is None:
            self.unfollow(uri)
            return
        catalogue, matcher = self.ls.rules.current()
        followed = self.followed.get(uri)
        if followed is not None and followed.log.catalogue is catalogue:
            return
        self.unfollow(uri)
        try:
            log = FollowedLog(path, catalogue, matcher, self.ls.workspace.position_codec)
        except OSError:
            return  # not on disk (or not a file): only its text is diagnosed
        followed = self.followed[uri] = Followed(log)
        followed.task = asyncio.create_task(self._follow(uri, followed))
        logger.info("following %s as it grows", PurePosixPath(path).name)

    def unfollow(self, uri: str) -> None:
        followed = self.followed.pop(uri, None)
        if followed is not None:
            if followed.task is not None:
                followed.task.cancel()
            self.ls.jobs.submit(followed.log.close)  # waits for a poll still reading

    def edited(self, uri: str) -> None:
        """The document changed: until it is compared with the file, it may not show it."""
        if (followed := self.followed.get(uri)) is not None:
            followed.on_disk = False

    async def _follow(self, uri: str, followed: Followed) -> None:
        try:
            while True:
                await asyncio.sleep(FOLLOW_SECONDS)
                async with followed.turn:
                    if await self._work(followed.log.poll) and followed.on_disk:
                        await self._publish(uri, followed, always=False)
        except Exception:
            logger.exception("following %s failed; it is no longer followed", uri)
            if self.followed.get(uri) is followed:
                self.unfollow(uri)

    async def _publish(self, uri: str, followed: Followed, always: bool) -> None:
        """Publish the follower's diagnostics if they changed (or `always`), while the
        document shows the file."""
        published = await self._work(followed.log.published, uri,
                                      self.ls.settings.collateral_severity)
        last = self.ls.published.get(uri)
        if followed.on_disk and (always or last is None or
                                 last.diagnostics != published.diagnostics):
            self.ls.publish(uri, published)

    async def _work(self, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` in a worker thread: reading and diagnosing must not hold up the
        server."""
        return await asyncio.get_running_loop().run_in_executor(self.ls.jobs, function, *args)


def register(ls: TrainmedicServer) -> None:
    documents = LogDocuments(ls)

    def opened(params: types.DidOpenTextDocumentParams) -> None:
        if documents.eligible(params.text_document.uri):
            documents.follow(params.text_document.uri)
            documents.schedule(params.text_document.uri, 0)

    def changed(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if documents.eligible(uri):
            documents.edited(uri)
            documents.schedule(uri, DEBOUNCE_SECONDS)
        elif uri in ls.published:
            ls.publish(uri, None)  # its lines moved: stale diagnostics would point elsewhere

    def closed(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        documents.stop(uri)
        documents.unfollow(uri)
        if uri in ls.published:
            ls.publish(uri, None)

    def shutdown(params: None) -> None:
        for uri in list(documents.followed):
            documents.unfollow(uri)

    ls.on(types.TEXT_DOCUMENT_DID_OPEN, opened)
    ls.on(types.TEXT_DOCUMENT_DID_CHANGE, changed)
    ls.on(types.TEXT_DOCUMENT_DID_CLOSE, closed)
    ls.on(types.SHUTDOWN, shutdown)
    ls.on(SETTINGS_CHANGED, lambda settings: documents.refresh())
    ls.on(RULES_CHANGED, lambda params: documents.refresh())

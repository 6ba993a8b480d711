"""Running the core's `diagnose` for the server: off the event loop, cancellable.

Every text is diagnosed in a worker thread, changed rule packs loaded there too, so that
however long a diagnosis takes (long lines, a rule pack's patterns) hovers and other requests
are answered meanwhile. Each time the engine reads its next chunk, the worker stops if the
client cancelled or newer text superseded it; for a text of `LARGE_LINES` lines or more it
also reports `$/progress`. Files and folders (`run_paths`) are read from disk with the CLI's
input code, in a worker thread too, with the same progress and cancellation; big ones are
scanned in the server's worker processes (`workers`), which the thread waits for.
"""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from trainmedic.catalogue.rules import Catalogue
from trainmedic.logs.inputs import expand, opened, total_size
from trainmedic.matching.choice import matcher_for
from trainmedic.matching.python import Matcher
from trainmedic.model import Diagnosis

if TYPE_CHECKING:
    from trainmedic.lsp.server import TrainmedicServer
    from trainmedic.lsp.workers import Workers

logger = logging.getLogger(__name__)

LARGE_LINES = 2000

Report = Callable[[int], None]


class Cancelled(Exception):
    """The client cancelled the diagnosis, or newer text superseded it."""


class _Watched(io.BytesIO):
    """The text as a byte stream that reports how far the engine got and stops when cancelled.

    The engine reads in chunks of about a megabyte, so progress and cancellation take effect
    at that step.
    """

    def __init__(self, data: bytes, cancel: threading.Event, report: Report) -> None:
        super().__init__(data)
        self.size, self.cancel, self.report = len(data), cancel, report

    def read(self, size: int | None = -1, /) -> bytes:
        self.report(100 * self.tell() // max(self.size, 1))
        if self.cancel.is_set():
            raise Cancelled
        return super().read(size)


Rules = Callable[[], tuple[Catalogue, Matcher]]


def _diagnose(text: str, path: str, rules: Rules, cancel: threading.Event,
              report: Report) -> tuple[Diagnosis, Catalogue]:
    from trainmedic.diagnosis.engine import diagnose  # here: the server starts without it

    catalogue, matcher = rules()  # loading and compiling changed packs takes time too
    stream = _Watched(text.encode("utf-8", errors="replace"), cancel, report)
    return diagnose([(path, stream)], catalogue, matcher), catalogue


def _diagnose_files(files: list[str], max_bytes: int | None, rules: Rules, workers: Workers,
                    cancel: threading.Event,
                    report: Report) -> tuple[Diagnosis, Catalogue, list[str]]:
    """The files diagnosed as one run, as `trainmedic diagnose FILE...` reads them (big or
    evidence-dense ones by the server's `workers`, as the CLI's are by every core), and the
    warnings of their reading."""
    from trainmedic.diagnosis.engine import diagnose

    catalogue, matcher = rules()
    size = total_size(files, max_bytes)

    def progress(done: int) -> None:
        report(min(100, 100 * done // max(size, 1)))
        if cancel.is_set():
            raise Cancelled

    if cancel.is_set():
        raise Cancelled
    with opened(files, max_bytes) as streams:
        if workers.count > 1 and max_bytes is None:  # big or dense inputs (see `scans`)
            with workers.job(catalogue) as submit:
                diagnosis = diagnose(streams, catalogue, matcher, workers.count, progress, submit,
                                     size)
        else:
            diagnosis = diagnose(streams, catalogue, matcher, 1, progress)
    return diagnosis, catalogue, streams.warnings


def supports_progress(ls: TrainmedicServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.work_done_progress)


@asynccontextmanager
async def _progress(ls: TrainmedicServer, title: str, cancel: threading.Event,
                    shown: bool) -> AsyncIterator[Report]:
    """Work-done progress the client can cancel, when `shown`; reports may come from any
    thread."""
    if not (shown and supports_progress(ls)):
        yield lambda percentage: None
        return
    token = str(uuid.uuid4())
    progress = ls.work_done_progress
    try:
        await progress.create_async(token)
    except Exception as error:
        logger.info("no progress shown for %s: the client refused (%s)", title, error)
        yield lambda percentage: None
        return
    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True,
                                                      percentage=0))
    progress.tokens[token].add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
    reported = [0]

    def report(percentage: int) -> None:
        if percentage > reported[0]:
            reported[0] = percentage
            ls.call_soon(progress.report, token,
                         types.WorkDoneProgressReport(percentage=percentage))

    try:
        yield report
    finally:
        message = "cancelled" if cancel.is_set() else "done"
        progress.end(token, types.WorkDoneProgressEnd(message=message))
        progress.tokens.pop(token, None)


def _rules(ls: TrainmedicServer, catalogue: Catalogue | None) -> Rules:
    """The rules a job runs with, loaded in its worker: `catalogue` when given, else the
    configured ones."""
    if catalogue is None:
        return ls.rules.current
    return lambda: (catalogue, matcher_for(catalogue))


async def run(ls: TrainmedicServer, text: str, path: str, cancel: threading.Event,
              title: str, catalogue: Catalogue | None = None) -> tuple[Diagnosis, Catalogue]:
    """Diagnose `text` with `catalogue` (the configured one by default); raises `Cancelled`."""
    rules = _rules(ls, catalogue)
    with ls.idle_trim.diagnosing():
        large = text.count("\n") >= LARGE_LINES
        async with _progress(ls, title, cancel, shown=large) as report:
            loop = asyncio.get_running_loop()
            try:
                # Not kept in a variable: the frame would hold the future, the future the
                # worker's `Cancelled`, and its traceback the frame, a cycle that keeps the
                # text and the engine's state until the next full garbage collection.
                return await loop.run_in_executor(ls.jobs, _diagnose, text, path, rules,
                                                  cancel, report)
            except asyncio.CancelledError:
                cancel.set()
                raise


@dataclass(frozen=True)
class FilesDiagnosis:
    """A diagnosis of files read from disk, with what reading them warned about."""

    diagnosis: Diagnosis
    catalogue: Catalogue
    files: tuple[str, ...]
    warnings: tuple[str, ...]


async def run_paths(ls: TrainmedicServer, paths: list[str], max_bytes: int | None,
                    cancel: threading.Event, title: str,
                    catalogue: Catalogue | None = None) -> FilesDiagnosis:
    """Diagnose files and folders as the CLI does (folders walked, ranks from file names,
    launcher error files decoded, `max_bytes` of each file); raises `Cancelled`, `InputError`
    (its line for the user) for what is not a log, and `WorkerError` when a worker died."""
    rules = _rules(ls, catalogue)
    loop = asyncio.get_running_loop()
    files, warnings = await loop.run_in_executor(ls.jobs, expand, paths)
    with ls.idle_trim.diagnosing():
        async with _progress(ls, title, cancel, shown=True) as report:
            try:
                diagnosis, used, read_warnings = await loop.run_in_executor(
                    ls.jobs, _diagnose_files, files, max_bytes, rules, ls.workers, cancel,
                    report)
            except asyncio.CancelledError:
                cancel.set()
                raise
    return FilesDiagnosis(diagnosis, used, tuple(files),
                          tuple(warnings + read_warnings))

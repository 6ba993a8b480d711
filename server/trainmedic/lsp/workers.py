"""The server's worker processes, which scan the pieces of big logs read from disk.

The server has threads (its jobs, the reading of its input), and a process forked while another
thread holds a lock (the allocator's, logging's, an import's) starts with that lock taken for
good. So the workers are not forked from the server: on Linux and macOS they are forked from a
fork server, a small process started afresh that never runs a thread and has the scanning code
already imported; on Windows they are spawned. They start with the first job big enough to
want them and are kept for the next ones, until IDLE_SECONDS pass without a job (idle workers
hold tens of megabytes; starting them again costs a fraction of a second) or the server shuts
down; a worker whose server has gone (killed, say) exits on its own.

A Scanner does not pickle (a Hyperscan database, compiled patterns), so each piece names a
file holding its catalogue, pickled once per job, and each worker builds a scanner for it the
first time it sees it (Hyperscan loads its compiled database from the disk cache) and keeps the
last few. A piece carrying the catalogue itself (hundreds of kilobytes) could fill the pipe to
the workers; a worker killed then left the pool's feeding thread blocked for good, and the
server hung when it exited.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from trainmedic.catalogue.rules import Catalogue
    from trainmedic.events.parallel import Submit
    from trainmedic.events.scan import Scanner

logger = logging.getLogger(__name__)

KEPT_SCANNERS = 2  # two jobs at once may diagnose with different rules (a call's rule packs)
IDLE_SECONDS = 300.0
# What a worker runs, imported here only when it first runs (the server starts without it),
# and by the fork server once, before it forks any worker.
PRELOADED = [__name__, "trainmedic.diagnosis.engine", "trainmedic.matching.hyperscan",
             "hyperscan"]

_scanners: OrderedDict[str, Scanner] = OrderedDict()  # a worker's, by its catalogue's file


def _scanner(rules: str) -> Scanner:
    from trainmedic.diagnosis.engine import scanner_for
    from trainmedic.matching.choice import matcher_for

    scanner = _scanners.pop(rules, None)
    if scanner is None:
        with open(rules, "rb") as stream:
            catalogue = pickle.load(stream)
        scanner = scanner_for(catalogue, matcher_for(catalogue))
    _scanners[rules] = scanner  # the newest last
    while len(_scanners) > KEPT_SCANNERS:
        _scanners.popitem(last=False)
    return scanner


def _scan(rules: str, path: str, first: int, stop: int | None, folder: str) -> str:
    from trainmedic.events.parallel import scan_piece

    return scan_piece(_scanner(rules), path, first, stop, folder)


def _exit_with_server() -> None:
    import multiprocessing.connection

    server = multiprocessing.parent_process()
    if server is not None:
        multiprocessing.connection.wait([server.sentinel])
        os._exit(0)


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    threading.Thread(target=_exit_with_server, daemon=True).start()


RULES_PREFIX = "trainmedic-rules-"  # then the server's process id and a random part


class _Pooled:
    """A piece in the pool (see `events.parallel.Piece`): a pool broken by a worker's death
    is that piece's `WorkerError`."""

    def __init__(self, future: Future[str]) -> None:
        self.future = future

    def result(self) -> str:
        from concurrent.futures.process import BrokenProcessPool

        from trainmedic.events.parallel import WorkerError

        try:
            return self.future.result()
        except BrokenProcessPool:
            raise WorkerError from None

    def cancel(self) -> bool:
        return self.future.cancel()


class Workers:
    """`count` worker processes (one per core by default), started on first use and kept
    until they are idle for `idle_seconds`, or `shutdown`."""

    def __init__(self, count: int | None = None, idle_seconds: float = IDLE_SECONDS) -> None:
        self._count = count
        self._idle_seconds = idle_seconds
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()  # two jobs may start at once
        self._jobs = 0
        self._idle: threading.Timer | None = None
        self._rules_folder: str | None = None  # the catalogues' files, made on first use

    @contextmanager
    def job(self, catalogue: Catalogue) -> Iterator[Submit]:
        """Around one job: its pieces' `submitter`; the workers stop when no job follows
        within `idle_seconds`."""
        with self._lock:
            self._jobs += 1
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
        try:
            yield self.submitter(catalogue)
        finally:
            with self._lock:
                self._jobs -= 1
                if not self._jobs and self._pool is not None:
                    self._idle = threading.Timer(self._idle_seconds, self._stop_if_idle)
                    self._idle.daemon = True
                    self._idle.start()

    def _stop_if_idle(self) -> None:
        with self._lock:
            pool = self._pool if not self._jobs else None
            if pool is not None:
                self._pool = None
        if pool is not None:
            logger.info("stopping the idle worker processes")
            pool.shutdown(wait=False)

    @property
    def count(self) -> int:
        if self._count is None:
            from trainmedic.events.parallel import cores  # not at the server's start

            self._count = cores()
        return self._count

    def submitter(self, catalogue: Catalogue) -> Submit:
        """Hands one job's pieces to the workers, to scan with `catalogue`'s rules; they start
        with its first piece (a small log's job hands them none, see `scans`).

        A worker's death breaks the pool: its job gets `WorkerError` (see `scans`), and the
        next job starts new workers."""
        from concurrent.futures.process import BrokenProcessPool

        from trainmedic.events.parallel import WorkerError

        rules, pool, first_piece = "", None, True

        def submit(path: str, first: int, stop: int | None, folder: str) -> _Pooled:
            nonlocal rules, pool, first_piece
            if pool is None:
                rules, pool = self._rules_file(catalogue), self._started()
            try:
                future = pool.submit(_scan, rules, path, first, stop, folder)
            except BrokenProcessPool:
                self._forget(pool)
                if not first_piece:  # pieces of this job were lost with it
                    raise WorkerError from None
                pool = self._started()
                future = pool.submit(_scan, rules, path, first, stop, folder)
            first_piece = False
            return _Pooled(future)

        return submit

    def _rules_file(self, catalogue: Catalogue) -> str:
        """The file the workers read `catalogue` from, named by its content (the same rules
        on the next job are the same file, and each worker keeps its scanner)."""
        import hashlib
        import tempfile

        from trainmedic.events.parallel import remove_orphans

        data = pickle.dumps(catalogue)
        with self._lock:
            if self._rules_folder is None:
                remove_orphans(RULES_PREFIX, tempfile.gettempdir())
                self._rules_folder = tempfile.mkdtemp(prefix=f"{RULES_PREFIX}{os.getpid()}-")
            folder = self._rules_folder
        name = os.path.join(folder, hashlib.sha256(data).hexdigest())
        if not os.path.exists(name):
            handle, written = tempfile.mkstemp(dir=folder)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(written, name)  # whole, for a worker that reads it at once
        return name

    def _started(self) -> ProcessPoolExecutor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with self._lock:
            if self._pool is None:
                if sys.platform == "win32":
                    context = multiprocessing.get_context("spawn")
                else:
                    context = multiprocessing.get_context("forkserver")
                    context.set_forkserver_preload(PRELOADED)
                self._pool = ProcessPoolExecutor(self.count, mp_context=context,
                                                 initializer=_start_worker)
                # All the workers start with the first piece, as the pool does with "fork".
                # Started one by one (CPython 3.11 on), one started for a later piece while a
                # dead worker's pool is torn down misses its terminate, and waits for a piece
                # for good, and with it the server's exit.
                self._pool._safe_to_dynamically_spawn_children = False  # type: ignore[attr-defined]
                logger.info("diagnosing big logs in %d worker processes", self.count)
            return self._pool

    def _forget(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False)

    def shutdown(self) -> None:
        """Stop the workers (pieces not started are dropped) and remove the catalogues'
        files."""
        import shutil

        with self._lock:
            pool, self._pool = self._pool, None
            folder, self._rules_folder = self._rules_folder, None
            if self._idle is not None:
                self._idle.cancel()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

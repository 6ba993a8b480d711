"""Inputs → scans in input order, big or evidence-dense ones scanned on every core in worker
processes.

Chunk boundaries are fixed by byte offset (see `reader`) and a scan needs nothing from the
chunks before it (see `scan`), so a piece scanned in another process yields exactly the scans a
read from the start would. The scans are yielded in input order, so whoever folds them gets
the same answer for any number of workers, whichever of them finishes first.

A worker hands its scans over in a file and sends only the file's name: a worker killed (by the
system, out of memory) while it sent a large answer would leave half a message in the pool's
pipe, and the pool would wait for the rest for ever; a name is sent whole or not at all.
"""

from __future__ import annotations

import os
import signal
import stat
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from trainmedic.events.scan import ChunkScan, Scanner, SourceStart
from trainmedic.logs.formats import Source, adapt
from trainmedic.logs.inputs import InputError
from trainmedic.logs.reader import CHUNK_BYTES, read_chunks, read_part

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from tempfile import TemporaryDirectory

PIECE_CHUNKS = 16  # chunks per task: large enough that handing a task over costs little
PARALLEL_MIN_BYTES = 32 * CHUNK_BYTES  # below this, starting workers costs more than it saves
TASKS_PER_WORKER = 4  # queued ahead, so no worker waits and memory stays bounded
# ...unless the chunks are dense with evidence: each hit or metric line costs about 25 µs to
# scan and fold, a chunk of plain lines about 4 ms. A chunk holding DENSE_LINES of them (an
# fp16 run overflowing at every step, a job's failure flood) costs ten times that, and with
# DENSE_MIN_CHUNKS more to go, workers then pay for their start several times over.
DENSE_LINES = 1000
DENSE_MIN_CHUNKS = 4

# Hands a piece of a file (path, first chunk, stop chunk or None for the end) to a worker, which
# hands its scans over in a file in a folder (the last argument) and answers with its name.
Submit = Callable[[str, int, int | None, str], "Future[str]"]


class WorkerError(Exception):
    """A worker process died (the system may have run out of memory); `str()` says so."""


_worker: dict[str, Scanner] = {}  # each worker's scanner, inherited from the parent


def _start_worker(scanner: Scanner) -> None:
    _worker["scanner"] = scanner
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def scan_piece(scanner: Scanner, path: str, first: int, stop: int | None, folder: str) -> str:
    """The scans of chunks `first` to `stop` of the file at `path`, written to a new file in
    `folder`, whose name is returned (see `taken`); `InputError` if unreadable."""
    try:
        found = [scanner.scan(chunk, keep_head=False) for chunk in read_part(path, first, stop)]
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None
    import pickle
    import tempfile

    handle, name = tempfile.mkstemp(dir=folder)
    with os.fdopen(handle, "wb") as out:
        pickle.dump(found, out, pickle.HIGHEST_PROTOCOL)
    return name


def taken(name: str) -> list[ChunkScan]:
    """The scans a worker handed over in the file `name`, which goes."""
    import pickle

    with open(name, "rb") as handed:
        found: list[ChunkScan] = pickle.load(handed)
    os.unlink(name)
    return found


def _scan_piece(path: str, first: int, stop: int | None, folder: str) -> str:
    return scan_piece(_worker["scanner"], path, first, stop, folder)


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def jobs_for(requested: int | None) -> int:
    """How many processes inputs may be read with (see `scans` for which are): all cores (or
    `requested`), and one where processes cannot be forked."""
    if requested == 1 or not hasattr(os, "fork"):
        return 1
    return requested or cores()


def pieces(chunks: int, jobs: int, first: int = 0) -> Iterator[tuple[int, int | None]]:
    """A file of `chunks` chunks from chunk `first` on cut into pieces (first chunk, stop
    chunk; None: to the end) for `jobs` workers: PIECE_CHUNKS chunks each, then fewer toward
    the end, down to one. A run's failure floods its log's last lines (every rank of a large
    job reports its timeout), and one piece holding all of them kept one worker busy while
    the others had finished."""
    while True:
        stop = first + max(1, min(PIECE_CHUNKS, (chunks - first) // (2 * jobs)))
        if stop >= chunks:
            yield first, None
            return
        yield first, stop
        first = stop


def _plain_file_size(path: str, stream: BinaryIO) -> int | None:
    """The size of a regular file read as it is (not stdin, not bounded or converted)."""
    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    if path == "<stdin>" or not stat.S_ISREG(status.st_mode):
        return None
    return status.st_size


def _read_here(scanner: Scanner, source: Source, chunks: int) -> Generator[ChunkScan, None, int]:
    """The scans of the source's chunks, read in this process until one proves dense with
    evidence and DENSE_MIN_CHUNKS or more follow it (of `chunks`); the chunk to go on from."""
    for chunk in read_chunks(source.stream, source.path):
        scan = scanner.scan(chunk)
        yield scan
        if len(scan.hits) + len(scan.samples) >= DENSE_LINES and \
                chunks - chunk.index > DENSE_MIN_CHUNKS:
            return chunk.index + 1
    return chunks


class _Handed:
    """The pieces handed to workers, in order, and the workers: forked when first needed,
    unless the caller keeps its own (`submit`)."""

    def __init__(self, scanner: Scanner, jobs: int, submit: Submit | None) -> None:
        self.scanner, self.jobs, self.submit = scanner, jobs, submit
        self.queued: deque[Future[str]] = deque()
        self.pool: ProcessPoolExecutor | None = None
        self.folder: TemporaryDirectory[str] | None = None  # where workers hand scans over

    def queue(self, path: str, first: int, stop: int | None) -> None:
        # here: a small input's start never pays for these imports
        import tempfile
        from concurrent.futures.process import BrokenProcessPool

        if self.submit is None:
            self.pool, self.submit = _forked(self.scanner, self.jobs)
        if self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="trainmedic-")
        try:
            self.queued.append(self.submit(path, first, stop, self.folder.name))
        except BrokenProcessPool:
            raise _died() from None

    def oldest(self) -> list[ChunkScan]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return taken(self.queued.popleft().result())
        except BrokenProcessPool:
            raise _died() from None

    def close(self) -> None:
        """Stop the workers forked here, cancel the pieces left, remove what they handed."""
        if self.pool is not None:
            import gc

            self.pool.shutdown(wait=True, cancel_futures=True)
            gc.unfreeze()
        for future in self.queued:
            future.cancel()
        if self.folder is not None:
            self.folder.cleanup()


def scans(scanner: Scanner, inputs: Iterable[tuple[str, BinaryIO]], jobs: int = 1,
          submit: Submit | None = None,
          total_bytes: int | None = None) -> Iterator[SourceStart | ChunkScan]:
    """Every input's `SourceStart` and chunk scans, in input order, scanned in up to `jobs`
    processes.

    Regular files are cut into pieces for the workers when the inputs hold PARALLEL_MIN_BYTES
    or more (`total_bytes`; None: that many). Fewer bytes are read here, chunk by chunk, until
    a chunk proves dense with evidence (see DENSE_LINES) and DENSE_MIN_CHUNKS or more follow
    it: the rest of its file goes to the workers, and the files after it. stdin, error files
    and bounded streams are scanned here, in their place, after everything queued before them.
    The workers are forked for this call when first needed, unless `submit` hands the pieces
    to workers the caller keeps (with the same `scanner`'s rules); then the pieces left when
    the scans stop are cancelled."""
    if jobs <= 1:
        for path, stream in inputs:  # one input at a time: each may be opened lazily
            yield from scanner.scan_source(adapt(path, stream))
        return
    parallel = total_bytes is None or total_bytes >= PARALLEL_MIN_BYTES
    handed = _Handed(scanner, jobs, submit)
    try:
        for path, stream in inputs:
            source = adapt(path, stream)
            size = _plain_file_size(path, stream) if source.stream is stream else None
            if size is None:
                while handed.queued:
                    yield from handed.oldest()
                yield from scanner.scan_source(source)
                continue
            yield SourceStart(path)
            chunks, first = -(-size // CHUNK_BYTES), 0
            if not parallel:
                first = yield from _read_here(scanner, source, chunks)
                parallel = first < chunks
                if not parallel:
                    continue
            for start, stop in pieces(chunks, jobs, first):
                handed.queue(path, start, stop)
                while len(handed.queued) > jobs * TASKS_PER_WORKER:
                    yield from handed.oldest()
        while handed.queued:
            yield from handed.oldest()
    finally:
        handed.close()


def _forked(scanner: Scanner, jobs: int) -> tuple[ProcessPoolExecutor, Submit]:
    """A pool of `jobs` worker processes forked from this one, each with `scanner`, and what
    hands them a piece."""
    import gc
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    gc.freeze()  # until the workers are done, the collector leaves the objects they inherit
    # alone, so that they keep sharing their pages with this process
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker, initargs=(scanner,))

    def submit(path: str, first: int, stop: int | None, folder: str) -> Future[str]:
        return pool.submit(_scan_piece, path, first, stop, folder)

    return pool, submit


def _died() -> WorkerError:
    return WorkerError("a worker process died, perhaps out of memory; try --jobs 1")

"""Inputs → scans in input order, big ones scanned on every core in worker processes.

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
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from trainmedic.events.scan import ChunkScan, Scanner, SourceStart
from trainmedic.logs.formats import adapt
from trainmedic.logs.inputs import InputError
from trainmedic.logs.reader import CHUNK_BYTES, read_part

if TYPE_CHECKING:
    from concurrent.futures import Future

PIECE_CHUNKS = 16  # chunks per task: large enough that handing a task over costs little
PARALLEL_MIN_BYTES = 32 * CHUNK_BYTES  # below this, starting workers costs more than it saves
TASKS_PER_WORKER = 4  # queued ahead, so no worker waits and memory stays bounded

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


def jobs_for(total_bytes: int, requested: int | None) -> int:
    """How many processes to read inputs of `total_bytes` with: all cores (or `requested`) for
    big inputs, one for small ones, and one where processes cannot be forked."""
    if requested == 1 or not hasattr(os, "fork"):
        return 1
    return (requested or cores()) if total_bytes >= PARALLEL_MIN_BYTES else 1


def pieces(chunks: int, jobs: int) -> Iterator[tuple[int, int | None]]:
    """A file of `chunks` chunks cut into pieces (first chunk, stop chunk; None: to the end)
    for `jobs` workers: PIECE_CHUNKS chunks each, then fewer toward the end, down to one. A
    run's failure floods its log's last lines (every rank of a large job reports its timeout),
    and one piece holding all of them kept one worker busy while the others had finished."""
    first = 0
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


def scans(scanner: Scanner, inputs: Iterable[tuple[str, BinaryIO]], jobs: int = 1,
          submit: Submit | None = None) -> Iterator[SourceStart | ChunkScan]:
    """Every input's `SourceStart` and chunk scans, in input order, scanned in `jobs` processes.

    Regular files are cut into pieces for the workers; stdin, error files and bounded streams
    are scanned here, in their place, after everything queued before them. The workers are
    forked for this call, unless `submit` hands the pieces to workers the caller keeps (with
    the same `scanner`'s rules); then the pieces left when the scans stop are cancelled."""
    if jobs <= 1:
        for path, stream in inputs:  # one input at a time: each may be opened lazily
            yield from scanner.scan_source(adapt(path, stream))
        return
    import gc
    import multiprocessing  # here: a small input's start never pays for these imports
    import tempfile
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = None
    if submit is None:
        gc.freeze()  # until the workers are done, the collector leaves the objects they
        # inherit alone, so that they keep sharing their pages with this process
        pool = forked = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                            initializer=_start_worker, initargs=(scanner,))

        def submit(path: str, first: int, stop: int | None, folder: str) -> Future[str]:
            return forked.submit(_scan_piece, path, first, stop, folder)
    queued: deque[Future[str]] = deque()
    died = WorkerError("a worker process died, perhaps out of memory; try --jobs 1")
    handed = tempfile.TemporaryDirectory(prefix="trainmedic-")  # what the workers hand over

    def oldest() -> list[ChunkScan]:
        try:
            return taken(queued.popleft().result())
        except BrokenProcessPool:
            raise died from None

    def queue(path: str, first: int, stop: int | None) -> None:
        try:
            queued.append(submit(path, first, stop, handed.name))
        except BrokenProcessPool:
            raise died from None

    try:
        for path, stream in inputs:
            source = adapt(path, stream)
            size = _plain_file_size(path, stream) if source.stream is stream else None
            if size is None:
                while queued:
                    yield from oldest()
                yield from scanner.scan_source(source)
                continue
            yield SourceStart(path)
            for first, stop in pieces(-(-size // CHUNK_BYTES), jobs):
                queue(path, first, stop)
                while len(queued) > jobs * TASKS_PER_WORKER:
                    yield from oldest()
        while queued:
            yield from oldest()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            gc.unfreeze()
        for future in queued:
            future.cancel()
        handed.cleanup()

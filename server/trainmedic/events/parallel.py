"""Inputs → scans in input order, big or evidence-dense ones scanned on every core in worker
processes.

Chunk boundaries are fixed by byte offset (see `reader`) and a scan needs nothing from the
chunks before it (see `scan`), so a piece scanned in another process yields exactly the scans a
read from the start would. The scans are yielded in input order, so whoever folds them gets
the same answer for any number of workers, whichever of them finishes first.

A worker hands its scans over in a file and sends only the file's name: a worker killed (by the
system, out of memory) while it sent a large answer would leave half a message in the pool's
pipe, and the pool would wait for the rest for ever; a name is sent whole or not at all.

The workers are forked here, each taking pieces over a pipe of its own (`_Forked`), not by
concurrent.futures' pool: importing that pool and what it needs (logging, sockets, subprocess)
took 22 ms before its first worker started, and its first answer 5 to 13 ms more, all of it
before a 256 MiB log's reading could start on every core, which then takes about 0.6 s.
"""

from __future__ import annotations

import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, Protocol

from trainmedic.events.scan import ChunkScan, Scanner, SourceStart
from trainmedic.logs.formats import Source, adapt
from trainmedic.logs.inputs import InputError
from trainmedic.logs.reader import CHUNK_BYTES, read_chunks, read_part

if TYPE_CHECKING:
    from tempfile import TemporaryDirectory

PIECE_CHUNKS = 16  # chunks per task: large enough that handing a task over costs little
PARALLEL_MIN_BYTES = 32 * CHUNK_BYTES  # below this, starting workers costs more than it saves
TASKS_PER_WORKER = 4  # submitted ahead of the fold, so no worker waits and memory stays bounded
AHEAD = 2  # pieces a worker holds: the one it scans and the next (see `_Forked`)
# ...unless the chunks are dense with evidence: each hit or metric line costs about 25 µs to
# scan and fold, a chunk of plain lines about 4 ms. A chunk holding DENSE_LINES of them (an
# fp16 run overflowing at every step, a job's failure flood) costs ten times that, and with
# DENSE_MIN_CHUNKS more to go, workers then pay for their start several times over.
DENSE_LINES = 1000
DENSE_MIN_CHUNKS = 4


class Piece(Protocol):
    """A piece handed to a worker: `result()` waits for the name of the file holding its scans
    (raising what the worker raised, `WorkerError` if it died); `cancel()` drops it if it has
    not started."""

    def result(self) -> str: ...

    def cancel(self) -> bool: ...


# Hands a piece of a file (path, first chunk, stop chunk or None for the end) to a worker, which
# hands its scans over in a file in a folder (the last argument) and answers with its name.
Submit = Callable[[str, int, int | None, str], Piece]


class WorkerError(Exception):
    """A worker process died (the system may have run out of memory); `str()` says so."""

    def __init__(self) -> None:
        super().__init__("a worker process died, perhaps out of memory; try --jobs 1")


_worker: dict[str, Scanner] = {}  # a forked worker's scanner, inherited from the parent


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


SCANS_PREFIX = "trainmedic-scans-"  # a folder where workers hand scans over, then its process id


def remove_orphans(prefix: str, folder: str) -> None:
    """Remove the folders in `folder` named `prefix`, a process id, "-" and more, whose process
    is gone: one killed (out of memory, by the editor) could not remove its own."""
    import shutil

    if sys.platform == "win32":  # where os.kill(pid, 0) would end the process, not test it
        return
    try:
        names = os.listdir(folder)
    except OSError:  # only folders left behind
        return
    for name in names:
        pid = name[len(prefix):].partition("-")[0] if name.startswith(prefix) else ""
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        except OSError:  # alive, but another user's
            pass


def taken(name: str) -> list[ChunkScan]:
    """The scans a worker handed over in the file `name`, which goes."""
    import pickle

    with open(name, "rb") as handed:
        found: list[ChunkScan] = pickle.load(handed)
    os.unlink(name)
    return found


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
        self.queued: deque[Piece] = deque()
        self.forked: _Forked | None = None
        self.folder: TemporaryDirectory[str] | None = None  # where workers hand scans over

    def queue(self, path: str, first: int, stop: int | None) -> None:
        import tempfile  # here: a small input's start never pays for it

        if self.submit is None:
            self.forked = _Forked(self.scanner, self.jobs)
            self.submit = self.forked.submit
        if self.folder is None:
            remove_orphans(SCANS_PREFIX, tempfile.gettempdir())
            self.folder = tempfile.TemporaryDirectory(prefix=f"{SCANS_PREFIX}{os.getpid()}-")
        self.queued.append(self.submit(path, first, stop, self.folder.name))

    def oldest(self) -> list[ChunkScan]:
        return taken(self.queued.popleft().result())

    def finish(self) -> None:
        """No piece follows the queued ones: workers forked here exit once they have answered
        theirs, while their last answers are folded (waiting for them at the end cost 5 ms)."""
        if self.forked is not None:
            self.forked.finish()

    def close(self) -> None:
        """Stop the workers forked here, cancel the pieces left, remove what they handed."""
        for piece in self.queued:
            piece.cancel()
        if self.forked is not None:
            self.forked.close()
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
        handed.finish()
        while handed.queued:
            yield from handed.oldest()
    finally:
        handed.close()


def _scan_piece(path: str, first: int, stop: int | None, folder: str) -> str:
    return scan_piece(_worker["scanner"], path, first, stop, folder)  # what a worker runs


def _serve(scanner: Scanner, tasks: int, answers: int) -> None:
    """A forked worker: each piece read from the pipe `tasks`, scanned, and answered on the
    pipe `answers` (one line each, in order), until the parent closes `tasks`."""
    import json  # here, as below: a small input, read in one process, never needs it
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _worker["scanner"] = scanner
    with open(tasks, "rb") as incoming, open(answers, "wb", buffering=0) as outgoing:
        for line in incoming:
            path, first, stop, folder = json.loads(line)
            try:
                answer = ["done", _scan_piece(path, first, stop, folder)]
            except InputError as error:
                answer = ["unreadable", str(error)]
            except MemoryError:  # as if the system had killed it
                answer = ["died", ""]
            except Exception:  # a fault of this code: the parent shows where
                import traceback

                answer = ["failed", traceback.format_exc()]
            outgoing.write(json.dumps(answer).encode() + b"\n")


class _Worker:
    """A forked worker, as its parent sees it: the pipes to it and from it, and the pieces it
    was given and has not answered yet, oldest first."""

    def __init__(self, pid: int, tasks: int, answers: int) -> None:
        self.pid = pid
        self.tasks = open(tasks, "wb", buffering=0)  # noqa: SIM115  closed by _Forked.close
        # Read unbuffered, so that `select` sees every answer not read yet.
        self.answers = answers
        self.unread = b""  # the start of an answer read in part
        self.given: deque[_ForkedPiece] = deque()

    def give(self, piece: _ForkedPiece) -> None:
        import json

        try:
            self.tasks.write(json.dumps(piece.task).encode() + b"\n")
        except BrokenPipeError:
            raise WorkerError from None
        self.given.append(piece)

    def read_answer(self) -> None:
        """Wait for the answer to the oldest piece given; `WorkerError` if the worker died."""
        import json

        while b"\n" not in self.unread:
            data = os.read(self.answers, 1 << 16)
            if not data:
                raise WorkerError
            self.unread += data
        line, _, self.unread = self.unread.partition(b"\n")
        kind, text = json.loads(line)
        self.given.popleft().answer = kind, text


class _ForkedPiece:
    """A piece for `_Forked`'s workers (path, first chunk, stop chunk, folder), and its answer
    once read."""

    def __init__(self, forked: _Forked, task: list[object]) -> None:
        self.forked, self.task = forked, task
        self.answer: tuple[str, str] | None = None

    def result(self) -> str:
        while self.answer is None:
            self.forked.wait()
        kind, text = self.answer
        if kind == "unreadable":
            raise InputError(text)
        if kind == "died":
            raise WorkerError
        if kind == "failed":
            raise RuntimeError(f"a worker process failed:\n{text}")
        return text

    def cancel(self) -> bool:
        """Drop the piece if no worker has it; one in a worker's pipe goes with the worker."""
        if self in self.forked.waiting:
            self.forked.waiting.remove(self)
            return True
        return False


class _Forked:
    """`jobs` worker processes forked from this one, each with `scanner` (inherited, never
    sent), given pieces over pipes of their own.

    A worker holds at most AHEAD pieces not answered: the others wait here until one is free.
    A failure floods a log's last chunks, each of which then takes ten times as long to scan;
    given out four at a time, two of them waited behind each other in one worker while the
    other sat idle (the 4096-rank bench log's last 70 ms)."""

    def __init__(self, scanner: Scanner, jobs: int) -> None:
        import gc

        gc.freeze()  # until the workers are done, the collector leaves the objects they inherit
        # alone, so that they keep sharing their pages with this process
        self.workers: list[_Worker] = []
        self.waiting: deque[_ForkedPiece] = deque()  # submitted, for the first worker free
        self.finished = False  # no piece follows the submitted ones
        try:
            for _ in range(jobs):
                self.workers.append(self._fork(scanner))
        except BaseException:
            self.close()
            raise

    def _fork(self, scanner: Scanner) -> _Worker:
        tasks_read, tasks_write = os.pipe()
        answers_read, answers_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: it never returns into the code that forked it
            code = 0
            try:
                for worker in self.workers:  # the pipes to the others: theirs to see closed
                    worker.tasks.close()
                    os.close(worker.answers)
                os.close(tasks_write)
                os.close(answers_read)
                _serve(scanner, tasks_read, answers_write)
            except BaseException:  # whatever it was, the parent sees the worker die
                code = 1
            finally:
                os._exit(code)
        os.close(tasks_read)
        os.close(answers_write)
        return _Worker(pid, tasks_write, answers_read)

    def submit(self, path: str, first: int, stop: int | None, folder: str) -> Piece:
        piece = _ForkedPiece(self, [path, first, stop, folder])
        self.waiting.append(piece)
        self._give()
        return piece

    def _give(self) -> None:
        """Give waiting pieces to the workers with room for them, the least busy first; once
        none is left to give and none will follow, close the pipes pieces go to: each worker
        exits once it has answered its pieces."""
        while self.waiting:
            worker = min(self.workers, key=lambda w: len(w.given))
            if len(worker.given) >= AHEAD:
                return
            worker.give(self.waiting.popleft())
        if self.finished:
            for worker in self.workers:
                worker.tasks.close()

    def wait(self) -> None:
        """Read the answers of whichever workers answer next, and give them waiting pieces.
        (`poll`, not `select`, which refuses a descriptor numbered 1024 or more.)"""
        import select

        busy = [worker for worker in self.workers if worker.given]
        ready = [worker for worker in busy if b"\n" in worker.unread]
        if not ready:
            poller = select.poll()
            for worker in busy:
                poller.register(worker.answers, select.POLLIN)
            answered = {descriptor for descriptor, _ in poller.poll()}
            ready = [worker for worker in busy if worker.answers in answered]
        for worker in ready:
            worker.read_answer()
        self._give()

    def finish(self) -> None:
        """No piece follows the submitted ones."""
        self.finished = True
        self._give()

    def close(self) -> None:
        """Stop the workers: at once if pieces are left (a diagnosis stopped early), else
        once they have seen their pipes close."""
        import gc
        import signal

        self.waiting.clear()
        for worker in self.workers:
            if worker.given:
                os.kill(worker.pid, signal.SIGKILL)
            worker.tasks.close()
            os.close(worker.answers)
        for worker in self.workers:
            os.waitpid(worker.pid, 0)
        gc.unfreeze()

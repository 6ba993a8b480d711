"""Follow growing logs (files or a torchrun log folder) and report as soon as a root cause shows.

Each file is read once: every poll reads only the bytes appended since the last one, so
following a log costs no more than reading it. A file that was rotated, truncated or rewritten
is read again from its start; new files in a watched folder join when they appear; a compressed
one, archived whole, is read whole once. The language server follows an open log with the same
`GrowingFile`.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from trainmedic.catalogue.rules import Catalogue
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.logs.formats import adapt, written_whole
from trainmedic.logs.inputs import (
    SNIFF_BYTES,
    InputError,
    compression,
    expand,
    open_regular,
    opened,
    refused,
)
from trainmedic.logs.reader import CHUNK_BYTES, Chunker
from trainmedic.model import Diagnosis

READ_PER_POLL = 64 * CHUNK_BYTES
TAIL_BYTES = 1024  # the last bytes read, read again to tell an append from a rewrite


class GrowingFile:
    """One file that is being appended to, read from where the last read stopped.

    Growth is trusted only when the file is still the one opened (log rotation replaces it),
    no shorter than what was read, and still holds the last bytes read where they were read;
    otherwise it was rewritten and is read again from its start.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.stream = open_regular(path)  # kept open while followed
        except InputError as error:  # callers (the editor's too) expect an OSError
            raise OSError(str(error)) from None
        self.inode = os.fstat(self.stream.fileno()).st_ino
        self.position = 0
        self.tail = b""

    def _rewritten(self) -> bool:
        try:
            stat = os.stat(self.path)
        except OSError:
            return False  # moved away: whatever is written there next is another file
        if stat.st_ino != self.inode or stat.st_size < self.position:
            return True
        if stat.st_size == self.position or not self.tail:
            return False
        self.stream.seek(self.position - len(self.tail))
        return self.stream.read(len(self.tail)) != self.tail

    def restart_if_rewritten(self) -> bool:
        """Whether the file was rewritten and is now to be read again from its start."""
        if not self._rewritten():
            return False
        try:
            stream = open_regular(self.path)  # kept open while followed
            inode = os.fstat(stream.fileno()).st_ino
        except (OSError, InputError):
            return False  # gone again: look next time
        self.stream.close()
        self.stream, self.inode, self.position, self.tail = stream, inode, 0, b""
        return True

    def read(self, budget: int | None = None) -> Iterator[bytes]:
        """What the file appended since the last read (at most `budget` bytes), in pieces."""
        self.stream.seek(self.position)
        while budget is None or budget > 0:
            data = self.stream.read(CHUNK_BYTES if budget is None else min(CHUNK_BYTES, budget))
            if not data:
                return
            self.position += len(data)
            self.tail = (self.tail + data)[-TAIL_BYTES:]
            if budget is not None:
                budget -= len(data)
            yield data

    def close(self) -> None:
        self.stream.close()


@dataclass
class _Followed:
    file: GrowingFile
    chunker: Chunker


@dataclass
class Follower:
    """The files under `paths`, read incrementally into a Diagnoser."""

    paths: list[str]
    diagnoser: Diagnoser
    files: dict[str, _Followed | None] = field(default_factory=dict)  # None: read whole, once
    bytes_read: int = 0
    warnings: list[str] = field(default_factory=list)

    def _discover(self) -> list[str]:
        try:
            found, warnings = expand(self.paths)
        except InputError:
            return []  # a folder that has no logs yet
        self.warnings = warnings
        return [name for name in found if name != "-"]

    def _open(self, name: str) -> None:
        try:
            file = GrowingFile(name)
        except (OSError, InputError):
            return
        if compression(file.stream.read(SNIFF_BYTES)) is not None:  # told as diagnose tells it
            file.close()
            self._read_whole(name)
            return
        if written_whole(name):
            source = adapt(name, file.stream)
            if source.timestamp is not None:
                self.diagnoser.read(source)
                self.files[name] = None
                file.close()
                return
        self.diagnoser.start(name)
        self.files[name] = _Followed(file, Chunker(name, eager=True))

    def _read_whole(self, name: str) -> None:
        """A compressed log, read once as `diagnose` reads it: decompressed, then adapted."""
        try:
            with opened([name]) as inputs:
                for shown, stream in inputs:
                    self.diagnoser.read(adapt(shown, stream))
        except (OSError, InputError):
            return
        self.files[name] = None

    def poll(self) -> int:
        """Read what every followed file appended; returns the number of new bytes."""
        for name in self._discover():
            if name not in self.files:
                self._open(name)
        fresh = 0
        for name, followed in self.files.items():
            if followed is None:
                continue
            if followed.file.restart_if_rewritten():
                followed.chunker = Chunker(name, eager=True)
                self.diagnoser.restart(name)
            for data in followed.file.read(READ_PER_POLL):
                fresh += len(data)
                for chunk in followed.chunker.feed(data):
                    self.diagnoser.add(chunk)
        self.bytes_read += fresh
        return fresh

    def close(self) -> None:
        for followed in self.files.values():
            if followed is not None:
                followed.file.close()


def refuse_unwatchable(paths: list[str]) -> None:
    """Raise InputError for a path that can never be followed: missing, unreadable, or not a
    regular file (a pipe would block). A folder may still be empty: its logs come later."""
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            raise refused(path, error) from None
        if stat.S_ISDIR(mode):
            if not os.access(path, os.R_OK | os.X_OK):
                raise InputError(f"{path}: permission denied")
        else:
            open_regular(path).close()


def watch(paths: list[str], catalogue: Catalogue, interval: float = 1.0,
          timeout: float | None = None,
          progress: Callable[[Follower, float], None] | None = None) -> Diagnosis:
    """Poll until a root cause appears (or `timeout` seconds pass); the diagnosis then."""
    follower = Follower(paths, Diagnoser(catalogue))
    start = time.monotonic()
    try:
        while True:
            fresh = follower.poll()
            if fresh:
                diagnosis = follower.diagnoser.diagnosis()
                if diagnosis.root_causes:
                    return diagnosis
            elapsed = time.monotonic() - start
            if timeout is not None and elapsed >= timeout:
                return follower.diagnoser.diagnosis()
            if progress is not None:
                progress(follower, elapsed)
            if not fresh:
                time.sleep(interval)
    finally:
        follower.close()

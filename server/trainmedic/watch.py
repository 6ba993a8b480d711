"""Follow growing logs (files or a torchrun log folder) and report as soon as a root cause shows.

Each file is read once: every poll reads only the bytes appended since the last one, so
following a log costs no more than reading it. A file that shrinks was rotated or truncated
and is read again from its start; new files in a watched folder join when they appear.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from trainmedic.catalogue import Catalogue
from trainmedic.engine import Diagnoser
from trainmedic.formats import adapt
from trainmedic.inputs import InputError, expand
from trainmedic.model import Diagnosis
from trainmedic.reader import CHUNK_BYTES, Chunker

READ_PER_POLL = 64 * CHUNK_BYTES


@dataclass
class _Followed:
    stream: BinaryIO
    chunker: Chunker
    inode: int
    position: int = 0


@dataclass
class Follower:
    """The files under `paths`, read incrementally into a Diagnoser."""

    paths: list[str]
    diagnoser: Diagnoser
    files: dict[str, _Followed] = field(default_factory=dict)
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
            stream = open(name, "rb")  # noqa: SIM115 - kept open while followed
            inode = os.fstat(stream.fileno()).st_ino
        except OSError:
            return
        if name.endswith(".json"):  # an error file is written whole, once
            source = adapt(name, stream)
            if source.timestamp is not None:
                self.diagnoser.read(source)
                self.files[name] = _Followed(io.BytesIO(), Chunker(name), inode)
                stream.close()
                return
        self.diagnoser.start(name)
        self.files[name] = _Followed(stream, Chunker(name), inode)

    def poll(self) -> int:
        """Read what every followed file appended; returns the number of new bytes."""
        for name in self._discover():
            if name not in self.files:
                self._open(name)
        fresh = 0
        for name, followed in self.files.items():
            try:
                size = os.stat(name).st_size
            except OSError:
                continue
            if size < followed.position:  # truncated or rotated: start again
                followed.stream.seek(0)
                followed.position, followed.chunker = 0, Chunker(name)
            budget = READ_PER_POLL
            while budget > 0 and (data := followed.stream.read(min(CHUNK_BYTES, budget))):
                followed.position += len(data)
                fresh += len(data)
                budget -= len(data)
                if (chunk := followed.chunker.feed(data)) is not None:
                    self.diagnoser.add(chunk)
        self.bytes_read += fresh
        return fresh

    def close(self) -> None:
        for followed in self.files.values():
            followed.stream.close()


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

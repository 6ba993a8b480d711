"""An open log's file, followed on disk: each poll reads only the bytes the file appended.

What the server needs is kept up as the bytes arrive, so none is read twice: the diagnosis,
where each line is in the editor (`LineIndex`), and what tells a document the client reloaded
from disk from one the user edited: a checksum of the bytes read, with the last `RECENT_BYTES`
of them kept as they are. A rewritten file is read again from its start; a last line still
being written is diagnosed once its newline arrives. Polls run in the server's worker threads.
"""

from __future__ import annotations

import threading
import zlib

from pygls.workspace import PositionCodec

from trainmedic.catalogue.rules import Catalogue
from trainmedic.logs.reader import Chunker
from trainmedic.lsp.conversions import LineIndex, Published, publishable
from trainmedic.matching.python import Matcher

# How far the client's copy of a growing file may lag behind what was read and still match it.
RECENT_BYTES = 1 << 20


class FollowedLog:
    """The file at `path`, read as it grows and diagnosed with `catalogue`."""

    def __init__(self, path: str, catalogue: Catalogue, matcher: Matcher,
                 codec: PositionCodec) -> None:
        from trainmedic.diagnosis.watch import GrowingFile  # here: the server starts without it

        self.file = GrowingFile(path)  # OSError: not on disk
        self.catalogue, self.matcher, self.codec = catalogue, matcher, codec
        self.lock = threading.Lock()  # one poll at a time, and no answer from a half-read one
        self.closed = False
        self.bytes_read = 0
        self._start()

    def _start(self) -> None:
        from trainmedic.diagnosis.engine import Diagnoser

        path = self.file.path
        self.chunker = Chunker(path, eager=True)
        self.diagnoser = Diagnoser(self.catalogue, self.matcher)
        self.diagnoser.start(path)
        self.lines = LineIndex(self.codec)
        self.summed = self.checksum = 0  # the CRC-32 of the first `summed` bytes
        self.recent = bytearray()  # the bytes read after those

    def poll(self) -> bool:
        """Read what the file appended (all of it again if it was rewritten); whether any."""
        with self.lock:
            if self.closed:
                return False
            changed = self.file.restart_if_rewritten()
            if changed:
                self._start()
            for data in self.file.read():
                if self.closed:
                    break
                self._add(data)
                changed = True
            return changed

    def _add(self, data: bytes) -> None:
        self.bytes_read += len(data)
        self.lines.feed(data)
        for chunk in self.chunker.feed(data):
            self.diagnoser.add(chunk)
        self.recent += data
        if (older := len(self.recent) - RECENT_BYTES) > 0:
            self.checksum = zlib.crc32(self.recent[:older], self.checksum)
            self.summed += older
            del self.recent[:older]

    def matches(self, text: str) -> bool:
        """Whether `text` is the file as read, or as it was at most `RECENT_BYTES` earlier."""
        data = text.encode("utf-8", errors="replace")
        with self.lock:
            size = len(data) - self.summed
            return (0 <= size <= len(self.recent) and data[self.summed:] == self.recent[:size]
                    and zlib.crc32(memoryview(data)[: self.summed]) == self.checksum)

    def published(self, uri: str, collateral: str) -> Published:
        """The diagnostics of what was read, placed where the file's lines are in `uri`."""
        with self.lock:
            return publishable(self.diagnoser.diagnosis(), self.catalogue, uri, self.lines,
                               collateral)

    def close(self) -> None:
        """Stop: a poll still reading stops at its next piece, then the file is closed."""
        self.closed = True
        with self.lock:
            self.file.close()

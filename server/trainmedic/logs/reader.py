"""Bytes in, chunks of whole normalised lines out, cut where any reader would cut them.

Chunks follow fixed byte offsets, so a part of a file read on its own cuts the same chunks as a
read from the start. The reader never splits on a lone carriage return: a `\\r` progress bar is
resolved to the text it ends with, so line numbers agree with what an editor shows. Memory stays
bounded by the chunk size: a line longer than `MAX_LINE_BYTES` is cut there and the rest of it
skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from trainmedic.model import Line

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20
MAX_LINE_CHARS = 4000  # what a Line keeps for display; matching sees the whole line

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


@dataclass(frozen=True)
class Chunk:
    """Whole lines of one source: those that start in bytes `[index, index + 1) * CHUNK_BYTES`."""

    path: str
    text: str
    index: int
    size: int  # the bytes it was read from

    def line_at(self, offset: int, number: int) -> Line:
        """The line around `offset`, numbered `number`, cut to what a Line keeps."""
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        return Line(self.path, number, capped(self.text[start : end if end >= 0 else None]))

    def lines(self) -> list[str]:
        return self.text[:-1].split("\n") if self.text else []


class LineCounter:
    """Line numbers (from 0) at increasing offsets of a text, counting each newline once."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.number = text, 0, 0

    def at(self, offset: int) -> int:
        self.number += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.number


def capped(text: str) -> str:
    """A line as a Line keeps it: at most MAX_LINE_CHARS characters."""
    return text[:MAX_LINE_CHARS] + "…" if len(text) > MAX_LINE_CHARS else text


def normalise(text: str) -> str:
    """Resolve CRLF and `\r` overwrites to their final text, and drop ANSI escapes."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    first = text.find("\r")
    if first < 0:
        return text
    if text.startswith("\r\n", first):  # Windows line ends: convert them all at once
        while "\r\n" in text:  # and the stray \r\r\n of doubly converted files
            text = text.replace("\r\n", "\n")
        if "\r" not in text:
            return text
    return _resolve_overwrites(text)


def _resolve_overwrites(text: str) -> str:
    """Keep what follows the last `\r` of each line (ignoring `\r`s that end it): what a
    terminal finally showed."""
    pieces, start = [], 0
    cr = text.find("\r")
    while cr >= 0:
        line_start = text.rfind("\n", start, cr) + 1 or start
        line_end = text.find("\n", cr)
        line_end = len(text) if line_end < 0 else line_end
        content_end = line_end
        while content_end > line_start and text[content_end - 1] == "\r":
            content_end -= 1
        last_cr = text.rfind("\r", line_start, content_end)
        pieces.append(text[start:line_start])
        pieces.append(text[last_cr + 1 if last_cr >= 0 else line_start : content_end])
        start = line_end
        cr = text.find("\r", start)
    pieces.append(text[start:])
    return "".join(pieces)


class Chunker:
    """Bytes of one source, fed in order from `offset`, out as chunks of whole normalised lines.

    Chunk k holds the lines that start in bytes `[k, k + 1) * chunk_bytes` of the source, so
    chunks do not depend on how the bytes arrive or where reading began: a part of a file read
    by another process cuts the same chunks as a read from the start. `eager` instead hands out
    every complete line at once, for a log being followed as it grows.
    """

    def __init__(self, path: str, offset: int = 0, chunk_bytes: int = CHUNK_BYTES,
                 eager: bool = False) -> None:
        self.path, self.chunk_bytes, self.eager = path, chunk_bytes, eager
        self.pending = bytearray()
        self.start = offset  # where `pending` starts in the source
        self.skipping = False  # inside the unread tail of an over-long line

    def _take(self, end: int, tail: bytes = b"") -> Chunk:
        """The first `end` bytes of `pending` (and `tail`) as the next chunk, decoded in place."""
        with memoryview(self.pending) as view, view[:end] as raw:
            text = str(raw, "utf-8", "replace") + tail.decode()
        chunk = Chunk(self.path, normalise(text), self.start // self.chunk_bytes, end)
        del self.pending[:end]
        self.start += end
        return chunk

    def feed(self, data: bytes) -> list[Chunk]:
        """The chunks that `data` completes."""
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                self.start += len(data)
                return []
            data, self.skipping = data[cut + 1 :], False
            self.start += cut + 1
        self.pending += data
        chunks = []
        while self.pending:
            limit = 1 if self.eager else self.chunk_bytes - self.start % self.chunk_bytes
            end = (self.pending.rfind(b"\n") if self.eager
                   else self.pending.find(b"\n", limit - 1))
            if end < 0:
                break
            chunks.append(self._take(end + 1))
        line_start = self.pending.rfind(b"\n") + 1
        if len(self.pending) - line_start > MAX_LINE_BYTES:  # its chunk ends with its cut head
            skipped = len(self.pending) - line_start - MAX_LINE_BYTES
            chunks.append(self._take(line_start + MAX_LINE_BYTES, b"\n"))
            self.start += skipped
            self.pending.clear()
            self.skipping = True
        return chunks

    def flush(self) -> Chunk | None:
        """The lines left when the source ends, the last one perhaps without its newline."""
        if not self.pending:
            return None
        return self._take(len(self.pending), b"" if self.pending.endswith(b"\n") else b"\n")


def read_chunks(stream: BinaryIO, path: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Every chunk of `stream`, in order."""
    chunker = Chunker(path, chunk_bytes=chunk_bytes)
    while data := stream.read(chunk_bytes):
        yield from chunker.feed(data)
    if (chunk := chunker.flush()) is not None:
        yield chunk


def read_part(path: str, first: int, stop: int | None,
              chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Chunks `first` to `stop` (excluded; None for the end) of a file, as a whole read cuts them.

    Reading starts at the first line that begins in chunk `first` and runs past the end of
    chunk `stop - 1` to finish its last line.
    """
    with open(path, "rb") as stream:
        offset = first * chunk_bytes
        if offset:
            stream.seek(offset - 1)
            if stream.read(1) != b"\n":  # inside a line that belongs to an earlier chunk
                while (data := stream.read(chunk_bytes)) and (cut := data.find(b"\n")) < 0:
                    offset += len(data)
                offset += cut + 1 if data else 0
                stream.seek(offset)
        chunker = Chunker(path, offset, chunk_bytes)
        while data := stream.read(chunk_bytes):
            for chunk in chunker.feed(data):
                if stop is not None and chunk.index >= stop:
                    return
                yield chunk
        if (last := chunker.flush()) is not None and (stop is None or last.index < stop):
            yield last


def read_lines(stream: BinaryIO, path: str) -> Iterator[Line]:
    """Every line of `stream`, numbered; for small inputs and tests (the engine reads chunks)."""
    number = 1
    for chunk in read_chunks(stream, path):
        for text in chunk.lines():
            yield Line(path, number, text)
            number += 1

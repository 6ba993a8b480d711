"""Bytes in, newline-aligned normalised text out, with editor line numbers.

The reader never splits on a lone carriage return: a `\\r` progress bar is resolved to the text
it ends with, so line numbers agree with what an editor shows. Memory stays bounded by the chunk
size: a line longer than `MAX_LINE_BYTES` is cut there and the rest of it skipped.
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
    """Whole lines of one source; `first_line` is the editor number of the first of them."""

    path: str
    text: str
    first_line: int

    def line_at(self, offset: int, number: int) -> Line:
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        text = self.text[start : end if end >= 0 else len(self.text)]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "…"
        return Line(self.path, number, text)

    def lines(self) -> list[str]:
        return self.text[:-1].split("\n") if self.text else []


def normalise(text: str) -> str:
    """Resolve CRLF and `\\r` overwrites to their final text, and drop ANSI escapes."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        while "\r\n" in text:  # CRLF, and the stray \r\r\n of doubly converted files
            text = text.replace("\r\n", "\n")
        text = text.rstrip("\r")
        text = _resolve_overwrites(text) if "\r" in text else text
    return text


def _resolve_overwrites(text: str) -> str:
    """Keep what follows the last `\r` of each line: what a terminal finally showed."""
    pieces, start = [], 0
    cr = text.find("\r")
    while cr >= 0:
        line_start = text.rfind("\n", start, cr) + 1 or start
        line_end = text.find("\n", cr)
        line_end = len(text) if line_end < 0 else line_end
        last_cr = text.rfind("\r", cr, line_end)
        pieces.append(text[start:line_start])
        pieces.append(text[last_cr + 1:line_end])
        start = line_end
        cr = text.find("\r", start)
    pieces.append(text[start:])
    return "".join(pieces)


def _decode(raw: bytes) -> str:
    return normalise(raw.decode("utf-8", errors="replace"))


class Chunker:
    """Bytes of one source, fed in any pieces, out as chunks of whole normalised lines."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pending = b""
        self.skipping = False  # inside the unread tail of an over-long line
        self.next_line = 1

    def _chunk(self, raw: bytes) -> Chunk:
        text = _decode(raw)
        chunk = Chunk(self.path, text, self.next_line)
        self.next_line += text.count("\n")
        return chunk

    def feed(self, data: bytes) -> Chunk | None:
        """The complete lines that `data` finishes, if any."""
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                return None
            data, self.skipping = data[cut + 1 :], False
        buffer = self.pending + data
        cut = buffer.rfind(b"\n")
        if cut < 0:
            if len(buffer) <= MAX_LINE_BYTES:
                self.pending = buffer
                return None
            buffer, self.pending, self.skipping = buffer[:MAX_LINE_BYTES] + b"\n", b"", True
        else:
            buffer, self.pending = buffer[: cut + 1], buffer[cut + 1 :]
            if len(self.pending) > MAX_LINE_BYTES:
                buffer += self.pending[:MAX_LINE_BYTES] + b"\n"
                self.pending, self.skipping = b"", True
        return self._chunk(buffer)

    def flush(self) -> Chunk | None:
        """The last line when the source ended without a newline."""
        if not self.pending:
            return None
        raw, self.pending = self.pending + b"\n", b""
        return self._chunk(raw)


def read_chunks(stream: BinaryIO, path: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield newline-aligned chunks of `stream`, each ending with a newline."""
    chunker = Chunker(path)
    while data := stream.read(chunk_bytes):
        if (chunk := chunker.feed(data)) is not None:
            yield chunk
    if (chunk := chunker.flush()) is not None:
        yield chunk


def read_lines(stream: BinaryIO, path: str) -> Iterator[Line]:
    """Every line of `stream`, numbered; for small inputs and tests (the engine reads chunks)."""
    for chunk in read_chunks(stream, path):
        for index, text in enumerate(chunk.lines()):
            yield Line(path, chunk.first_line + index, text)

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
_CR_BEFORE_NL = re.compile(r"\r+\n")


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
        text = _CR_BEFORE_NL.sub("\n", text).rstrip("\r")
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


def read_chunks(stream: BinaryIO, path: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield newline-aligned chunks of `stream`, each ending with a newline."""
    pending = b""
    skipping = False  # inside the unread tail of an over-long line
    next_line = 1
    while True:
        data = stream.read(chunk_bytes)
        if not data:
            break
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                continue
            data = data[cut + 1 :]
            skipping = False
        buffer = pending + data
        cut = buffer.rfind(b"\n")
        if cut < 0:
            if len(buffer) > MAX_LINE_BYTES:
                buffer, pending, skipping = buffer[:MAX_LINE_BYTES] + b"\n", b"", True
            else:
                pending = buffer
                continue
        else:
            buffer, pending = buffer[: cut + 1], buffer[cut + 1 :]
            if len(pending) > MAX_LINE_BYTES:
                buffer += pending[:MAX_LINE_BYTES] + b"\n"
                pending, skipping = b"", True
        text = _decode(buffer)
        yield Chunk(path, text, next_line)
        next_line += text.count("\n")
    if pending:
        yield Chunk(path, _decode(pending) + "\n", next_line)


def read_lines(stream: BinaryIO, path: str) -> Iterator[Line]:
    """Every line of `stream`, numbered; for small inputs and tests (the engine reads chunks)."""
    for chunk in read_chunks(stream, path):
        for index, text in enumerate(chunk.lines()):
            yield Line(path, chunk.first_line + index, text)

"""Bytes in, chunks of whole normalised lines out, cut where any reader would cut them.

Chunks follow fixed byte offsets, so a part of a file read on its own cuts the same chunks as a
read from the start. The reader never splits on a lone carriage return: a `\\r` progress bar is
resolved to the text it ends with, so line numbers agree with what an editor shows. Memory stays
bounded by the chunk size: a line longer than `MAX_LINE_BYTES` is cut there and the rest of it
skipped. A chunk stays bytes (normalised as bytes: carriage returns, line feeds and escapes are
ASCII, never part of a UTF-8 sequence, and a no-break space or curly quote is a whole one); it
is decoded only where text is needed, mostly line by line, since decoding a whole chunk costs
more than scanning it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import BinaryIO

from trainmedic.model import Line

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20
MAX_LINE_CHARS = 4000  # what a Line keeps for display; matching sees the whole line
COUNTER_STRIDE = 1 << 16  # bytes between the line numbers a LineCounter keeps
_DENSITY_PROBE, _DENSE_NEWLINES = 64, 4  # more newlines than this in a span's first bytes

# U+2018 and U+2019, U+201C and U+201D in UTF-8, and the straight quote each stands for.
_CURLY_QUOTES = re.compile(rb"\xe2\x80[\x98\x99\x9c\x9d]")
_PLAIN_QUOTES = {"\u2018".encode(): b"'", "\u2019".encode(): b"'",
                 "\u201c".encode(): b'"', "\u201d".encode(): b'"'}
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def decoded(data: bytes) -> str:
    """Bytes of a log as text: what is not UTF-8 shows as U+FFFD."""
    return str(data, "utf-8", "replace")


def char_offsets(data: bytes, offsets: Iterable[int]) -> dict[int, int]:
    """Each of `offsets` (at characters' starts in UTF-8 `data`) with its character offset."""
    found, position, chars = {}, 0, 0
    for offset in sorted(set(offsets)):
        chars += len(data[position:offset].decode("utf-8", "surrogatepass"))
        found[offset], position = chars, offset
    return found


def byte_offsets(text: str, offsets: Iterable[int]) -> dict[int, int]:
    """Each of `offsets` (characters of a chunk's `text`) with its byte offset in the chunk."""
    found, position, size = {}, 0, 0
    for offset in sorted(set(offsets)):
        size += len(text[position:offset].encode("utf-8", "surrogateescape"))
        found[offset], position = size, offset
    return found


class Chunk:
    """Whole normalised lines of one source: those that start in bytes
    `[index, index + 1) * CHUNK_BYTES`. Offsets into a chunk count its bytes."""

    __slots__ = ("_text", "data", "index", "path", "size")

    def __init__(self, path: str, data: bytes, index: int, size: int) -> None:
        self.path, self.data, self.index = path, data, index
        self.size = size  # the bytes it was read from
        self._text: str | None = None

    @property
    def text(self) -> str:
        """The chunk as a text matcher reads it: bytes that are not UTF-8 become surrogate
        escapes, so that each character's bytes are known (`byte_offsets`). Decoded when
        first asked for."""
        if self._text is None:
            self._text = self.data.decode("utf-8", "surrogateescape")
        return self._text

    def line(self, offset: int) -> str:
        """The text of the line around byte `offset`."""
        end = self.data.find(b"\n", offset)
        return decoded(self.data[self.data.rfind(b"\n", 0, offset) + 1 : end if end >= 0 else None])

    def lines(self) -> list[str]:
        return [decoded(line) for line in self.data[:-1].split(b"\n")] if self.data else []


def _newlines(data: bytes, start: int, end: int) -> int:
    """How many newlines `data[start:end]` holds.

    `bytes.count` looks at every byte; deleting the newlines finds each with `memchr` and
    copies what is between: four times quicker for lines of a log's usual length, and slower
    for lines of a few bytes, which the span's first _DENSITY_PROBE bytes tell."""
    if data.count(b"\n", start, start + _DENSITY_PROBE) > _DENSE_NEWLINES:
        return data.count(b"\n", start, end)
    piece = data[start:end]
    return len(piece) - len(piece.replace(b"\n", b""))


class LineCounter:
    """Line numbers (from 0) at offsets of bytes. Offsets asked in order count each newline
    once; an offset behind the furthest one asked is counted from the offset asked before it
    or from the line number kept at every COUNTER_STRIDE bytes, whichever is nearer, so several
    runs in order (hits, then traceback marks, then samples) cost little more than one pass,
    and no order costs more than linear time."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = self.number = 0  # the furthest offset asked, and its line number
        self._last = (0, 0)  # the offset asked last, and its line number
        self._strides = [0]  # the line number at each multiple of COUNTER_STRIDE so far

    def at(self, offset: int) -> int:
        data, strides = self.data, self._strides
        if offset < self.offset:
            start = offset // COUNTER_STRIDE * COUNTER_STRIDE
            number = strides[start // COUNTER_STRIDE]
            if start < self._last[0] <= offset:
                start, number = self._last
            number += newlines(data, start, offset)
            self._last = offset, number
            return number
        while (stride := len(strides) * COUNTER_STRIDE) <= offset:
            self.number += newlines(data, self.offset, stride)
            self.offset = stride
            strides.append(self.number)
        self.number += newlines(data, self.offset, offset)
        self.offset = offset
        self._last = offset, self.number
        return self.number


def capped(text: str) -> str:
    """A line as a Line keeps it: at most MAX_LINE_CHARS characters."""
    return text[:MAX_LINE_CHARS] + "…" if len(text) > MAX_LINE_CHARS else text


def normalise(data: bytes) -> bytes:
    """Resolve CRLF and `\r` overwrites to their final text, drop ANSI escapes, and read a
    no-break space as a space and curly quotes as straight ones: a log copied from a web page
    has the first wherever the page kept two spaces apart, and the second where its typesetting
    turned quotes round; the messages the rules know were printed with plain ones."""
    if b"\x1b" in data:
        data = _ANSI.sub(b"", data)
    # Single bytes are looked for at memchr's speed, longer needles far slower: `\xa0` ends a
    # no-break space and `\x80` is inside every curly quote (and in few other characters).
    # Most logs are ASCII, which a quicker pass over the chunk tells.
    if not data.isascii():
        if b"\xa0" in data:
            data = data.replace(b"\xc2\xa0", b" ")
        if b"\x80" in data:
            data = _CURLY_QUOTES.sub(lambda match: _PLAIN_QUOTES[match.group()], data)
    first = data.find(b"\r")
    if first < 0:
        return data
    if data.startswith(b"\r\n", first):  # Windows line ends: convert them all at once
        while b"\r\n" in data:  # and the stray \r\r\n of doubly converted files
            data = data.replace(b"\r\n", b"\n")
        if b"\r" not in data:
            return data
    return resolve_overwrites(data)


def _resolve_overwrites(data: bytes) -> bytes:
    """Keep what follows the last `\r` of each line (ignoring `\r`s that end it): what a
    terminal finally showed. The text after a line's last `\r` is kept as part of the stretch
    up to the next line to overwrite, so each such line costs one cut."""
    pieces, start = [], 0
    cr = data.find(b"\r")
    while cr >= 0:
        line_start = data.rfind(b"\n", start, cr) + 1 or start
        line_end = data.find(b"\n", cr)
        line_end = len(data) if line_end < 0 else line_end
        last = data.rfind(b"\r", cr, line_end)
        pieces.append(data[start:line_start])
        if last == line_end - 1:  # `\r`s end the line: what they end is what shows
            pieces.append(data[line_start:line_end].rstrip(b"\r").rpartition(b"\r")[2])
            start = line_end
        else:
            start = last + 1
        cr = data.find(b"\r", line_end)
    pieces.append(data[start:])
    return b"".join(pieces)


# The C versions of the two loops above (trainmedic-native), where installed and built for
# this Python; these otherwise.
newlines: Callable[[bytes, int, int], int]
resolve_overwrites: Callable[[bytes], bytes]
try:
    from trainmedic_native import newlines, resolve_overwrites
except ImportError:
    NATIVE_LOOPS = False
    newlines, resolve_overwrites = _newlines, _resolve_overwrites
else:
    NATIVE_LOOPS = True


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
        """The first `end` bytes of `pending` (and `tail`) as the next chunk."""
        with memoryview(self.pending) as view:
            raw = bytes(view[:end])
        del self.pending[:end]
        return self._chunk(raw + tail if tail else raw, end)

    def _chunk(self, raw: bytes, size: int) -> Chunk:
        """`raw`, read from the next `size` bytes of the source, as the next chunk."""
        chunk = Chunk(self.path, normalise(raw), self.start // self.chunk_bytes, size)
        self.start += size
        return chunk

    def feed(self, data: bytes) -> list[Chunk]:
        """The chunks that `data` completes. A chunk that ends in `data` is joined from what is
        pending and `data` in one copy: adding `data` to what is pending first cost another."""
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                self.start += len(data)
                return []
            data, self.skipping = data[cut + 1 :], False
            self.start += cut + 1
        # What is pending holds no newline where its chunk may end (it was cut there when it
        # came), so each chunk ends in `data`; `data` before `at` is in chunks already.
        chunks, at = [], 0
        with memoryview(data) as view:
            while True:
                if self.eager:  # every complete line
                    end = data.rfind(b"\n", at)
                else:  # to the first newline from the chunk's last byte on
                    limit = self.chunk_bytes - self.start % self.chunk_bytes
                    end = data.find(b"\n", at + max(0, limit - 1 - len(self.pending)))
                if end < 0:
                    break
                raw = b"".join((self.pending, view[at:end + 1]))
                self.pending.clear()
                at = end + 1
                chunks.append(self._chunk(raw, len(raw)))
            self.pending += view[at:]
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


@cache  # once a process: a forked one inherits the allocator as it was
def _keep_freed_chunks() -> None:
    """Have the C allocator keep a freed chunk's memory for the next one. glibc's gives a block
    over its threshold (128 KiB at first) back to the system when it is freed, and the next
    chunk's bytes then fault in page by page as they are written: a tenth of a chunk's scan.
    Freeing one larger block raises the threshold to its size (mallopt(3), M_MMAP_THRESHOLD),
    and this one costs no page (calloc's fresh pages are not written). Elsewhere it is a cheap
    allocation."""
    bytes(2 * CHUNK_BYTES)


def read_chunks(stream: BinaryIO, path: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Every chunk of `stream`, in order."""
    _keep_freed_chunks()
    chunker = Chunker(path, chunk_bytes=chunk_bytes)
    while data := stream.read(chunk_bytes):
        yield from chunker.feed(data)
    if (chunk := chunker.flush()) is not None:
        yield chunk


END_WINDOW = 1 << 16  # bytes past a chunk's end searched for the newline that ends its last line


def _chunk_end(fd: int, start: int, chunk_bytes: int, size: int) -> int | None:
    """Where the chunk whose first line starts at `start` ends (after the newline ending the
    line that crosses its end), if within END_WINDOW bytes and the first `size` of the file."""
    boundary = (start // chunk_bytes + 1) * chunk_bytes
    if boundary >= size:
        return None
    cut = os.pread(fd, END_WINDOW, boundary - 1).find(b"\n")
    return boundary + cut if cut >= 0 and boundary + cut <= size else None


def read_part(path: str, first: int, stop: int | None,
              chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Chunks `first` to `stop` (excluded; None for the end) of a file, as a whole read cuts them.

    Reading starts at the first line that begins in chunk `first` and runs past the end of
    chunk `stop - 1` to finish its last line. Each chunk is read with one `pread` once its end
    is found, into the bytes it is kept in: a chunk cut from reads of fixed size was copied
    twice more, a fifth of the time it takes to scan. A chunk that is not that simple (the
    file's last, one whose last line is over-long or runs far past it) and those after it
    are cut as `Chunker` cuts them.
    """
    _keep_freed_chunks()
    with open(path, "rb") as stream:
        offset = first * chunk_bytes
        if offset:
            stream.seek(offset - 1)
            if stream.read(1) != b"\n":  # inside a line that belongs to an earlier chunk
                while (data := stream.read(chunk_bytes)) and (cut := data.find(b"\n")) < 0:
                    offset += len(data)
                offset += cut + 1 if data else 0
        # (not on Windows, which has no pread; nor for chunks larger than a line may be)
        simple = chunk_bytes <= MAX_LINE_BYTES and hasattr(os, "pread")
        size = os.fstat(stream.fileno()).st_size if simple else 0
        while (stop is None or offset // chunk_bytes < stop) and \
                (end := _chunk_end(stream.fileno(), offset, chunk_bytes, size)) is not None:
            raw = os.pread(stream.fileno(), end - offset, offset)
            if len(raw) != end - offset or \
                    len(raw) - raw.rfind(b"\n", 0, len(raw) - 1) - 1 > MAX_LINE_BYTES:
                break  # the file changed, or an over-long line the Chunker cuts
            yield Chunk(path, normalise(raw), offset // chunk_bytes, len(raw))
            offset = end
        if stop is not None and offset // chunk_bytes >= stop:
            return
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

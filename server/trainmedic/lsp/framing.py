"""LSP frames read from the client: bounded, tolerant of common slips, never left deaf.

pygls 2.1.1 takes a header only when it is exactly `Content-Length: N\\r\\n`. A frame a byte
short, one without that header, with LF-only line ends or a lowercase name leaves it reading
bodies as headers: alive, answering nothing, forever; and it allocates whatever length it is
told. Here header names are matched whatever their case and lines may end in LF alone; a frame
without a usable length, or longer than `MAX_BODY`, is reported (`FrameError`) without reading
its body, and reading skips to the next `Content-Length` header, so the request after a broken
frame is answered.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

MAX_BODY = 64 << 20  # bytes: far above any real message (a 1 GB log is not sent whole)
MAX_LINE = 64 << 10  # bytes of one header line; a longer line is not a header
_HEADER = b"content-length"
_CARRY = 128  # bytes kept from a line cut at MAX_LINE, so a header cut in two is still found
_FIELD = re.compile(rb"([A-Za-z0-9-]{1,64})[ \t]*:[ \t]*(.{0,1024}?)[ \t]*")
_LENGTH = re.compile(rb"[0-9]{1,20}")

ReadLine = Callable[[int], Awaitable[bytes]]
ReadExactly = Callable[[int], Awaitable[bytes]]


class FrameError(Exception):
    """A frame that cannot be read; the reader has moved on to the next header."""


class FrameReader:
    """The bodies of the frames on a byte stream, one per `next()` call.

    `read_line(limit)` returns one line of at most `limit` bytes (b"" at the end of the
    stream), `read_exactly(n)` the next `n` bytes (fewer at the end).
    """

    def __init__(self, read_line: ReadLine, read_exactly: ReadExactly) -> None:
        self.read_line, self.read_exactly = read_line, read_exactly
        # After an error has been reported, the bytes skipped to get back to a header are
        # part of that error: skipping them says nothing more.
        self.reported = False
        self._pending = b""  # bytes read but not yet looked at, from `_start` on
        self._start = 0

    def broken(self, body: bytes) -> None:
        """The caller found `body` unusable (not JSON) and has said so.

        A frame cut short took the start of the next frame as the rest of its body: its
        bytes are read again from the first `Content-Length` in it (or, when there is none,
        from near its end, where a header may begin), so that next frame is not lost.
        """
        self.reported = True
        at = body.lower().find(_HEADER)
        self._push_back(body[at:] if at >= 0 else body[-_CARRY:])

    async def next(self) -> bytes | None:
        """The next frame's body, None at the end of the stream; raises `FrameError`."""
        length: int | None = None
        problem: str | None = None
        in_headers = False  # a header of this frame has been read
        while True:
            line = await self._line()
            if not line:
                return None
            if not line.endswith(b"\n") and len(line) >= MAX_LINE:
                at = line.lower().rfind(_HEADER)
                self._push_back(line[at:] if 0 <= len(line) - at < _CARRY else line[-_CARRY:])
                in_headers, length, problem = False, None, None
                self._skipped("an overlong line that is not a header")
                continue
            text = line.rstrip(b"\r\n")
            if not text.strip():
                if not in_headers:
                    continue  # a stray blank line between frames
                if problem is None and length is None:
                    problem = "a frame without a Content-Length header"
                if problem is not None or length is None:
                    raise self._error(problem or "")
                self.reported = False
                body = await self._exactly(length)
                return body if len(body) == length else None  # the stream ended mid-frame
            at = text.lower().rfind(_HEADER)
            if at > 0:  # bytes left over from a broken frame, then the next header
                self._push_back(line[at:])
                in_headers, length, problem = False, None, None
                self._skipped(f"bytes that are not an LSP header ({at})")
                continue
            field = _FIELD.fullmatch(text)
            if field is None or (at < 0 and not in_headers and self.reported):
                in_headers, length, problem = False, None, None
                self._skipped("a line that is not an LSP header")
                continue
            in_headers = True
            if field[1].lower() == _HEADER and problem is None:
                length, problem = _length(field[2])

    # --- the stream, after what was pushed back --------------------------------------------

    def _push_back(self, data: bytes) -> None:
        self._pending, self._start = data + self._pending[self._start:], 0

    def _take(self, end: int) -> bytes:
        taken = self._pending[self._start:end]
        self._start = end
        if self._start == len(self._pending):
            self._pending, self._start = b"", 0
        return taken

    async def _line(self) -> bytes:
        if not self._pending:
            return await self.read_line(MAX_LINE)
        limit = self._start + MAX_LINE
        end = self._pending.find(b"\n", self._start, limit)
        if end >= 0 or len(self._pending) >= limit:
            return self._take(end + 1 if end >= 0 else limit)
        start = self._take(len(self._pending))
        return start + await self.read_line(MAX_LINE - len(start))

    async def _exactly(self, size: int) -> bytes:
        start = self._take(min(len(self._pending), self._start + size))
        return start + await self.read_exactly(size - len(start)) if len(start) < size \
            else start

    def _skipped(self, what: str) -> None:
        """Report skipped bytes, unless they follow an error already reported."""
        if not self.reported:
            raise self._error(f"skipped {what}")

    def _error(self, problem: str) -> FrameError:
        self.reported = True
        return FrameError(f"{problem}; reading on from the next Content-Length header")


def _length(value: bytes) -> tuple[int | None, str | None]:
    """The body length a Content-Length value gives, or why it gives none."""
    if not _LENGTH.fullmatch(value):
        return None, f"a Content-Length that is not a number ({value[:40]!r})"
    length = int(value)
    if length > MAX_BODY:
        return None, (f"a frame of {length} bytes, over the {MAX_BODY >> 20} MiB limit, "
                      "refused")
    return length, None

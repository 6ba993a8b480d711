"""Inputs that are not plain logs, turned into the log text they stand for.

A log of JSON records, one a line, is told by its first lines whatever its name (`json_lines`)
and unwrapped as it is read. The other formats are files read whole: one module per format,
listed in FORMATS. A format module declares its NAME, the file SUFFIXES
it may have, the MAX_BYTES it reads, whether it is WRITTEN_WHOLE (once, never appended to, so
`watch` reads it whole instead of following it), and `decode(raw) -> (text, timestamp) | None`.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import io
from typing import BinaryIO, NamedTuple, Protocol

from trainmedic.logs.formats import elastic_error, notebook

HEAD_BYTES = 8192  # what is looked at to tell a log of JSON records


class Format(Protocol):
    NAME: str
    SUFFIXES: tuple[str, ...]
    MAX_BYTES: int
    WRITTEN_WHOLE: bool

    def decode(self, raw: bytes) -> tuple[str, float | None] | None: ...


FORMATS: tuple[Format, ...] = (
    elastic_error,
    notebook,
)


class Source(NamedTuple):
    """A named byte stream and what its name or format says about every line in it."""

    path: str
    stream: BinaryIO
    timestamp: float | None = None


def candidates(path: str) -> list[Format]:
    """The formats a file of this name may be in."""
    return [f for f in FORMATS if path.endswith(f.SUFFIXES)]


def written_whole(path: str) -> bool:
    """Whether a file of this name may be a format written once, to be read whole."""
    return any(f.WRITTEN_WHOLE for f in candidates(path))


def adapt(path: str, stream: BinaryIO) -> Source:
    """The input as log text: a known format decoded, a log of JSON records unwrapped line by
    line, anything else passed through untouched."""
    formats = candidates(path) if stream.seekable() else []
    if formats:
        limit = max(f.MAX_BYTES for f in formats)
        raw = stream.read(limit + 1)
        stream.seek(0)
        for format_ in formats:
            if len(raw) > format_.MAX_BYTES:
                continue
            found = format_.decode(raw)
            if found is not None:
                text, stamp = found
                return Source(path, io.BytesIO(text.encode("utf-8", errors="replace")), stamp)
    head = _head(stream)
    if head.lstrip()[:1] == b"{":  # what a log of JSON records opens with
        from trainmedic.logs.formats import json_lines  # and json: a text log never needs them

        key = json_lines.text_key(head)
        if key is not None:
            return Source(path, io.BufferedReader(json_lines.Unwrapped(stream, key)))
    return Source(path, stream)


def _head(stream: BinaryIO) -> bytes:
    """The first block of a stream, left to be read again (nothing when it cannot be)."""
    if stream.seekable():
        start = stream.tell()
        head = stream.read(HEAD_BYTES)
        stream.seek(start)
        return head
    peek = getattr(stream, "peek", None)
    return peek(HEAD_BYTES)[:HEAD_BYTES] if peek is not None else b""

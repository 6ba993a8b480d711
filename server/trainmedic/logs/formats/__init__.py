"""Inputs that are not plain logs, turned into the log text they stand for.

A torchelastic error file (`error.json`, TORCHELASTIC_ERROR_FILE) holds one rank's exception and
traceback as JSON with the failure time; it becomes that traceback's text, and every line of it
takes the file's timestamp so it orders against the other ranks' logs.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_ERROR_FILE_BYTES = 16 << 20


@dataclass(frozen=True)
class Source:
    """A named byte stream and what its name or format says about every line in it."""

    path: str
    stream: BinaryIO
    timestamp: float | None = None


def _error_file_text(data: Any) -> tuple[str, float | None] | None:
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, str):
        stamp = str(data.get("timestamp"))
        return message, float(stamp) if stamp.isdigit() else None
    if not isinstance(message, dict):
        return None
    extra = message.get("extraInfo") or {}
    text = extra.get("py_callstack") or message.get("message")
    if not isinstance(text, str):
        return None
    stamp = str(extra.get("timestamp"))
    return text, float(stamp) if stamp.isdigit() else None


def adapt(path: str, stream: BinaryIO) -> Source:
    """The input as log text: error files decoded, anything else passed through untouched."""
    if not path.endswith(".json") or not stream.seekable():
        return Source(path, stream)
    raw = stream.read(MAX_ERROR_FILE_BYTES + 1)
    stream.seek(0)
    if len(raw) > MAX_ERROR_FILE_BYTES:
        return Source(path, stream)
    try:
        found = _error_file_text(json.loads(raw))
    except (ValueError, UnicodeDecodeError):
        found = None
    if found is None:
        return Source(path, stream)
    text, stamp = found
    return Source(path, io.BytesIO(text.encode("utf-8", errors="replace")), stamp)

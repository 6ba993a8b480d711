"""Logs of JSON records, one a line, read as the text the records hold.

Docker's json-file driver writes every line a container printed as `{"log": "...\\n", "stream":
"stderr", "time": "..."}`; log exporters and JSON loggers write `message`, `msg` or
`textPayload`. Read as they are, such lines hide where a message's line starts and escape its
quotes, so each record becomes its text, behind its time the way `kubectl logs --timestamps`
puts it when the record has an RFC 3339 one. A line that is no such record stays as it is. A
record whose text holds several lines becomes those lines.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, BinaryIO

TEXT_KEYS = ("log", "message", "msg", "textPayload", "MESSAGE")
TIME_KEYS = ("time", "timestamp", "@timestamp")
SNIFF_LINES = 8  # complete lines of the first block that must all be records
MAX_RECORD_BYTES = 1 << 20  # a longer line is passed on as it is, in pieces
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)")


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python recurses
        return None
    return record if isinstance(record, dict) else None


def text_key(head: bytes) -> str | None:
    """The key that holds the text when the complete lines of `head` (the first block of a
    log) are JSON records with the same text key; None for any other log."""
    if head.lstrip()[:1] != b"{":
        return None
    lines = [line for line in head.split(b"\n")[:-1][:SNIFF_LINES] if line.strip()]
    records = [_record(line) for line in lines]
    keys = {next((k for k in TEXT_KEYS if isinstance(r.get(k), str)), None) if r else None
            for r in records}
    if len(records) < 2 or len(keys) != 1:
        return None
    return keys.pop()


def record_text(line: bytes, key: str) -> bytes:
    """What one line says: its record's text (ending in a newline, each of its lines behind
    the record's time), or the line itself when it is no record."""
    record = _record(line)
    text = record.get(key) if record is not None else None
    if record is None or not isinstance(text, str):
        return line
    stamp = next((value for name in TIME_KEYS if isinstance(value := record.get(name), str)
                  and _RFC3339.fullmatch(value)), None)
    lines = text.splitlines(keepends=True) or [""]
    shown = "".join(f"{stamp} {part}" if stamp else part for part in lines)
    return (shown if shown.endswith("\n") else shown + "\n").encode("utf-8", "replace")


class Unwrapped(io.RawIOBase):
    """A log of JSON records (see `text_key`) as the text its records hold, a line at a time."""

    def __init__(self, stream: BinaryIO, key: str) -> None:
        self.stream, self.key, self.pending = stream, key, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            line = self.stream.readline(MAX_RECORD_BYTES)
            if not line:
                break
            whole = line.endswith(b"\n") or len(line) < MAX_RECORD_BYTES
            self.pending = record_text(line, self.key) if whole else line
        data, self.pending = self.pending[: len(buffer)], self.pending[len(buffer) :]
        buffer[: len(data)] = data
        return len(data)

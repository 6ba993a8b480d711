"""torchelastic's error file (`error.json`, TORCHELASTIC_ERROR_FILE): one rank's exception.

It holds the exception and its traceback as JSON with the failure time (written by
`torch.distributed.elastic.multiprocessing.errors`), so it becomes that traceback's text, and
every line of it takes the file's timestamp to order against the other ranks' logs.
"""

from __future__ import annotations

from typing import Any

NAME = "torchelastic error file"
SUFFIXES: tuple[str, ...] = (".json",)
MAX_BYTES = 16 << 20
WRITTEN_WHOLE = True  # written once when the worker fails, never appended to


def _text(data: Any) -> tuple[str, float | None] | None:
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


def decode(raw: bytes) -> tuple[str, float | None] | None:
    """The log text the file stands for and its time, or None when it is not such a file."""
    import json  # here: a text log's diagnosis never pays for importing it

    try:
        return _text(json.loads(raw))
    except (ValueError, UnicodeDecodeError):
        return None

"""Jupyter notebooks (`.ipynb`): what the cells printed when they ran, as a log.

A failed cell keeps its exception as an output of type "error" (`ename`, `evalue` and the
traceback IPython printed, with its colours), and what the cell or its subprocesses wrote
(a `!torchrun ...` cell) as "stream" outputs. Those, in cell order, are the run's log; the
source code is not, so a notebook that ran cleanly reads as an empty log. The colours are
ANSI escapes, which the reader drops as it does from any terminal capture.
"""

from __future__ import annotations

from typing import Any

NAME = "Jupyter notebook"
SUFFIXES: tuple[str, ...] = (".ipynb",)
MAX_BYTES = 64 << 20
WRITTEN_WHOLE = True  # saved whole by the editor, never appended to


def nbformat_text(value: Any) -> str:
    """nbformat keeps multi-line text as a string or as a list of lines."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def error_text(output: dict[str, Any]) -> str:
    """An error output as the text IPython showed: its traceback, which ends with the
    `ename: evalue` line; that line alone when the traceback is missing."""
    traceback = output.get("traceback")
    if isinstance(traceback, list) and traceback:
        return "\n".join(part for part in traceback if isinstance(part, str)) + "\n"
    return f"{nbformat_text(output.get('ename'))}: {nbformat_text(output.get('evalue'))}\n"


def output_text(output: Any) -> str:
    if not isinstance(output, dict):
        return ""
    if output.get("output_type") == "error":
        return error_text(output)
    if output.get("output_type") == "stream":
        text = nbformat_text(output.get("text"))
        return text if not text or text.endswith("\n") else text + "\n"
    return ""


def decode(raw: bytes) -> tuple[str, float | None] | None:
    """The outputs' text, or None when the file is not a notebook."""
    import json  # here: a text log's diagnosis never pays for importing it

    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or "nbformat" not in data:
        return None
    outputs = [cell.get("outputs") for cell in cells if isinstance(cell, dict)]
    return "".join(output_text(output) for found in outputs if isinstance(found, list)
                   for output in found), None

"""Turn command-line paths into named byte streams, refusing what is not a log in one line."""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from trainmedic.logs.formats import FORMATS
from trainmedic.logs.prefixes import rank_of_path

# A folder's logs: plain text logs, and every file a registered format may be.
LOG_SUFFIXES = {".log", ".out", ".err", ".txt", *(s for f in FORMATS for s in f.SUFFIXES)}
LOG_NAMES = {"stdout", "stderr"}
SNIFF_BYTES = 8192


class InputError(Exception):
    """An input that cannot be read as a log; `str()` is the line the user sees."""


_REASONS = {FileNotFoundError: "no such file or directory",
            PermissionError: "permission denied", IsADirectoryError: "is a directory"}


def _refused(name: str, error: OSError) -> InputError:
    """The one line for an input the system would not look at or open."""
    return InputError(f"{name}: {_REASONS.get(type(error)) or error.strerror or error}")


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first block marks a binary file, as grep and git decide."""
    return b"\0" in head


def _log_files(directory: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(directory, onerror=None, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            if path.suffix in LOG_SUFFIXES or path.stem in LOG_NAMES or name.startswith("slurm-"):
                found.append(path)
    return found


_RUN = re.compile(r"^(.*?)[/\\]attempt_(\d+)[/\\]|slurm-(\d+)[-_.]")


def layout_warnings(files: list[str]) -> list[str]:
    """What makes a folder of per-rank logs ambiguous: several runs, or one rank twice."""
    runs = {m.group(0) for f in files if (m := _RUN.search(f))}
    by_rank: dict[int, set[str]] = defaultdict(set)
    for name in files:
        rank = rank_of_path(name)
        if rank is not None:
            by_rank[rank].add(os.path.dirname(name) if "attempt_" in name else name)
    clashing = sorted(rank for rank, places in by_rank.items() if len(places) > 1)
    warnings = []
    if len(runs) > 1:
        warnings.append(f"logs of {len(runs)} runs or restart attempts are mixed here "
                        f"({', '.join(sorted(runs)[:3])}{', …' if len(runs) > 3 else ''}); "
                        "they are diagnosed as one run: pass one attempt's folder to separate them")
    if clashing:
        shown = ", ".join(map(str, clashing[:8])) + (" …" if len(clashing) > 8 else "")
        warnings.append(f"rank {shown} appears in several files; ranks are read from each "
                        "line's prefix where it has one, else from the file name")
    return warnings


def expand(paths: list[str]) -> tuple[list[str], list[str]]:
    """Files to read for `paths` (directories walked), and warnings for what was skipped."""
    files: list[str] = []
    warnings: list[str] = []
    for given in paths:
        if given == "-":
            files.append("-")
            continue
        path = Path(given)
        try:
            mode = path.stat().st_mode
        except OSError as error:
            raise _refused(given, error) from None
        if stat.S_ISDIR(mode):
            if not os.access(path, os.R_OK | os.X_OK):
                raise InputError(f"{given}: permission denied")
            logs = []
            for candidate in _log_files(path):
                try:
                    with candidate.open("rb") as stream:
                        head = stream.read(SNIFF_BYTES)
                except OSError as error:
                    warnings.append(f"{candidate}: skipped ({error.strerror or error})")
                    continue
                if is_binary(head):
                    warnings.append(f"{candidate}: skipped (binary file)")
                    continue
                logs.append(str(candidate))
            if not logs:
                raise InputError(f"{given}: no log files in this directory "
                                 f"(looked for {', '.join(sorted(LOG_SUFFIXES))}, stdout, stderr)")
            warnings.extend(layout_warnings(logs))
            files.extend(logs)
        else:
            files.append(given)
    return files, warnings


def total_size(files: list[str], max_bytes: int | None = None) -> int:
    """The bytes to read from the files, at most `max_bytes` of each (stdin and anything
    unreadable count nothing)."""
    total = 0
    for name in files:
        try:
            size = os.stat(name).st_size if name != "-" else 0
        except OSError:
            continue
        total += min(size, max_bytes) if max_bytes else size
    return total


class _Bounded(io.RawIOBase):
    """A stream that ends after `limit` bytes, remembering whether there was more."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream, self.left, self.cut = stream, limit, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            self.cut = self.cut or bool(self.stream.read(1))
            return 0
        data = self.stream.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


class Inputs:
    """The named streams of some files, each opened when reached and closed after it.

    Opening lazily keeps one file open at a time, so a folder of ten thousand per-rank logs
    needs no more file descriptors than one.
    """

    def __init__(self, files: list[str], max_bytes: int | None = None) -> None:
        self.files, self.max_bytes = files, max_bytes
        self.warnings: list[str] = []
        self._open: BinaryIO | None = None

    def _open_one(self, name: str) -> tuple[str, BinaryIO]:
        if name == "-":
            return "<stdin>", sys.stdin.buffer
        try:
            stream: BinaryIO = open(name, "rb")  # noqa: SIM115 - closed by the iterator
        except OSError as error:
            raise _refused(name, error) from None
        if stream.seekable():
            if is_binary(stream.read(SNIFF_BYTES)):
                stream.close()
                raise InputError(f"{name}: binary file, not a log")
            stream.seek(0)
        return name, stream

    def __iter__(self) -> Iterator[tuple[str, BinaryIO]]:
        for name in self.files:
            name_shown, stream = self._open_one(name)
            self._open = stream if name_shown != "<stdin>" else None
            bounded = _Bounded(stream, self.max_bytes) if self.max_bytes else None
            yield name_shown, (io.BufferedReader(bounded) if bounded else stream)
            if bounded is not None and bounded.cut:
                self.warnings.append(f"{name_shown}: read only the first {self.max_bytes} bytes "
                                     "(--max-bytes)")
            self.close()

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None


@contextmanager
def opened(files: list[str], max_bytes: int | None = None) -> Iterator[Inputs]:
    """The files (stdin for `-`) as lazily opened streams, refusing binary regular files."""
    inputs = Inputs(files, max_bytes)
    try:
        yield inputs
    finally:
        inputs.close()

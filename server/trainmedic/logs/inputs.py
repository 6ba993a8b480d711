"""Turn command-line paths into named byte streams, refusing what is not a log in one line."""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

from trainmedic.logs.formats import FORMATS
from trainmedic.logs.prefixes import rank_of_path

if TYPE_CHECKING:
    from pathlib import Path

# A folder's logs: plain text logs, and every file a registered format may be; each of them
# also compressed.
LOG_SUFFIXES = {".log", ".out", ".err", ".txt", *(s for f in FORMATS for s in f.SUFFIXES)}
LOG_NAMES = {"stdout", "stderr"}
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
SNIFF_BYTES = 8192
STDIN_MAX_BYTES = 4 << 30  # what `-` reads by default: a stream may never end


class InputError(Exception):
    """An input that cannot be read as a log; `str()` is the line the user sees."""


_REASONS = {FileNotFoundError: "no such file or directory",
            PermissionError: "permission denied", IsADirectoryError: "is a directory"}


def refused(name: str, error: OSError) -> InputError:
    """The one line for an input the system would not look at or open."""
    return InputError(f"{name}: {_REASONS.get(type(error)) or error.strerror or error}")


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def wide_encoding(head: bytes) -> str | None:
    """UTF-16 or UTF-32 when the first block starts with its byte-order mark (Windows tools
    write logs so): such text is full of NUL bytes and is decoded, not refused as binary."""
    return next((name for bom, name in _BOMS if head.startswith(bom)), None)


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first block marks a binary file, as grep and git decide."""
    return b"\0" in head and wide_encoding(head) is None


# A log archived compressed is read as the text it holds, as zgrep, bzgrep and xzgrep read it;
# the compression is told by the bytes it starts with, whatever the file is called.
_COMPRESSIONS = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))


def compression(head: bytes) -> str | None:
    """gzip, bzip2 or xz when the first block starts with that compression's magic bytes."""
    return next((name for magic, name in _COMPRESSIONS if head.startswith(magic)), None)


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def irregular_kind(mode: int) -> str | None:
    """What a file that is not a regular one is (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((k for test, k in _KINDS if test(mode)), "not a file")


def not_regular(name: str, mode: int) -> InputError | None:
    """The one line refusing what is not a regular file: reading a pipe, socket or device
    could block or never end (stdin, `-`, is the way to pipe a log in)."""
    kind = irregular_kind(mode)
    if kind is None:
        return None
    return InputError(f"{name}: {kind}, not a regular file (pipe a stream into `-` instead)")


def open_regular(name: str) -> BinaryIO:
    """`name` opened for reading if it is a regular file; InputError otherwise.

    The open does not block (a FIFO would wait for a writer) and the type is checked on the
    opened descriptor, so a file swapped for a pipe after a check is still refused.
    """
    try:
        descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise refused(name, error) from None
    refusal = not_regular(name, os.fstat(descriptor).st_mode)
    if refusal is not None:
        os.close(descriptor)
        raise refusal
    if hasattr(os, "set_blocking"):
        os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def _log_files(directory: str) -> list[Path]:
    """The log files under `directory`, by name. (pathlib is imported only to walk a folder:
    with what it imports it takes 5 ms, a tenth of a short diagnosis of one file.)"""
    from pathlib import Path

    found = []
    for root, dirs, files in os.walk(Path(directory), onerror=None, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            inner = Path(root, name.removesuffix(path.suffix)) \
                if path.suffix in COMPRESSED_SUFFIXES else path
            if inner.suffix in LOG_SUFFIXES or inner.stem in LOG_NAMES \
                    or name.startswith("slurm-"):
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
        try:
            mode = os.stat(given).st_mode
        except OSError as error:
            raise refused(given, error) from None
        if stat.S_ISDIR(mode):
            if not os.access(given, os.R_OK | os.X_OK):
                raise InputError(f"{given}: permission denied")
            logs = []
            for candidate in _log_files(given):
                try:
                    kind = irregular_kind(candidate.stat().st_mode)
                    if kind is not None:
                        warnings.append(f"{candidate}: skipped ({kind}, not a regular file)")
                        continue
                    with open_regular(str(candidate)) as stream:
                        head = _first_block(stream)
                except InputError as error:
                    warnings.append(f"{candidate}: skipped ({str(error).split(': ', 1)[-1]})")
                    continue
                except OSError as error:
                    warnings.append(f"{candidate}: skipped ({error.strerror or error})")
                    continue
                if is_binary(head):
                    warnings.append(f"{candidate}: skipped (binary file)")
                    continue
                logs.append(str(candidate))
            if not logs:
                raise InputError(f"{given}: no log files in this directory "
                                 f"(looked for {', '.join(sorted(LOG_SUFFIXES))}, stdout, stderr,"
                                 f" and each compressed: {', '.join(COMPRESSED_SUFFIXES)})")
            warnings.extend(layout_warnings(logs))
            files.extend(logs)
        else:
            refusal = not_regular(given, mode)
            if refusal is not None:
                raise refusal
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


class _Prefixed(io.RawIOBase):
    """The bytes already read from a stream that cannot seek back, then the rest of it."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head, self.stream = head, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            data, self.head = self.head[: len(buffer)], self.head[len(buffer) :]
        else:
            data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Transcoded(io.RawIOBase):
    """A UTF-16 or UTF-32 stream as UTF-8 bytes, decoded a block at a time."""

    def __init__(self, stream: BinaryIO, encoding: str) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder(encoding)("replace")
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            data = self.stream.read(SNIFF_BYTES)
            self.pending = self.decoder.decode(data, final=not data).encode("utf-8")
            if not data:
                break
        data, self.pending = self.pending[: len(buffer)], self.pending[len(buffer) :]
        buffer[: len(data)] = data
        return len(data)


class _Decompressed(io.RawIOBase):
    """A compressed stream as the bytes it holds. Where the data ends early (a file still being
    written, or cut short) or is damaged, the stream ends, keeping what came before, and
    `damage` says what went wrong."""

    def __init__(self, stream: BinaryIO, kind: str) -> None:
        import bz2
        import gzip
        import lzma
        import zlib

        # closed by close(), as the stream under it is by whoever opened that
        self.file: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=stream) if kind == "gzip" else
            bz2.BZ2File(stream) if kind == "bzip2" else lzma.LZMAFile(stream))  # noqa: SIM115
        self.kind = kind
        self.damaged_by = (OSError, zlib.error, lzma.LZMAError)  # each compression's own
        self.damage: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.damage is not None:
            return 0
        try:
            return self.file.readinto(buffer)
        except EOFError:
            self.damage = "it ends before its end marker"
        except self.damaged_by as error:
            self.damage = str(error) or type(error).__name__
        return 0

    def close(self) -> None:
        self.file.close()
        super().close()


def _first_block(stream: BinaryIO) -> bytes:
    """The first block of what a file holds: of the text it holds, when it is compressed."""
    head = stream.read(SNIFF_BYTES)
    kind = compression(head)
    if kind is None:
        return head
    stream.seek(0)
    with _Decompressed(stream, kind) as held:
        return held.read(SNIFF_BYTES) or b""


class Inputs:
    """The named streams of some files, each opened when reached and closed after it.

    Opening lazily keeps one file open at a time, so a folder of ten thousand per-rank logs
    needs no more file descriptors than one. Standard input is read to `STDIN_MAX_BYTES`
    unless `max_bytes` says otherwise: a stream may never end.
    """

    def __init__(self, files: list[str], max_bytes: int | None = None) -> None:
        self.files, self.max_bytes = files, max_bytes
        self.warnings: list[str] = []
        self._open: BinaryIO | None = None
        self._decompressed: _Decompressed | None = None

    def _open_one(self, name: str) -> tuple[str, BinaryIO]:
        if name == "-":
            name, stream = "<stdin>", sys.stdin.buffer
            head = stream.read(SNIFF_BYTES)
            readable: BinaryIO = io.BufferedReader(_Prefixed(head, stream))
        else:
            stream = readable = self._open = open_regular(name)
            head = stream.read(SNIFF_BYTES)
            stream.seek(0)
        kind = compression(head)
        if kind is not None:
            self._decompressed = _Decompressed(readable, kind)
            readable = io.BufferedReader(self._decompressed, SNIFF_BYTES)
            head = readable.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        if is_binary(head):
            raise InputError(f"{name}: binary file, not a log")
        encoding = wide_encoding(head)
        if encoding is not None:
            readable = io.BufferedReader(_Transcoded(readable, encoding))
        return name, readable

    def __iter__(self) -> Iterator[tuple[str, BinaryIO]]:
        for name in self.files:
            name_shown, stream = self._open_one(name)
            limit = self.max_bytes or (STDIN_MAX_BYTES if name == "-" else None)
            bounded = _Bounded(stream, limit) if limit else None
            yield name_shown, (io.BufferedReader(bounded) if bounded else stream)
            if bounded is not None and bounded.cut:
                why = "--max-bytes" if self.max_bytes else \
                    "the default for standard input; --max-bytes changes it"
                self.warnings.append(f"{name_shown}: read only the first {limit} bytes ({why})")
            damaged = self._decompressed
            if damaged is not None and damaged.damage is not None:
                self.warnings.append(f"{name_shown}: the {damaged.kind} data stops early "
                                     f"({damaged.damage}); what came before it was read")
            self.close()

    def close(self) -> None:
        if self._decompressed is not None:
            self._decompressed.close()
            self._decompressed = None
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

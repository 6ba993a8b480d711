"""What a run keeps in the user cache for the next: the folder, the regular expressions a
command compiled, and JSON files' values. (The Hyperscan databases kept there are
`matching.hyperscan`'s.)

Python compiles a pattern with Python code and cannot save the result: the catalogue's and the
log formats' patterns took 15 of the 90 ms a 200-line diagnosis takes, at every start. What
the compiler makes of a pattern (flags, code, groups) is plain data, though. `load_regexes`
builds the patterns a command compiled last time from that data, in microseconds, and puts
them in `re`'s own cache, where `re.compile` finds them. `save_regexes` keeps them with those
the run compiled, when it compiled any, and drops those it did not use when they are most of
them: another rule pack's are not carried on for ever. A pattern is kept only when the one
built from its data equals the one `re` compiled (`Pattern.__eq__` compares their code). The
file is named by the interpreter's version and its regex engine's, so no other Python reads
it. Before Python 3.11 (whose `re` internals differ), or where the cache cannot be read or
written, patterns are compiled as usual.

A JSON file's value (the bundled catalogue's rules, 400 KB) is kept as marshal, which reads it
three times as fast as parsing it (see `load_json`).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import re
import sys
from typing import Any

try:
    import _sre  # type: ignore[import-not-found]
    from re import _compiler, _parser  # type: ignore[attr-defined]
except ImportError:  # Python 3.10 names them otherwise: no cache there
    _sre = None

Kept = tuple[int, list[int], int, dict[str, int], tuple["str | None", ...]]  # `_sre.compile`'s
_loaded: dict[tuple[type, str | bytes, int], Kept] = {}  # what `load_regexes` put in `re`'s cache


def cache_folder() -> str:
    """Where a run keeps what it made, after the XDG convention; OSError without a home.
    (A path as text: pathlib and what it imports take 5 ms to import, a tenth of a short run.)"""
    if base := os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(base, "trainmedic")
    home = os.path.expanduser("~")
    if home == "~":  # no HOME and no user entry to take it from
        raise OSError("could not determine the home folder")
    return os.path.join(home, ".cache", "trainmedic")


def forget_old(folder: str, prefix: str, suffix: str, kept: int) -> None:
    """Remove the files in `folder` named `prefix`...`suffix` beyond the `kept` used last."""
    def used(path: str) -> float:
        try:
            return os.stat(path).st_mtime
        except OSError:  # removed meanwhile by another process
            return 0.0

    found = [os.path.join(folder, name) for name in os.listdir(folder)
             if name.startswith(prefix) and name.endswith(suffix)]
    for old in sorted(found, key=used, reverse=True)[kept:]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old)


def write_whole(path: str, data: bytes) -> None:
    """`data` in the file at `path`, whole or not at all (even with several writers); OSError
    if it cannot be written."""
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(partial, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


KEPT_JSON = 4  # copies of JSON files kept (each build of the catalogue makes a new one)


def _parsed(data: bytes) -> Any:
    import json  # here: a start that finds its copy never imports it

    return json.loads(data)


def load_json(path: str) -> Any:
    """The value of the JSON file at `path`, unmarshalled from the copy kept of it when its
    bytes were seen before. The copy is found by a checksum of them and holds them too, so it
    is used only for the same bytes; its name says the interpreter, whose marshal format it
    is. A cache that cannot be read or written only means parsing the file."""
    import zlib

    with open(path, "rb") as source:
        data = source.read()
    try:
        folder = cache_folder()
    except OSError:
        return _parsed(data)
    copy = os.path.join(folder, f"json-{zlib.crc32(data):08x}-{len(data)}-"
                                f"{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal")
    try:
        with open(copy, "rb") as stored:
            seen, value = marshal.loads(stored.read())
        if seen == data:
            os.utime(copy)  # used now: kept over those used before
            return value
    except Exception:  # none kept, or one that cannot be read: parsed as usual
        pass
    value = _parsed(data)
    with contextlib.suppress(OSError, ValueError):  # ValueError: a value marshal cannot keep
        write_whole(copy, marshal.dumps((data, value)))
        forget_old(folder, "json-", ".marshal", KEPT_JSON)
    return value


def _regex_file(command: str) -> str | None:
    """Where `command`'s patterns are kept; None where `re` is not as this module knows it."""
    if _sre is None or not isinstance(getattr(re, "_cache", None), dict):
        return None
    try:
        folder = cache_folder()
    except OSError:
        return None
    return os.path.join(folder, f"regexes-{command}-{sys.implementation.cache_tag}-"
                                f"{sys.hexversion:x}-{_sre.MAGIC}.marshal")


def load_regexes(command: str) -> None:
    """Put the patterns `command` compiled when it last ran in `re`'s cache."""
    if (path := _regex_file(command)) is None:
        return
    try:
        with open(path, "rb") as stored:
            kept: dict[tuple[str | bytes, int], Kept] = marshal.loads(stored.read())
        # (marshal.load would read the file in pieces: 20 times slower)
        built = {(type(pattern), pattern, flags): (_sre.compile(pattern, *made), made)
                 for (pattern, flags), made in kept.items()}
    except Exception:  # a cache that cannot be read only means compiling as usual
        return
    if not isinstance(re._cache, _Noting):  # type: ignore[attr-defined]
        re._cache = _Noting(re._cache)  # type: ignore[attr-defined]
    re._cache.update(  # type: ignore[attr-defined]
        (key, compiled) for key, (compiled, _) in built.items())
    _loaded.update((key, made) for key, (_, made) in built.items())


class _Noting(dict):  # type: ignore[type-arg]
    """`re`'s cache once `load_regexes` put patterns in it, noting which patterns are asked
    for (`re.compile`, `re.search`...: Python 3.11 looks them up with `[]`, 3.12 on with
    `pop`), so that what a run did not use is not kept for the next."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.asked: set[Any] = set()

    def __getitem__(self, key: Any) -> Any:
        found = super().__getitem__(key)
        self.asked.add(key)
        return found

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self.asked.add(key)
        return super().pop(key, *default)


def _compiled(pattern: str | bytes, flags: int) -> Kept:
    """What `re._compiler.compile` hands the regex engine for `pattern`."""
    parsed = _parser.parse(pattern, flags)
    code = list(map(int, _compiler._code(parsed, flags)))  # opcodes are int subclasses
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex,
            tuple(indexgroup))


def save_regexes(command: str) -> None:
    """Keep the patterns in `re`'s cache for `command`'s next run when this run compiled new
    ones, all but those it was given and did not use when these are more than half of them
    (the patterns of another rule pack, say); written whole or not at all."""
    if (path := _regex_file(command)) is None:
        return
    compiled = {**re._cache, **getattr(re, "_cache2", {})}  # type: ignore[attr-defined]
    unused = _loaded.keys() - getattr(re._cache, "asked", set())  # type: ignore[attr-defined]
    pruned = 2 * len(unused) > len(_loaded)
    if compiled.keys() <= _loaded.keys() and not pruned:
        return
    kept: dict[tuple[str | bytes, int], Kept] = {}
    for key, pattern in compiled.items():
        kind, source, flags = key
        if pruned and key in unused:
            continue
        if (made := _loaded.get(key)) is None:
            if type(source) is not kind or kind not in (str, bytes):
                continue
            try:
                made = _compiled(source, flags)
                if _sre.compile(source, *made) != pattern:
                    continue  # not as `re` compiles it: compiled anew at each start
            except Exception:  # the same
                continue
        kept[source, flags] = made
    with contextlib.suppress(OSError, ValueError):
        write_whole(path, marshal.dumps(kept))

"""The native matcher backend: Hyperscan finds candidate lines, Python's `re` confirms them.

Installed with `pip install trainmedic[fast]`. Every fingerprint is compiled in Hyperscan's
prefilter mode (a superset of the pattern that Hyperscan can run at memory speed, lookarounds
relaxed; after a long gap, only what follows it; without an end that varies in length: see
`matching.expressions`), all of them into one database scanned once per chunk; each candidate
line is then matched with the real pattern, so the results, named groups included, are exactly
those of the pure-Python backend.

A scan needs scratch space that no other scan is using at the same time, so each thread scans
with a scratch of its own: the language server diagnoses on its event loop and in worker
threads at once, with one shared matcher.
"""

from __future__ import annotations

import os
import re
from _thread import get_ident
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property, partial
from typing import Any

from trainmedic.catalogue.rules import Catalogue, Fingerprint
from trainmedic.logs.reader import Chunk, char_offsets, decoded
from trainmedic.logs.tracebacks import MARKERS
from trainmedic.matching.python import Found, Matcher, signal_patterns
from trainmedic.metrics.samples import NATIVE_ZERO_LOSS, POSITIONED, SIGNALS, zero_loss
from trainmedic.model import Hit
from trainmedic.user_cache import cache_folder, forget_old, write_whole

_MARK = 1 << 30  # the candidate index of a traceback marker's line
_METRIC = 1 << 29  # plus its signal's index: the candidate index of a metric pattern's line


def available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def _compiled(expressions: list[bytes], flags: list[int]) -> Any:
    import hyperscan

    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))),
                     elements=len(expressions), flags=flags)
    return database


# What turns patterns into expressions (a path as text: see `user_cache.cache_folder`)
EXPRESSIONS = os.path.join(os.path.dirname(__file__), "expressions.py")
KEPT_DATABASES = 16  # every catalogue (each edit of a rule pack) compiles to a database of its own


def _machine() -> str:
    """`platform.machine()`, without importing platform (slow to import) where it can."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def _database(patterns: list[str], flags: list[int], expressions: Callable[[], list[bytes]]) -> Any:
    """The compiled database of `expressions()` (what Hyperscan runs for `patterns`), loaded
    from the user cache when this catalogue was compiled before.

    Compiling takes about 0.4 s, loading a compiled copy well under a millisecond, and working
    out the expressions 10 ms: they are worked out only to compile. A cached file starts with
    what it was compiled from (the patterns, their flags, a checksum of the code that turns
    patterns into expressions, Hyperscan's release and the machine), which must be this
    catalogue's for the file to be used; the file is named by a checksum of that, which only
    finds it (hashlib would cost more to import than all of the loading). A cache that cannot
    be read or written is only a slower start. The cache keeps the KEPT_DATABASES used last: a
    database is about a megabyte, and each edit of a rule pack makes a new one.
    """
    import zlib

    import hyperscan

    release = getattr(hyperscan, "__version__", "")  # not importlib.metadata: slow to import
    code = zlib.crc32(_read(EXPRESSIONS), zlib.crc32(_read(__file__)))
    # Each pattern after its length, so that no two lists read alike (a repr took 0.3 ms).
    made_from = "\n".join([release, _machine(), str(code), repr(flags),
                           *(f"{len(pattern)} {pattern}" for pattern in patterns)]).encode()
    try:
        folder = cache_folder()
    except OSError:
        return _compiled(expressions(), flags)
    cached = os.path.join(folder, f"hyperscan-{zlib.crc32(made_from):08x}.db")
    try:
        with open(cached, "rb") as stored:
            if stored.read(len(made_from)) == made_from:
                database = hyperscan.loadb(stored.read(), hyperscan.HS_MODE_BLOCK)
                os.utime(cached)  # used now: kept over those used before
                return database
    except (OSError, hyperscan.error):
        pass
    database = _compiled(expressions(), flags)
    try:
        write_whole(cached, made_from + hyperscan.dumpb(database))
        forget_old(folder, "hyperscan-", ".db", KEPT_DATABASES)
    except OSError:
        pass
    return database


def _read(path: str) -> bytes:
    with open(path, "rb") as source:
        return source.read()


def _flags(fingerprints: Iterable[Fingerprint]) -> list[int]:
    """Each fingerprint's compile flags (the module's names looked up once, not per pattern)."""
    import hyperscan

    flags = (hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE
             | hyperscan.HS_FLAG_ALLOWEMPTY)
    caseless = flags | hyperscan.HS_FLAG_CASELESS
    return [caseless if fingerprint.ignore_case else flags for fingerprint in fingerprints]


def refused(catalogue: Catalogue) -> tuple[str, str] | None:
    """The first rule with a fingerprint Hyperscan cannot compile, and Hyperscan's reason;
    None when it compiles them all. Each is compiled alone: for a rule pack, not the whole
    catalogue."""
    import hyperscan

    from trainmedic.matching.expressions import prefilter

    for rule in catalogue.rules:
        for fingerprint in rule.fingerprints:
            try:
                _compiled([prefilter(fingerprint.pattern).encode()], _flags([fingerprint]))
            except hyperscan.error as error:
                return rule.id, str(error).rstrip(".")
    return None


class HyperscanMatcher(Matcher):
    """Same patterns and results as `Matcher`, found with one Hyperscan pass per chunk.

    The metric sampler's SIGNALS (compiled exactly, reported once each) and the traceback
    MARKERS ride in the same database, so a chunk is scanned once for everything. (The
    sampler's SCALE_WORDS, on every Megatron-LM step line, are not: a call into Python for each
    cost more than finding them in C where a chunk holds the scale signal. Nor is the zero-loss
    signal where the C loops find it: see `samples.zero_loss`.)
    """

    name = "hyperscan"

    def __init__(self, catalogue: Catalogue) -> None:
        import hyperscan

        super().__init__(catalogue)
        signals = signal_patterns(catalogue)
        if NATIVE_ZERO_LOSS:
            del signals["zero-loss"]
        self._signal_names = list(signals)
        patterns = [p.fingerprint.pattern for p in self.patterns]
        patterns += signals.values()
        patterns += map(re.escape, MARKERS)
        flags = _flags(p.fingerprint for p in self.patterns)
        flags += [hyperscan.HS_FLAG_MULTILINE | (
            hyperscan.HS_FLAG_SINGLEMATCH if name in SIGNALS and name != POSITIONED
            else hyperscan.HS_FLAG_PREFILTER) for name in signals]
        flags += [0] * len(MARKERS)

        def expressions() -> list[bytes]:
            """What Hyperscan runs for each pattern: worked out only to compile."""
            from trainmedic.matching.expressions import prefilter, without_varying_end

            return [*(prefilter(p.fingerprint.pattern).encode() for p in self.patterns),
                    *((pattern if name in SIGNALS else without_varying_end(pattern)).encode()
                      for name, pattern in signals.items()),
                    *(re.escape(marker).encode() for marker in MARKERS)]

        self._database = _database(patterns, flags, expressions)
        # A scan needs scratch space of its own, so each thread (by its id) has one. (Not a
        # threading.local: importing threading took a sixtieth of a short diagnosis.)
        self._scratch: dict[int, Any] = {}

    @cached_property
    def _prefiltered(self) -> dict[str, re.Pattern[str]]:
        """Rules' metric patterns, which may hold lookarounds: prefiltered, then confirmed by
        `re` (compiled when a line first needs it)."""
        return {name: re.compile(pattern, re.MULTILINE)
                for name, pattern in signal_patterns(self.catalogue).items()
                if name not in SIGNALS}

    def find(self, text: str) -> Found:
        data = text.encode("utf-8", errors="surrogatepass")
        found = self.find_bytes(data)
        if len(data) == len(text):
            return found._replace(positioned=None)  # a chunk's, at its bytes
        return found.moved(partial(char_offsets, data))

    def find_chunk(self, chunk: Chunk) -> Found:
        return self.find_bytes(chunk.data)  # a chunk is scanned without decoding it

    def find_bytes(self, data: bytes) -> Found:
        """`find` over UTF-8 bytes, at their offsets."""
        import hyperscan

        candidates: set[tuple[int, int]] = set()  # (line start, pattern index or MARK)
        signals: set[str] = set()
        fingerprints = len(self.patterns)
        markers = fingerprints + len(self._signal_names)
        positioned: list[int] = []
        # The newlines around the last match's line: a line of a megabyte may hold a hundred
        # thousand matches, and each looking back for its line start made that quadratic.
        line = [-1, -1]

        def found(index: int, start: int, end: int, flags: int, context: Any) -> None:
            if fingerprints <= index < markers:
                name = self._signal_names[index - fingerprints]
                if name in SIGNALS:
                    signals.add(name)
                    if name == POSITIONED:
                        positioned.append(end)
                    return
                index = _METRIC + index - fingerprints
            last = max(end - 1, 0)  # the match's last byte, or the newline it ends on
            if not line[0] < last <= line[1]:
                before = data.rfind(b"\n", 0, last)
                after = data.find(b"\n", before + 1)
                line[0], line[1] = before, len(data) if after < 0 else after
            candidates.add((line[0] + 1, _MARK if index >= markers and index < _METRIC
                            else index))

        scratch = self._scratch.get(thread := get_ident())
        if scratch is None:
            scratch = self._scratch[thread] = hyperscan.Scratch(self._database)
        self._database.scan(data, match_event_handler=found, scratch=scratch)
        if NATIVE_ZERO_LOSS and zero_loss(data, 0) >= 0:
            signals.add("zero-loss")
        hits, marks, metric_lines = self._confirmed(data, candidates, signals)
        return Found(hits, frozenset(signals), marks, metric_lines, sorted(positioned))

    def _confirmed(self, data: bytes, candidates: set[tuple[int, int]],
                   signals: set[str]) -> tuple[list[tuple[int, Hit]], list[int], list[int]]:
        """The real matches on the candidate lines, the marked lines and the lines where a
        rule's metric pattern matches (adding its signal), at byte offsets of `data`."""
        hits: list[tuple[int, Hit]] = []
        marks: list[int] = []
        metric_lines: list[int] = []
        # Each line's matches of each pattern, at bytes from its start. A failing run repeats
        # its evidence word for word (an fp16 scaler's overflow line at every step), and each
        # confirmation costs a regex with its groups and conditions.
        confirmed: dict[tuple[int, bytes], list[tuple[int, Hit]]] = {}
        for offset, index in sorted(candidates):
            if index == _MARK:
                marks.append(offset)
                continue
            end = data.find(b"\n", offset)
            raw = data[offset:end if end >= 0 else len(data)]
            if index >= _METRIC:
                name = self._signal_names[index - _METRIC]
                if self._prefiltered[name].search(decoded(raw)):
                    signals.add(name)
                    if not metric_lines or metric_lines[-1] != offset:
                        metric_lines.append(offset)
                continue
            found = confirmed.get((index, raw))
            if found is None:
                line = decoded(raw)
                ascii_only = len(raw) == len(line)
                found = confirmed[index, raw] = [
                    (start if ascii_only else  # U+FFFD stands for 1 to 3 bytes
                     min(len(line[:start].encode()), len(raw)), hit)
                    for start, hit in self._confirm(self.patterns[index], line)]
            hits.extend((offset + start, hit) for start, hit in found)
        return hits, marks, metric_lines

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        return iter(self.find(text).hits)

    def signals(self, text: str) -> frozenset[str]:
        return self.find(text).signals

    def marks(self, text: str) -> list[int]:
        return self.find(text).marks

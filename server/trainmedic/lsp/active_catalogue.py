"""The catalogue the server diagnoses with: bundled rules plus the configured rule packs.

Pack files are edited while the editor runs, so a cheap stamp (path, mtime, size of every rule
file) is compared before each use and the packs are reloaded when it changed. A pack that fails
to load is reported once per change and left out; the others still apply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from trainmedic.catalogue.load import bundled, load_pack
from trainmedic.catalogue.rules import Catalogue, RuleError
from trainmedic.matching.choice import matcher_for, unsupported
from trainmedic.matching.python import Matcher

RULE_SUFFIXES = (".yaml", ".yml")

Stamp = tuple[tuple[str, int, int], ...]


def stamp(directories: Iterable[Path]) -> Stamp:
    """What changes when a rule file in `directories` is added, removed or edited."""
    entries = []
    for directory in directories:
        try:
            files = sorted(p for p in directory.rglob("*") if p.suffix in RULE_SUFFIXES)
        except OSError:
            files = []
        if not files:
            entries.append((str(directory), -1, -1))
        for path in files:
            try:
                info = path.stat()
            except OSError:
                continue
            entries.append((str(path), info.st_mtime_ns, info.st_size))
    return tuple(entries)


def layered(base: Catalogue, directories: Iterable[Path],
            report: Callable[[RuleError], None]) -> Catalogue:
    """`base` with every pack that loads, and that the matcher can compile, layered over it,
    in order; the others are reported."""
    catalogue = base
    for directory in directories:
        try:
            pack = load_pack(directory)
            problem = unsupported(pack)
            if problem is not None:
                raise RuleError(str(directory), None, "fingerprints", problem)
            catalogue = catalogue.merged(pack)
        except RuleError as error:
            report(error)
    return catalogue


class RulePacks:
    """Bundled rules and configured packs, with the matcher compiled for them (the native
    backend when it is installed, as in the CLI)."""

    def __init__(self, report: Callable[[RuleError], None]) -> None:
        self.report = report
        self.directories: tuple[Path, ...] = ()
        self._bundled: Catalogue | None = None
        self._stamp: Stamp | None = None
        self._current: tuple[Catalogue, Matcher] | None = None
        # Diagnoses load and compile in worker threads, features read on the event loop.
        self._lock = threading.RLock()

    @property
    def bundled(self) -> Catalogue:
        if self._bundled is None:
            self._bundled = bundled()
        return self._bundled

    def configure(self, directories: Iterable[Path]) -> None:
        directories = tuple(directories)
        if directories != self.directories:
            self.directories = directories
            self._current = None

    def changed(self) -> bool:
        """Whether a pack file changed since the catalogue was last built."""
        return self._current is not None and stamp(self.directories) != self._stamp

    def current(self) -> tuple[Catalogue, Matcher]:
        """The catalogue and its matcher, rebuilt when a pack changed on disk."""
        with self._lock:
            if self._current is None or self.changed():
                return self.reload()
            return self._current

    def reload(self) -> tuple[Catalogue, Matcher]:
        with self._lock:
            self._stamp = stamp(self.directories)
            catalogue = layered(self.bundled, self.directories, self.report)
            self._current = (catalogue, matcher_for(catalogue))
            return self._current

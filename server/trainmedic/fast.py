"""The native matcher backend: Hyperscan finds candidate lines, Python's `re` confirms them.

Installed with `pip install trainmedic[fast]`. Every fingerprint is compiled in Hyperscan's
prefilter mode (a superset of the pattern that Hyperscan can run at memory speed, lookarounds
relaxed), all of them into one database scanned once per chunk; each candidate line is then
matched with the real pattern, so the results, named groups included, are exactly those of the
pure-Python backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainmedic.catalogue import Catalogue
from trainmedic.events import Matcher
from trainmedic.model import Hit


def available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


class HyperscanMatcher(Matcher):
    """Same patterns and results as `Matcher`, found with one Hyperscan pass per chunk."""

    name = "hyperscan"

    def __init__(self, catalogue: Catalogue) -> None:
        import hyperscan

        super().__init__(catalogue)
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE
                 | hyperscan.HS_FLAG_ALLOWEMPTY
                 | (hyperscan.HS_FLAG_CASELESS if p.fingerprint.ignore_case else 0)
                 for p in self.patterns]
        database.compile(expressions=[p.fingerprint.pattern.encode() for p in self.patterns],
                         ids=list(range(len(self.patterns))), elements=len(self.patterns),
                         flags=flags)
        self._database = database

    def scan(self, text: str) -> Iterator[tuple[int, Hit]]:
        data = text.encode("utf-8", errors="surrogatepass")
        candidates: set[tuple[int, int]] = set()

        def found(index: int, start: int, end: int, flags: int, context: Any) -> None:
            line_start = data.rfind(b"\n", 0, max(end - 1, 0)) + 1
            candidates.add((line_start, index))

        self._database.scan(data, match_event_handler=found)
        ascii_only = len(data) == len(text)
        position, chars = 0, 0
        for line_start, index in sorted(candidates):
            if ascii_only:
                offset = line_start
            else:  # byte offsets to character offsets, walking forward once
                chars += len(data[position:line_start].decode("utf-8", errors="surrogatepass"))
                position, offset = line_start, chars
            end = text.find("\n", offset)
            line = text[offset:end if end >= 0 else len(text)]
            for start, hit in self._confirm(self.patterns[index], line):
                yield offset + start, hit

"""Timestamps in the formats training tools print, as epoch seconds.

glog lines (`E0501 12:00:00.123456`) carry no year: a `Clock` lends them the year of the last
full date it saw in the same source, so both kinds order correctly against each other. Reading
a timestamp as written needs no clock (`read_stamp`), so it is done where chunks are scanned;
dating it, in order (`Clock.date`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime, timedelta, timezone
else:  # the C module `datetime` hands on, alone: `datetime` defines all of it in Python first
    try:  # (0.85 ms, a sixtieth of a short diagnosis), then replaces it with this
        from _datetime import datetime, timedelta, timezone
    except ImportError:  # an interpreter without it
        from datetime import datetime, timedelta, timezone

# The searched patterns open with a digit and look back after it (no digit before the number):
# `re` then skips to the next digit, where one opening with the lookbehind is tried at every
# character.
_ISO = re.compile(
    r"(\d{4})(?<!\d\d{4})-(\d{2})-(\d{2})[T _](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
    r"(Z|[+-]\d{2}:?\d{2})?"
)
_GLOG = re.compile(r"^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,9})\b")
_MONTH_DAY = re.compile(
    r"(\d{2})(?<![\d-]\d\d)-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\b")
_EPOCH = re.compile(r"^\[?(1[5-9]\d{8})(?:\.(\d{1,9}))?\]?\s")
_SEARCH_SPAN = 120


def _seconds(year: str | int, month: str, day: str, hh: str, mm: str, ss: str,
             frac: str | None, tz: str | None = None) -> float | None:
    try:
        moment = datetime(int(year), int(month), int(day), int(hh), int(mm), int(ss),
                          tzinfo=timezone.utc)
    except ValueError:
        return None
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment.timestamp() + (float("0." + frac) if frac else 0.0)


# A timestamp as written: which of the formats above, and its fields.
Stamp = tuple[str, tuple[Any, ...]]


def read_stamp(text: str) -> Stamp | None:
    """The timestamp near the start of `text`, as written: what `Clock.date` dates."""
    head = text[:_SEARCH_SPAN]
    dated = "-" in head  # both searched formats hold one: a line without skips both
    if dated and (match := _ISO.search(head)):
        return "iso", match.groups()
    if match := _GLOG.match(head):
        return "glog", match.groups()
    if match := _EPOCH.match(head):
        return "epoch", match.groups()
    if dated and (match := _MONTH_DAY.search(head)):
        return "month-day", match.groups()
    return None


class Clock:
    """Dates the timestamps of one source's lines, in order."""

    def __init__(self) -> None:
        self.year = 1970

    def date(self, stamp: Stamp | None) -> float | None:
        """The seconds of a timestamp read by `read_stamp` (None: none, or no real date)."""
        if stamp is None:
            return None
        kind, fields = stamp
        if kind == "iso":
            self.year = int(fields[0])
            return _seconds(*fields)
        if kind == "epoch":
            return float(f"{fields[0]}.{fields[1] or '0'}")
        return _seconds(self.year, *fields)

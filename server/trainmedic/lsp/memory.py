"""Giving the memory of a burst of diagnoses back to the system once the server is idle.

A large log takes tens of megabytes while it is diagnosed. Python frees them afterwards, but
the C allocator keeps a part of them for reuse, larger or smaller depending on the order they
were freed in, so the server would stay near its busiest size for as long as the editor runs.
Shortly after the last diagnosis ends, glibc's `malloc_trim` returns the free pages. With
another C library, or on another system, there is no such call and nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

IDLE_SECONDS = 0.5


def _malloc_trim() -> Callable[[], object] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # in the C library the process already runs on
    except (OSError, AttributeError):
        return None
    return lambda: trim(0)


class IdleTrim:
    """Counts the diagnoses running; trims once none has run for `IDLE_SECONDS`."""

    def __init__(self) -> None:
        self.running = 0
        self._trim = _malloc_trim()
        self._timer: asyncio.TimerHandle | None = None

    @contextmanager
    def diagnosing(self) -> Iterator[None]:
        """Around one diagnosis, on the event loop."""
        self.running += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            yield
        finally:
            self.running -= 1
            if self.running == 0 and self._trim is not None:
                self._timer = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._trim)

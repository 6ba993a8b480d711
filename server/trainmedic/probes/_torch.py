"""What every probe shares: importing torch or saying why it cannot, and reporting checks."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

CANNOT_CHECK = 5


def import_torch(what: str) -> ModuleType | None:
    """torch, or None after telling the user what cannot be checked without it."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        # One line that names the interpreter: the fix is to run another one, not to install
        # trainmedic there (the editor runs probes with its own copy on PYTHONPATH).
        print(f"cannot check {what}: {sys.executable} has no torch; run the probe with the "
              "training environment's Python (or pip install torch here)")
        return None


class Report:
    """PASS/FAIL/SKIP lines and the exit code they add up to."""

    def __init__(self) -> None:
        self.failed = 0

    def check(self, ok: bool, text: str) -> None:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
        self.failed += not ok

    def info(self, text: str) -> None:
        print(f"      {text}")

    def skip(self, text: str) -> None:
        print(f"SKIP  {text}")

    @property
    def code(self) -> int:
        return 1 if self.failed else 0

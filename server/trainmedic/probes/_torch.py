"""What every probe shares: importing torch or saying why it cannot, and reporting checks."""

from __future__ import annotations

import importlib
from types import ModuleType

CANNOT_CHECK = 5


def import_torch(what: str) -> ModuleType | None:
    """torch, or None after telling the user what cannot be checked without it."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        print(f"cannot check {what}: torch is not installed in this Python "
              "(pip install torch, or run the probe with your training environment's python: "
              "python -m trainmedic probe ...)")
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

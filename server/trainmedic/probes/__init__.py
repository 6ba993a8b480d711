"""Verification probes: small real experiments behind the catalogue's `verify` commands.

Each probe module has `SUMMARY` and `run() -> int`; it imports torch inside `run` so that the
rest of trainmedic never needs it, and says plainly what it could not check.
"""

from __future__ import annotations

from types import ModuleType

from trainmedic.probes import (
    amp,
    checkpoint,
    cuda,
    dataloader,
    distributed,
    memory,
    model_code,
    numerics,
    port,
)
from trainmedic.probes import compile as compile_probe

PROBES: dict[str, ModuleType] = {
    "amp": amp,
    "distributed": distributed,
    "port": port,
    "cuda": cuda,
    "compile": compile_probe,
    "numerics": numerics,
    "checkpoint": checkpoint,
    "memory": memory,
    "model": model_code,
    "dataloader": dataloader,
}

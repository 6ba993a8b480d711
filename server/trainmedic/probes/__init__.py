"""Verification probes: small real experiments behind the catalogue's `verify` commands.

Each probe module has `SUMMARY` and `run() -> int`; it imports torch inside `run` so that the
rest of trainmedic never needs it, and says plainly what it could not check.
"""

from __future__ import annotations

from types import ModuleType

from trainmedic.probes import amp
from trainmedic.probes import distributed
from trainmedic.probes import port
from trainmedic.probes import compile as compile_probe
from trainmedic.probes import cuda
from trainmedic.probes import numerics
from trainmedic.probes import checkpoint
from trainmedic.probes import dataloader
from trainmedic.probes import memory
from trainmedic.probes import model

PROBES: dict[str, ModuleType] = {
    "amp": amp,
    "distributed": distributed,
    "port": port,
    "cuda": cuda,
    "compile": compile_probe,
    "numerics": numerics,
    "checkpoint": checkpoint,
    "memory": memory,
    "model": model,
    "dataloader": dataloader,
}

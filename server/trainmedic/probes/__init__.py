"""Verification probes: small real experiments behind the catalogue's `verify` commands.

Each probe module has `SUMMARY` and `run() -> int`; it imports torch inside `run` so that the
rest of trainmedic never needs it, and says plainly what it could not check.
"""

from __future__ import annotations

from types import ModuleType

from trainmedic.probes import amp
from trainmedic.probes import dataloader
from trainmedic.probes import memory

PROBES: dict[str, ModuleType] = {
    "amp": amp,
    "memory": memory,
    "dataloader": dataloader,
}

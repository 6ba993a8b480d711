"""Facts about a script's mixed precision that several checks read: which calls build a
GradScaler, which names hold one, what each autocast region computes in.

Computed once per script and shared, so adding an AMP check costs no extra pass.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from enum import Enum
from weakref import WeakKeyDictionary

from trainmedic.checks.sources.python import (
    PythonSource,
    argument,
    dotted,
    has_star_kwargs,
    literal,
)

_AMP_AUTOCAST = ("device_type", "dtype", "enabled", "cache_enabled")
CUDA_AUTOCAST = ("enabled", "dtype", "cache_enabled")
# qualified name → (parameters in order, the device it implies)
AUTOCASTS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "torch.autocast": (_AMP_AUTOCAST, None),
    "torch.amp.autocast": (_AMP_AUTOCAST, None),
    "torch.amp.autocast_mode.autocast": (_AMP_AUTOCAST, None),
    "torch.cuda.amp.autocast": (CUDA_AUTOCAST, "cuda"),
    "torch.cuda.amp.autocast_mode.autocast": (CUDA_AUTOCAST, "cuda"),
    "torch.cpu.amp.autocast": (CUDA_AUTOCAST, "cpu"),
}
_AMP_SCALER = ("device", "init_scale", "growth_factor", "backoff_factor", "growth_interval",
               "enabled")
_CUDA_SCALER = _AMP_SCALER[1:]
# qualified name → its parameters in order
GRAD_SCALERS: dict[str, tuple[str, ...]] = {
    "torch.amp.GradScaler": _AMP_SCALER,
    "torch.amp.grad_scaler.GradScaler": _AMP_SCALER,
    "torch.cuda.amp.GradScaler": _CUDA_SCALER,
    "torch.cuda.amp.grad_scaler.GradScaler": _CUDA_SCALER,
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler": _AMP_SCALER,
}
FP16 = frozenset({"torch.float16", "torch.half"})
BF16 = frozenset({"torch.bfloat16"})


class Precision(str, Enum):
    FP16 = "fp16"
    BF16 = "bf16"
    OFF = "off"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Autocast:
    call: ast.Call
    precision: Precision
    dtype: ast.expr | None
    device: str | None


@dataclass
class AmpFacts:
    scalers: list[ast.Call] = field(default_factory=list)
    scaler_keys: set[str] = field(default_factory=set)
    autocasts: list[Autocast] = field(default_factory=list)
    backward_scopes: set[ast.AST] = field(default_factory=set)

    def calls_on_scaler(self, src: PythonSource, name: str) -> list[tuple[ast.Call, str]]:
        """Every `S.name(...)` where `S` holds a GradScaler, with the text of `S`."""
        found = []
        for call in src.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == name:
                key = dotted(call.func.value)
                if key in self.scaler_keys:
                    found.append((call, key))
        return found


def parameter(params: tuple[str, ...], name: str) -> int | None:
    return params.index(name) if name in params else None


def scaler_argument(src: PythonSource, call: ast.Call, name: str) -> ast.expr | None:
    params = GRAD_SCALERS[src.qualname(call.func) or ""]
    return argument(call, name, parameter(params, name))


def scaler_enabled(src: PythonSource, call: ast.Call) -> bool | None:
    """True or False when the script says so plainly; None when it depends on a value."""
    enabled = scaler_argument(src, call, "enabled")
    if enabled is None:
        return None if has_star_kwargs(call) else True
    value = literal(enabled)
    return value if isinstance(value, bool) else None


def _autocast(src: PythonSource, call: ast.Call, qualname: str) -> Autocast:
    params, device = AUTOCASTS[qualname]
    enabled = argument(call, "enabled", parameter(params, "enabled"))
    if enabled is not None and literal(enabled) is False:
        return Autocast(call, Precision.OFF, None, device)
    if device is None:
        given = literal(argument(call, "device_type", 0))
        device = given if isinstance(given, str) else None
    dtype = argument(call, "dtype", parameter(params, "dtype"))
    if dtype is None:
        default = {"cuda": Precision.FP16, "cpu": Precision.BF16}.get(device or "")
        if default is None or has_star_kwargs(call):
            default = Precision.UNKNOWN
        return Autocast(call, default, None, device)
    name = src.qualname(dtype)
    precision = Precision.FP16 if name in FP16 else Precision.BF16 if name in BF16 else \
        Precision.UNKNOWN
    return Autocast(call, precision, dtype, device)


def _collect(src: PythonSource) -> AmpFacts:
    facts = AmpFacts()
    for call in src.calls:
        qualname = src.qualname(call.func)
        if qualname in GRAD_SCALERS:
            facts.scalers.append(call)
            stmt = src.statement(call)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            facts.scaler_keys.update(k for k in map(dotted, targets) if k)
        elif qualname in AUTOCASTS:
            facts.autocasts.append(_autocast(src, call, qualname))
        elif isinstance(call.func, ast.Attribute):
            receiver, name = call.func.value, call.func.attr
            key = dotted(receiver)
            if name == "backward" and not call.args:
                facts.backward_scopes.add(src.scopes[call])
                scaler = scaled_loss_receiver(call)
                if scaler:
                    facts.scaler_keys.add(scaler)
            elif key and (name == "unscale_" or (
                    name in ("step", "update") and "scaler" in key.rsplit(".", 1)[-1].lower())):
                facts.scaler_keys.add(key)
    return facts


_FACTS: WeakKeyDictionary[PythonSource, AmpFacts] = WeakKeyDictionary()


def amp_facts(src: PythonSource) -> AmpFacts:
    facts = _FACTS.get(src)
    if facts is None:
        facts = _FACTS[src] = _collect(src)
    return facts


def scaled_loss_receiver(call: ast.Call) -> str | None:
    """`S` when `call` is `S.scale(loss).backward()`."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
            receiver.func.attr == "scale":
        return dotted(receiver.func.value)
    return None

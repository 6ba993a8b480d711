"""Facts about a script's mixed precision that several checks read: which calls build a
GradScaler, which names hold one, what each autocast region computes in.

Computed once per script and shared, so adding an AMP check costs no extra pass.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from enum import Enum
from weakref import WeakKeyDictionary

from trainmedic.checks.sources.python import (
    PythonSource,
    argument,
    has_star_kwargs,
    literal,
    reference,
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
# ShardedGradScaler.__init__ (torch/distributed/fsdp/sharded_grad_scaler.py) takes
# backoff_factor before growth_factor, unlike GradScaler.
_SHARDED_SCALER = ("device", "init_scale", "backoff_factor", "growth_factor",
                   "growth_interval", "enabled", "process_group")
# Data preprocessing, not loss scaling (sklearn.preprocessing's scalers, by their usual names).
FEATURE_SCALERS = frozenset({"StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler"})
SHARDED_SCALERS = frozenset({"torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"})
# qualified name → its parameters in order
GRAD_SCALERS: dict[str, tuple[str, ...]] = {
    "torch.amp.GradScaler": _AMP_SCALER,
    "torch.amp.grad_scaler.GradScaler": _AMP_SCALER,
    "torch.cuda.amp.GradScaler": _CUDA_SCALER,
    "torch.cuda.amp.grad_scaler.GradScaler": _CUDA_SCALER,
    **dict.fromkeys(SHARDED_SCALERS, _SHARDED_SCALER),
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
    """One autocast region: `call` is the `autocast(...)` call, or the
    `functools.partial(torch.autocast, ...)` that makes one; `precision` is what its
    literal arguments say, the expressions are there for the value analysis."""

    call: ast.Call
    precision: Precision
    dtype: ast.expr | None
    device: str | None
    scope: ast.AST
    enabled: ast.expr | None = None
    device_type: ast.expr | None = None


@dataclass
class AmpFacts:
    """`scalers` are GradScaler constructions; `scaler_keys` every name that holds a loss
    scaler of any kind (also a helper's parameter it is passed as, `S[...]` of a container
    of them); `wrapped` the calls that scale through an object (`loss_scaler(loss, opt)`),
    `other_scalers` constructions of scaler classes that are not torch's."""

    scalers: list[ast.Call] = field(default_factory=list)
    scaler_keys: set[str] = field(default_factory=set)
    containers: set[str] = field(default_factory=set)
    autocasts: list[Autocast] = field(default_factory=list)
    backward_scopes: set[ast.AST] = field(default_factory=set)
    wrapped: list[ast.Call] = field(default_factory=list)
    other_scalers: list[ast.Call] = field(default_factory=list)

    def holds_scaler(self, key: str | None) -> bool:
        return key is not None and (key in self.scaler_keys or
                                    key.split("[", 1)[0] in self.containers)

    def calls_on_scaler(self, src: PythonSource, name: str) -> list[tuple[ast.Call, str]]:
        """Every `S.name(...)` where `S` holds a GradScaler, with the text of `S`."""
        found = []
        for call in src.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == name:
                key = reference(call.func.value)
                if key is not None and self.holds_scaler(key):
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


def _autocast(src: PythonSource, call: ast.Call, qualname: str, args: list[ast.expr],
              scope: ast.AST) -> Autocast:
    """`args` are the positional arguments the autocast gets (after the callable, for a
    `partial`); keywords are the call's own."""
    params, device = AUTOCASTS[qualname]
    view = ast.Call(call.func, args, call.keywords)
    enabled = argument(view, "enabled", parameter(params, "enabled"))
    device_type = argument(view, "device_type", 0) if device is None else None
    dtype = argument(view, "dtype", parameter(params, "dtype"))
    found = functools.partial(Autocast, call=call, dtype=dtype, scope=scope, enabled=enabled,
                              device_type=device_type)
    if enabled is not None and literal(enabled) is False:
        return found(precision=Precision.OFF, device=device)
    if device is None:
        given = literal(device_type)
        device = given if isinstance(given, str) else None
    if dtype is None:
        default = {"cuda": Precision.FP16, "cpu": Precision.BF16}.get(device or "")
        if default is None or has_star_kwargs(call):
            default = Precision.UNKNOWN
        return found(precision=default, device=device)
    name = src.qualname(dtype)
    precision = Precision.FP16 if name in FP16 else Precision.BF16 if name in BF16 else \
        Precision.UNKNOWN
    return found(precision=precision, device=device)


def _scalerish(key: str) -> bool:
    """The name says it is a loss scaler: `scaler`, `self.loss_scaler`, `scalers[0]`."""
    return "scaler" in key.split("[", 1)[0].rsplit(".", 1)[-1].lower()


def _loss_scaler_like(src: PythonSource, call: ast.Call, qualname: str | None) -> bool:
    """A call that makes a loss scaler of some library (`NativeScaler()`, `utils.LossScaler()`),
    not a data scaler such as scikit-learn's `StandardScaler`, which scales features."""
    callee = _callee(src, call)
    return callee.endswith("Scaler") and callee not in FEATURE_SCALERS and \
        not (qualname or "").startswith("sklearn.")


def _callee(src: PythonSource, call: ast.Call) -> str:
    """The last part of what is called: `NativeScaler` for `utils.NativeScaler()`."""
    name = src.qualname(call.func) or reference(call.func) or ""
    return name.rsplit(".", 1)[-1]


def _targets(src: PythonSource, call: ast.Call) -> tuple[list[str], bool]:
    """The names the statement around `call` binds it to, and whether they hold it inside
    a container (`{"g": GradScaler()}`, `[GradScaler() for _ in opts]`, `S[k] = ...`)."""
    stmt = src.statement(call)
    value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.Expr) else None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    if isinstance(stmt, ast.Expr) and isinstance(value, ast.Call) and \
            isinstance(value.func, ast.Attribute) and value.func.attr in ("append", "extend"):
        return [k for k in [reference(value.func.value)] if k], True
    inside = value is not call or any(isinstance(t, ast.Subscript) for t in targets)
    keys = [reference(t.value if isinstance(t, ast.Subscript) else t) for t in targets]
    return [k for k in keys if k], inside


def _collect(src: PythonSource) -> AmpFacts:
    facts = AmpFacts()
    passed: list[ast.Call] = []
    for call in src.calls:
        qualname = src.qualname(call.func)
        if qualname in GRAD_SCALERS or _loss_scaler_like(src, call, qualname):
            (facts.scalers if qualname in GRAD_SCALERS else facts.other_scalers).append(call)
            keys, inside = _targets(src, call)
            (facts.containers if inside else facts.scaler_keys).update(keys)
        elif qualname in AUTOCASTS:
            facts.autocasts.append(_autocast(src, call, qualname, call.args, src.scopes[call]))
        elif qualname == "functools.partial" and call.args and \
                src.qualname(call.args[0]) in AUTOCASTS:
            facts.autocasts.append(_autocast(src, call, src.qualname(call.args[0]) or "",
                                             call.args[1:], src.scopes[call]))
        elif isinstance(call.func, ast.Attribute):
            receiver, name = call.func.value, call.func.attr
            key = reference(receiver)
            if name == "backward" and not call.args:
                facts.backward_scopes.add(src.scopes[call])
                scaler = scaled_loss_receiver(call)
                if scaler:
                    facts.scaler_keys.add(scaler)
            elif key and (name == "unscale_" or (
                    name in ("step", "update", "scale") and _scalerish(key))):
                facts.scaler_keys.add(key)
        if call.args or call.keywords:
            passed.append(call)
    for call in passed:
        key = reference(call.func)
        if key and _scalerish(key) and not _callee(src, call).endswith("Scaler"):
            facts.wrapped.append(call)  # `loss_scaler(loss, optimizer, clip_grad=...)`
    _helpers(src, facts, passed)
    return facts


def _helpers(src: PythonSource, facts: AmpFacts, calls: list[ast.Call]) -> None:
    """A scaler passed to a function of this module is a scaler under its parameter's name
    there (`train_one_epoch(model, loader, opt, scaler)` → `def ...(m, l, o, amp)`)."""
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for scope in set(src.scopes.values()):
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(scope.name, scope)
    for node in src.tree.body:  # functions that make no calls themselves
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(node.name, node)
    for call in calls:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call.func, ast.Name) else None
        target = functions.get(name or "")
        if target is None:
            continue
        params = [a.arg for a in [*target.args.posonlyargs, *target.args.args]]
        if params[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute):
            params = params[1:]
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if index < len(params) and facts.holds_scaler(reference(arg)):
                facts.scaler_keys.add(params[index])
        for kw in call.keywords:
            if kw.arg and facts.holds_scaler(reference(kw.value)):
                facts.scaler_keys.add(kw.arg)


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
        return reference(receiver.func.value)
    return None

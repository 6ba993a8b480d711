"""TM102: fp16 autocast in a training script that never scales the loss."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from trainmedic.checks.amp import FP16, Autocast, Precision, amp_facts, scaler_argument
from trainmedic.checks.findings import CheckFinding, Position, Range, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, has_star_kwargs, literal
from trainmedic.checks.values import ModuleValues, is_fp16, module_values, shown


class Fp16WithoutScaler(Check):
    """fp16 autocast in a training loop with no GradScaler.

    ## What it does
    Finds `autocast` regions (also made with `functools.partial(torch.autocast, ...)`) that
    can compute in float16 in a script that calls `.backward()` while every `GradScaler`
    is off. The dtype may come through variables: a dict lookup, `getattr(torch, name)`, a
    conditional, an argparse option's `choices` and `default`; each choice is tried, so
    `GradScaler(enabled=(dtype == "float16"))` is seen to cover exactly the float16 runs.
    An autocast inside a function counts only when that function also runs the backward
    pass, so fp16 inference helpers stay quiet; so does a script that scales through a
    wrapper (`loss_scaler(loss, optimizer)`, a NativeScaler object, a scaler passed in).

    ## Why is this bad?
    float16 stops at about 6e-8: gradients smaller than that become zero in the backward
    pass, so without loss scaling the smallest updates vanish and the loss plateaus or turns
    NaN. bfloat16 has float32's range and needs no scaler.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch)
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch)
    loss.backward()
    optimizer.step()
    ```
    On GPUs without bf16 (V100, T4) keep float16 and add
    `scaler = torch.amp.GradScaler("cuda")` around the backward and the step.

    ## Fix safety
    Changes numerics: the fix switches the region to bfloat16, which Ampere (A100, RTX 30xx)
    and newer GPUs run at fp16 speed; older GPUs emulate it slowly or refuse it. There is
    no fix when a scaler exists (it needs switching on for float16 instead) or the dtype
    comes through a variable.
    """

    code = "TM102"
    rule_id = "amp-loss-scale"
    name = "fp16-autocast-without-grad-scaler"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        facts = amp_facts(src)
        if not facts.backward_scopes or facts.wrapped or facts.other_scalers or (
                facts.scaler_keys and not facts.scalers):
            return  # no training here, or scaling this module cannot see into
        switches = _switches(src, facts.scalers)
        if switches is None:
            return
        torch = src.alias_of("torch")
        for autocast in facts.autocasts:
            scope = autocast.scope
            if autocast.precision in (Precision.OFF, Precision.BF16) or \
                    autocast.device == "cpu" or (
                    not isinstance(scope, ast.Module) and scope not in facts.backward_scopes):
                continue
            why = switches.unscaled_fp16(autocast)
            if why is None:
                continue
            message = (f"fp16 autocast without {'an enabled' if facts.scalers else 'a'} "
                       f"GradScaler{why}: gradients below fp16's range underflow to zero; use "
                       "bfloat16, or scale the loss with torch.amp.GradScaler(\"cuda\")")
            dtype = autocast.dtype
            fix = None  # with a scaler, or a dtype chosen at run time, the fix is a person's
            if not facts.scalers and dtype is None and torch:
                fix = [src.append_argument(autocast.call, f"dtype={torch}.bfloat16")]
            elif not facts.scalers and isinstance(dtype, ast.Attribute) and \
                    src.qualname(dtype) in FP16:
                end = src.end(dtype)
                name = Range(Position(end.line, end.character - len(dtype.attr)), end)
                fix = [TextEdit(name, "bfloat16")]
            where = autocast.call.func if dtype is None else dtype
            yield self.finding(src.range(where), message, fix)


def _switches(src: PythonSource, scalers: list[ast.Call]) -> _Switches | None:
    """The scalers' `enabled` expressions, once each; None when one is always on."""
    enabled: dict[str, ast.expr] = {}
    for call in scalers:
        given = scaler_argument(src, call, "enabled")
        if has_star_kwargs(call) or given is None or literal(given) is True:
            return None
        enabled.setdefault(ast.unparse(given), given)
    return _Switches(module_values(src), list(enabled.values()))


@dataclass
class _Switches:
    """Whether every scaler is off, per choice of the script's options (memoised, so each
    choice is evaluated once however many autocast regions ask)."""

    values: ModuleValues
    enabled: list[ast.expr]
    _off: dict[tuple[tuple[str, object], ...], bool] = field(default_factory=dict)

    def all_off(self, world: dict[str, object]) -> bool:
        key = tuple(sorted(world.items(), key=repr))
        if key not in self._off:
            self._off[key] = all(self.values.evaluate(e, world).only(False)
                                 for e in self.enabled)
        return self._off[key]

    def unscaled_fp16(self, autocast: Autocast) -> str | None:
        """Why this region can run in float16 while every scaler is off (" when dtype is
        'float16'", or "" when it always does), or None when that cannot happen."""
        values = self.values
        own = values.names_read(autocast.dtype, autocast.enabled, autocast.device_type)
        worlds = itertools.chain(values.choices(autocast.dtype),  # name the dtype's choice
                                 values.choices(autocast.dtype, autocast.enabled,
                                                autocast.device_type, *self.enabled))
        for world in worlds:
            device = values.evaluate(autocast.device_type, world) \
                if autocast.device is None and autocast.device_type is not None else None
            if (device is not None and device.only("cpu")) or \
                    not values.reachable(autocast.call, world):
                continue
            if autocast.dtype is None:
                fp16 = autocast.device == "cuda" or (device is not None and
                                                     "cuda" in device.items)
            else:
                fp16 = any(is_fp16(v) for v in values.evaluate(autocast.dtype, world).items)
            enabled = values.evaluate(autocast.enabled, world) \
                if autocast.enabled is not None else None
            # a switch this region does not read must be seen on; one it reads may be
            on = enabled is None or True in enabled.items or (
                not enabled.complete and all(name in own for name in world))
            if fp16 and on and self.all_off(world):
                return "".join(f" when {name} is {shown(value)}"
                               for name, value in world.items())
        return None

"""TM102: fp16 autocast in a training script that never scales the loss."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.amp import Precision, amp_facts
from trainmedic.checks.findings import CheckFinding, Position, Range, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource


class Fp16WithoutScaler(Check):
    """fp16 autocast in a training loop with no GradScaler.

    ## What it does
    Finds `autocast` regions that compute in float16 (an explicit `dtype=torch.float16` or
    `torch.half`, or CUDA autocast's default) in a script that calls `.backward()` but never
    builds or uses a `GradScaler`. An autocast inside a function counts only when that
    function also runs the backward pass, so fp16 inference helpers stay quiet.

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
    and newer GPUs run at fp16 speed; older GPUs emulate it slowly or refuse it.
    """

    code = "TM102"
    rule_id = "amp-loss-scale"
    name = "fp16-autocast-without-grad-scaler"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        facts = amp_facts(src)
        if facts.scalers or facts.scaler_keys or not facts.backward_scopes:
            return
        torch = src.alias_of("torch")
        for autocast in facts.autocasts:
            scope = src.scopes[autocast.call]
            if autocast.precision is not Precision.FP16 or autocast.device == "cpu" or (
                    not isinstance(scope, ast.Module) and scope not in facts.backward_scopes):
                continue
            message = ("fp16 autocast without a GradScaler: gradients below fp16's range "
                       "underflow to zero; use bfloat16, or scale the loss with "
                       "torch.amp.GradScaler(\"cuda\")")
            dtype = autocast.dtype
            if dtype is None:
                fix = [src.append_argument(autocast.call, f"dtype={torch}.bfloat16")] \
                    if torch else None
                yield self.finding(src.range(autocast.call.func), message, fix)
                continue
            fix = None
            if isinstance(dtype, ast.Attribute):
                end = src.end(dtype)
                name = Range(Position(end.line, end.character - len(dtype.attr)), end)
                fix = [TextEdit(name, "bfloat16")]
            yield self.finding(src.range(dtype), message, fix)

"""TM103: a GradScaler in a script whose autocast regions are all bfloat16."""

from __future__ import annotations

from collections.abc import Iterator

from trainmedic.checks.amp import Precision, amp_facts, scaler_argument, scaler_enabled
from trainmedic.checks.findings import CheckFinding, Severity, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource


class ScalerWithBf16(Check):
    """A GradScaler used with bf16 autocast does nothing useful.

    ## What it does
    Finds enabled `GradScaler(...)` constructions in a script where every enabled autocast
    region computes in `torch.bfloat16`.

    ## Why is this bad?
    Loss scaling exists for float16's narrow range; bfloat16 has float32's exponent range, so
    the scaler only adds an inf/NaN check (a device sync) per step and, on an overflow, skips
    steps that bf16 did not need to skip. It also tells readers the run is fp16.

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch)
    scaler.scale(loss).backward()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda", enabled=False)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch)
    scaler.scale(loss).backward()
    ```
    or drop the scaler and call `loss.backward()` and `optimizer.step()` directly.

    ## Fix safety
    Safe: with `enabled=False`, `scale()` returns the loss unchanged, `step()` calls
    `optimizer.step()` and `update()` does nothing, so the loop keeps working as written.
    """

    code = "TM103"
    rule_id = "amp-bf16-vs-fp16"
    name = "grad-scaler-with-bf16"
    severity = Severity.INFORMATION

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        facts = amp_facts(src)
        regions = [a for a in facts.autocasts if a.precision is not Precision.OFF]
        if not regions or any(a.precision is not Precision.BF16 for a in regions):
            return
        for call in facts.scalers:
            if scaler_enabled(src, call) is not True:
                continue
            enabled = scaler_argument(src, call, "enabled")
            fix = TextEdit(src.range(enabled), "False") if enabled is not None else \
                src.append_argument(call, "enabled=False")
            yield self.finding(src.range(call.func),
                               "GradScaler with bf16 autocast: bfloat16 has float32's range "
                               "and needs no loss scaling; disable the scaler", [fix])

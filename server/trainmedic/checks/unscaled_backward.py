"""TM106: `loss.backward()` in a function that steps through a GradScaler."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.amp import amp_facts
from trainmedic.checks.findings import CheckFinding, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, method


class UnscaledBackward(Check):
    """`loss.backward()` where a GradScaler steps the optimizer but the loss is not scaled.

    ## What it does
    Finds `.backward()` calls in a function that calls `S.step(optimizer)` or `S.update()`
    on a GradScaler `S` but never `S.scale(...)`. Functions that scale on one branch and call
    a plain `loss.backward()` on the other (an `if scaler is not None` switch) are left alone.

    ## Why is this bad?
    `S.step()` divides the gradients by the loss scale before stepping. Gradients that were
    never multiplied by it come out 65536 times too small at the default scale, so the model
    barely trains, and the fp16 backward itself runs unscaled, underflowing small gradients.

    ## Example
    ```python
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Safe: wraps the tensor in `S.scale(...)` with the scaler the function steps with; the
    backward's own arguments stay as they are.
    """

    code = "TM106"
    rule_id = "amp-loss-scale"
    name = "unscaled-backward-with-grad-scaler"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        facts = amp_facts(src)
        stepping: dict[ast.AST, str] = {}
        scaling: set[ast.AST] = set()
        for name in ("update", "step"):
            stepping.update((src.scopes[c], key) for c, key in facts.calls_on_scaler(src, name))
        scaling.update(src.scopes[c] for c, _ in facts.calls_on_scaler(src, "scale"))
        for call in src.calls:
            scope = src.scopes[call]
            scaler = stepping.get(scope)
            receiver, name = method(call) or (None, "")
            if receiver is None or name != "backward" or call.args or not scaler or \
                    scope in scaling:
                continue
            fix = TextEdit(src.grouped_range(receiver),
                           f"{scaler}.scale({src.segment(receiver)})")
            yield self.finding(src.range(call),
                               f"backward() on an unscaled loss while {scaler}.step() "
                               f"unscales the gradients: use {scaler}.scale(loss).backward()",
                               [fix])

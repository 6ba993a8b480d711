"""TM105: gradient clipping on scaled gradients (no `scaler.unscale_` before it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from trainmedic.checks.amp import amp_facts, scaled_loss_receiver
from trainmedic.checks.findings import CheckFinding
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, method, reference

CLIPS = frozenset(f"torch.nn.utils.{module}{name}"
                  for module in ("", "clip_grad.")
                  for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"))


@dataclass
class _Window:
    """From `S.scale(loss).backward()` to `S.step(...)`: gradients are scaled by S."""

    scaler: str
    unscaled: bool = False
    reported: bool = False


class ClipBeforeUnscale(Check):
    """Gradient clipping after `scaler.scale(loss).backward()` without `scaler.unscale_`.

    ## What it does
    Within one function, finds the first `clip_grad_norm_`/`clip_grad_value_` between a
    scaled backward pass and `scaler.step(...)` when `scaler.unscale_(optimizer)` does not
    come before it.

    ## Why is this bad?
    After a scaled backward the gradients are multiplied by the loss scale (65536 at the
    start). Clipping them to `max_norm=1.0` then clips almost every step to a tiny fraction
    of the intended norm, and the threshold changes whenever the scale does; the norm it
    returns for logging is scaled too.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Safe for one optimizer: inserts `S.unscale_(optimizer)` before the clipping statement,
    with the optimizer taken from the `S.step(...)` that follows; `step()` then skips its own
    unscaling. When the loop already calls `S.unscale_` after the clip, that call is moved
    before it instead (a second call in one step raises "unscale_() has already been called").
    No fix is offered when no such step is found in the function.
    """

    code = "TM105"
    rule_id = "amp-loss-scale"
    name = "clip-scaled-gradients"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        if not amp_facts(src).scaler_keys:
            return
        windows: dict[ast.AST, _Window] = {}
        in_scope: dict[ast.AST, list[ast.Call]] = {}
        for call in src.calls:
            in_scope.setdefault(src.scopes[call], []).append(call)
        for call in src.calls:
            scope = src.scopes[call]
            scaler = scaled_loss_receiver(call)
            if scaler:
                windows[scope] = _Window(scaler)
                continue
            window = windows.get(scope)
            if window is None:
                continue
            receiver, name = method(call) or (None, "")
            key = reference(receiver) if receiver is not None else None
            if key == window.scaler and name == "unscale_":
                window.unscaled = True
            elif key == window.scaler and name == "step":
                del windows[scope]
            elif src.qualname(call.func) in CLIPS and not (window.unscaled or window.reported):
                window.reported = True
                yield self._report(src, call, window.scaler, in_scope[scope])

    def _report(self, src: PythonSource, clip: ast.Call, scaler: str,
                calls: list[ast.Call]) -> CheckFinding:
        """`calls` are the function's calls in source order."""
        later = [(name, call) for call in calls
                 if (call.lineno, call.col_offset) > (clip.lineno, clip.col_offset)
                 for receiver, name in [method(call) or (None, "")]
                 if receiver is not None and reference(receiver) == scaler]
        steps = [i for i, (name, call) in enumerate(later) if name == "step" and call.args]
        stmt = src.statement(clip)
        fix = None
        if steps and src.starts_line(stmt):
            step = later[steps[0]][1]
            existing = [call for name, call in later[:steps[0]] if name == "unscale_"]
            if not existing:
                fix = [src.insert_line_before(
                    stmt, f"{scaler}.unscale_({src.segment(step.args[0])})")]
            elif src.alone_on_line(moved := src.statement(existing[0])):
                fix = [src.insert_line_before(stmt, src.segment(moved)), src.delete_lines(moved)]
        return self.finding(src.range(clip.func),
                            f"gradients are clipped while still scaled by {scaler}: call "
                            f"{scaler}.unscale_(optimizer) before clipping", fix)

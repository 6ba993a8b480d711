"""TM104: `scaler.step(...)` whose loop never calls `scaler.update()`."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator

from trainmedic.checks.amp import amp_facts
from trainmedic.checks.findings import CheckFinding, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource


class ScalerStepWithoutUpdate(Check):
    """`scaler.step(optimizer)` with no `scaler.update()` after it in the loop.

    ## What it does
    Finds `S.step(...)` on a GradScaler `S` when the script never calls `S.update()`, or
    calls it in the same function but outside the training loop, the loop that runs the
    backward pass and the step (so once per epoch instead of once per iteration). An update
    in another function (a trainer's hook) counts as handled, and so does one after a loop
    that only steps several optimizers.

    ## Why is this bad?
    `update()` is what moves the loss scale: it halves the scale after an overflow and grows
    it after `growth_interval` clean steps. Without it the scale stays where it started, so
    after one overflow every later step is skipped too, or small gradients keep underflowing
    while the run looks healthy.

    ## Example
    ```python
    for batch in loader:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    for batch in loader:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    Safe: inserts `S.update()` on the line after the step, at the step's indentation (inside
    the same `if` when the step is conditional, as with gradient accumulation). An update
    left after the loop is removed, since a second `update()` with no step before it raises.
    No fix is offered when the step shares its line with other statements.
    """

    code = "TM104"
    rule_id = "amp-loss-scale"
    name = "grad-scaler-step-without-update"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        facts = amp_facts(src)
        updates: dict[str, list[ast.Call]] = defaultdict(list)
        in_scope: dict[tuple[str, ast.AST], list[ast.Call]] = defaultdict(list)
        for call, key in facts.calls_on_scaler(src, "update"):
            updates[key].append(call)
            in_scope[key, src.scopes[call]].append(call)
        backward_loops = _loops_with_backward(src)
        for call, key in facts.calls_on_scaler(src, "step"):
            if not call.args:
                continue
            scope = src.scopes[call]
            local = in_scope.get((key, scope), [])
            anchor, loop = _training_loop(src, call, backward_loops)
            if updates[key] and (not local or loop is None or
                                 any(src.inside(u, loop) for u in local)):
                continue
            fix: list[TextEdit] | None = None
            if src.alone_on_line(anchor):
                fix = [src.insert_line_after(anchor, f"{key}.update()")]
                for update in local:
                    outer = src.statement(update)
                    if not _removable(src, outer, update):
                        fix = None
                        break
                    fix.append(src.delete_lines(outer))
            message = f"{key}.step() without {key}.update() in the loop: the loss scale " \
                "never moves, so overflows keep skipping steps and small gradients keep " \
                "underflowing" if not local else \
                f"{key}.update() runs outside the loop that calls {key}.step(): the loss " \
                "scale moves once per pass over the loop instead of once per step"
            yield self.finding(src.range(call), message, fix)


def _loops_with_backward(src: PythonSource) -> set[ast.AST]:
    """Every loop that runs a `.backward()` somewhere inside it (in the same function)."""
    loops: set[ast.AST] = set()
    for call in src.calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            loop = src.loop_of(call)
            while loop is not None and loop not in loops:
                loops.add(loop)
                loop = src.loop_of(loop)
    return loops


def _training_loop(src: PythonSource, call: ast.Call, backward_loops: set[ast.AST]
                   ) -> tuple[ast.stmt, ast.For | ast.AsyncFor | ast.While | None]:
    """The loop around the step that also runs a backward pass (a loop over optimizers is
    not it), and the statement in it that holds the step, where an update belongs after."""
    anchor: ast.stmt = src.statement(call)
    loop = src.loop_of(call)
    while loop is not None and loop not in backward_loops:
        anchor, loop = loop, src.loop_of(loop)
    return anchor, loop


def _removable(src: PythonSource, stmt: ast.stmt, call: ast.Call) -> bool:
    """`stmt` is just `S.update()` on its own lines, and its block keeps other statements."""
    if not (isinstance(stmt, ast.Expr) and stmt.value is call and src.alone_on_line(stmt)):
        return False
    parent = src.parents[stmt]
    blocks = [getattr(parent, name, None) for name in ("body", "orelse", "finalbody")]
    return any(isinstance(b, list) and stmt in b and len(b) > 1 for b in blocks)

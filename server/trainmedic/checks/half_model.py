"""TM108: a model cast to float16 as a whole and then trained."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from trainmedic.checks.amp import FP16
from trainmedic.checks.findings import CheckFinding, Position, Range
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, dotted, method

_OPTIMIZER = re.compile(r"optim|adam|sgd|lamb|lion|adafactor|rmsprop|adagrad|sophia", re.I)


def _at(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


class HalfModelTrained(Check):
    """`model.half()` (or `.to(torch.float16)`) on a model that is then trained.

    ## What it does
    Finds `X.half()`, `X.to(torch.float16)` and `X.to(dtype=torch.half)` where `X` (or the
    name the result is assigned to) later, in the same function, has an optimizer built on
    its `parameters()` or is put in `.train()` mode.

    ## Why is this bad?
    With the weights themselves in float16 the optimizer adds updates to fp16 numbers: an
    update smaller than about 1/2000 of a weight rounds away to nothing, Adam's second-moment
    state underflows, and the loss stalls or turns NaN. Mixed precision keeps float32 master
    weights and only computes in fp16.

    ## Example
    ```python
    model = Net().cuda().half()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```

    ## Use instead
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch)
    ```

    ## Fix safety
    No automatic fix: moving to autocast also changes the loop (scaler, casts of inputs),
    which needs a person to look at it.
    """

    code = "TM108"
    rule_id = "amp-bf16-vs-fp16"
    name = "fp16-model-trained"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        trained: dict[tuple[ast.AST, str], list[tuple[int, int]]] = {}
        casts: list[tuple[ast.Call, ast.Attribute, str]] = []
        for call in src.calls:
            receiver, name = method(call) or (None, "")
            if name == "train" and receiver is not None and _training_mode(call):
                trained.setdefault((src.scopes[call], dotted(receiver) or ""), []).append(
                    _at(call))
            elif _builds_optimizer(src, call):
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    params = arg if isinstance(arg, ast.Call) else None
                    of, what = (method(params) if params else None) or (None, "")
                    if of is not None and what in ("parameters", "named_parameters"):
                        trained.setdefault((src.scopes[call], dotted(of) or ""), []).append(
                            _at(call))
            elif isinstance(call.func, ast.Attribute) and _to_fp16(src, call, name):
                casts.append((call, call.func, _model_name(src, call, call.func.value)))
        for call, func, key in casts:
            later = trained.get((src.scopes[call], key))
            if key and later and max(later) > _at(call):
                end = src.end(func)
                start = Position(end.line, end.character - len(func.attr))
                yield self.finding(Range(start, src.end(call)),
                                   f"{key} is cast to float16 and then trained: fp16 weights "
                                   "lose small updates; keep the model in float32 and use "
                                   "autocast with a GradScaler (or bf16)")


def _training_mode(call: ast.Call) -> bool:
    """`.train()` or `.train(True)`: training mode, not `.train(False)`."""
    return not call.args or (isinstance(call.args[0], ast.Constant) and
                             call.args[0].value is True)


def _builds_optimizer(src: PythonSource, call: ast.Call) -> bool:
    name = src.qualname(call.func)
    if name is None:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else ""
    return bool(_OPTIMIZER.search(name.rsplit(".", 1)[-1]) or ".optim." in name)


def _to_fp16(src: PythonSource, call: ast.Call, name: str) -> bool:
    if name == "half":
        return not call.args and not call.keywords
    if name != "to":
        return False
    values = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return any(src.qualname(v) in FP16 for v in values)


def _model_name(src: PythonSource, call: ast.Call, receiver: ast.expr) -> str:
    """The name that holds the cast model: the assignment target, or the receiver itself."""
    stmt = src.statement(call)
    if isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1:
        return dotted(stmt.targets[0]) or ""
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return dotted(receiver) or ""
    return ""

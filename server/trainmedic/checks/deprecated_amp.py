"""TM101: the deprecated `torch.cuda.amp` API."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.amp import CUDA_AUTOCAST
from trainmedic.checks.findings import CheckFinding, Range, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource

_MODULES = ("torch.cuda.amp", "torch.cuda.amp.grad_scaler", "torch.cuda.amp.autocast_mode")
_SCALER = {f"{m}.GradScaler" for m in _MODULES}
_AUTOCAST = {f"{m}.autocast" for m in _MODULES}
_MOVABLE = {"GradScaler", "autocast"}


class DeprecatedCudaAmp(Check):
    """`torch.cuda.amp.GradScaler(...)` and `torch.cuda.amp.autocast(...)` are deprecated.

    ## What it does
    Finds calls to `torch.cuda.amp.GradScaler` and `torch.cuda.amp.autocast`, however they
    were imported, and `from torch.cuda.amp import ...` statements. Compatibility code is
    left alone: the old API in a `try` that catches ImportError or AttributeError (the
    fallback after `from torch.amp import GradScaler` fails), or under an `if` on
    `hasattr(...)` or a torch version, is there for the versions that lack the new one.

    ## Why is this bad?
    Since torch 2.4 both emit a FutureWarning on every call and are kept only as thin
    wrappers of the device-generic `torch.amp` API; they will be removed. The deprecated
    `autocast` also takes `enabled` as its first positional argument where `torch.autocast`
    takes the device, so code moved by hand silently changes meaning.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler(init_scale=1024)
    with torch.cuda.amp.autocast(dtype=torch.float16):
        loss = model(batch)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda", init_scale=1024)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch)
    ```

    ## Fix safety
    Safe on torch 2.3 and newer, where `torch.amp.GradScaler` first exists (`torch.autocast`
    exists since 1.10): the new calls construct the same objects with the same arguments
    (positional `autocast` arguments are given their keyword names). A `from torch.cuda.amp import`
    statement is rewritten together with every call of the names it imports; it is left
    alone when it imports anything but `GradScaler` and `autocast`.
    """

    code = "TM101"
    rule_id = "amp-loss-scale"
    name = "deprecated-cuda-amp"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        torch = src.alias_of("torch")
        imports = [stmt for stmt in src.import_froms if stmt.module in _MODULES]
        bound = _bindings(src, imports)
        fallbacks = {stmt for stmt in imports if src.in_fallback(stmt)}
        from_imports = {stmt: _import_fix(src, stmt, bound.get(stmt, [])) for stmt in imports
                        if stmt not in fallbacks}
        for stmt, edits in from_imports.items():
            yield self.finding(src.module_range(stmt),
                               f"{stmt.module} is deprecated: import GradScaler and autocast "
                               "from torch.amp and pass the device \"cuda\" (torch 2.3 or "
                               "newer)", edits)
        binding = {id(call): stmt for stmt, calls in bound.items() for call in calls}
        for call in src.calls:
            qualname = src.qualname(call.func)
            if qualname not in _SCALER | _AUTOCAST or src.in_fallback(call) or \
                    binding.get(id(call)) in fallbacks:
                continue  # the old API kept on purpose, for torch versions without the new
            scaler = qualname in _SCALER
            fix: list[TextEdit] | None = None
            if id(call) in binding:
                fix = from_imports[binding[id(call)]]
            elif isinstance(call.func, ast.Attribute) and torch:
                edits = _arguments(src, call, scaler)
                target = f"{torch}.amp.GradScaler" if scaler else f"{torch}.autocast"
                fix = None if edits is None else \
                    [TextEdit(src.range(call.func), target), *edits]
            old, new = ("torch.cuda.amp.GradScaler(...)",
                        'torch.amp.GradScaler("cuda", ...) (torch 2.3 or newer)') if scaler \
                else ("torch.cuda.amp.autocast(...)", 'torch.autocast("cuda", ...)')
            yield self.finding(src.range(call.func), f"{old} is deprecated: use {new}", fix)


def _bindings(src: PythonSource, imports: list[ast.ImportFrom]
              ) -> dict[ast.ImportFrom, list[ast.Call]]:
    """The calls of the names each import binds: an import inside a function binds them in
    that function and the functions nested in it, one at module level everywhere else."""
    by_scope: dict[tuple[ast.AST, str], ast.ImportFrom] = {}
    for stmt in imports:
        for alias in stmt.names:
            by_scope.setdefault((src.scope_of(stmt), alias.asname or alias.name), stmt)
    bound: dict[ast.ImportFrom, list[ast.Call]] = {}
    for call in src.calls:
        if not isinstance(call.func, ast.Name):
            continue
        scope: ast.AST = src.scopes[call]
        while (scope, call.func.id) not in by_scope and scope is not src.tree:
            scope = src.scope_of(scope)  # a nested function sees its enclosing names
        binder = by_scope.get((scope, call.func.id))
        if binder is not None:
            bound.setdefault(binder, []).append(call)
    return bound


def _arguments(src: PythonSource, call: ast.Call, scaler: bool) -> list[TextEdit] | None:
    """Edits inside the parentheses: the device first, keyword names for `autocast`'s
    positional arguments (its first one is `enabled`, where the new API expects the device)."""
    if scaler or not call.args:
        return [src.insert_first_argument(call, '"cuda"')]
    if len(call.args) > len(CUDA_AUTOCAST) or any(isinstance(a, ast.Starred)
                                                   for a in call.args):
        return None
    edits = []
    for index, name in enumerate(CUDA_AUTOCAST[:len(call.args)]):
        at = src.argument_start(call, index)
        prefix = f'"cuda", {name}=' if index == 0 else f"{name}="
        edits.append(TextEdit(Range(at, at), prefix))
    return edits


def _import_fix(src: PythonSource, stmt: ast.ImportFrom,
                calls: list[ast.Call]) -> list[TextEdit] | None:
    """`from torch.amp import ...` plus the argument edits of every call of its names."""
    if any(alias.name not in _MOVABLE for alias in stmt.names):
        return None
    local = {alias.asname or alias.name: alias.name for alias in stmt.names}
    edits = [TextEdit(src.module_range(stmt), "torch.amp")]
    for call in calls:
        if isinstance(call.func, ast.Name) and call.func.id in local:
            more = _arguments(src, call, local[call.func.id] == "GradScaler")
            if more is None:
                return None
            edits += more
    return edits

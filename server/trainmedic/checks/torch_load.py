"""TM110: `torch.load` without an explicit `weights_only`, with a fix that loads what the
same file saves."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from trainmedic.checks.findings import CheckFinding, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, argument, has_star_kwargs, keyword
from trainmedic.checks.values import ModuleValues, module_values

LOADS = frozenset({"torch.load", "torch.serialization.load"})
SAVES = frozenset({"torch.save", "torch.serialization.save"})
# Calls whose result pickles as plain containers of tensors and numbers.
_CONTAINERS = frozenset({"OrderedDict", "defaultdict", "Counter"})
# Calls whose result holds numpy arrays or other globals weights_only refuses.
_OPAQUE_CALLS = {"numpy.random.get_state": "the numpy random state",
                 "random.getstate": "the Python random state"}
MAX_DEPTH = 8
# Parameter names that hold parsed command-line arguments by convention (an
# argparse.Namespace), when no call in the file says what is passed.
ARGUMENT_NAMES = frozenset({"args", "opt", "opts", "flags"})


@dataclass(frozen=True)
class Saved:
    """What a `torch.save` in this file puts in a checkpoint that weights_only refuses."""

    namespace: ast.AST | None = None  # the save that stores an argparse.Namespace
    opaque: tuple[ast.AST, str] | None = None  # the save that stores something else, what


class TorchLoadWeightsOnly(Check):
    """`torch.load(...)` without `weights_only`.

    ## What it does
    Finds `torch.load` calls that do not pass `weights_only` (and no `**kwargs` that might;
    a `**kwargs` of a function that this module calls without `weights_only` counts as
    not passing it). The fix depends on what the same file saves with `torch.save` (or
    hands a saving helper such as `save_on_master`): plain
    state dicts get `weights_only=True`; an `argparse.Namespace` in the checkpoint (the
    parsed arguments, a common resume aid; also a parameter named `args` or `opt` that no
    call in the file fills) also gets
    `torch.serialization.add_safe_globals([argparse.Namespace])` before the load; a whole
    pickled model or a numpy random state gets `weights_only=False`, since nothing else
    loads it.

    ## Why is this bad?
    Before torch 2.6 `torch.load` unpickles the whole file, and unpickling runs any code a
    crafted checkpoint carries. Since 2.6 the default is `weights_only=True`, so the same line
    now refuses checkpoints that hold other Python objects with "Weights only load failed
    ... Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default".
    Saying which one you mean makes the line behave the same on every version.

    ## Example
    ```python
    torch.save({"model": model.state_dict(), "args": args}, path)
    state = torch.load(args.resume, map_location="cpu")
    ```

    ## Use instead
    ```python
    torch.serialization.add_safe_globals([argparse.Namespace])
    state = torch.load(args.resume, map_location="cpu", weights_only=True)
    ```

    ## Fix safety
    `weights_only=True` is the torch 2.6 default and refuses, on every version, checkpoints
    that pickle arbitrary objects; the fix picks it only when this file saves nothing else
    (`add_safe_globals` needs torch 2.4 or newer). Checkpoints written by other code may
    still hold other objects. `weights_only=False` keeps the old behaviour: load only files
    you trust.
    """

    code = "TM110"
    rule_id = "torch-load-weights-only"
    name = "torch-load-without-weights-only"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        loads = [c for c in src.calls_to(LOADS) if keyword(c, "weights_only") is None]
        loads = [c for c in loads if not has_star_kwargs(c) or _kwargs_never_say(src, c)]
        if not loads:
            return
        saved = _saved(src)
        for call in loads:
            yield self._finding(src, call, saved)

    def _finding(self, src: PythonSource, call: ast.Call, saved: Saved) -> CheckFinding:
        where = src.range(call.func)
        if has_star_kwargs(call):
            return self.finding(where, "torch.load(**kwargs) without weights_only: no call "
                                "of this function passes it, so torch 2.6's default "
                                "weights_only=True applies; pass weights_only explicitly")
        if saved.opaque is not None:
            node, what = saved.opaque
            return self.finding(where, f"torch.load without weights_only: this file saves "
                                f"{what} (line {getattr(node, 'lineno', 0)}), which "
                                "weights_only=True refuses; pass weights_only=False and load "
                                "only checkpoints you trust",
                                [src.append_argument(call, "weights_only=False")])
        if saved.namespace is not None:
            torch = src.alias_of("torch")
            stmt = src.statement(call)
            namespace, imports = _namespace_name(src)
            fix = [*imports, src.insert_line_before(
                       stmt, f"{torch}.serialization.add_safe_globals([{namespace}])"),
                   src.append_argument(call, "weights_only=True")] \
                if torch and src.starts_line(stmt) else None
            return self.finding(where, "torch.load without weights_only: this file saves an "
                                "argparse.Namespace (line "
                                f"{getattr(saved.namespace, 'lineno', 0)}), which "
                                "weights_only=True refuses; allow it with "
                                "torch.serialization.add_safe_globals([argparse.Namespace]) "
                                "and pass weights_only=True", fix)
        return self.finding(where, "torch.load without weights_only: unpickling can run code "
                            "from the file, and torch 2.6 changed the default to True; pass "
                            "weights_only=True", [src.append_argument(call, "weights_only=True")])


def _namespace_name(src: PythonSource) -> tuple[str, list[TextEdit]]:
    """How this file names `argparse.Namespace`, and the import to add when it cannot."""
    direct = src.alias_of("argparse.Namespace")
    if direct:
        return direct, []
    module = src.alias_of("argparse")
    if module:
        return f"{module}.Namespace", []
    first = next((s for s in src.tree.body if isinstance(s, ast.Import | ast.ImportFrom)),
                 src.tree.body[0])
    return "argparse.Namespace", [src.insert_line_before(first, "import argparse")]


def _kwargs_never_say(src: PythonSource, call: ast.Call) -> bool:
    """`torch.load(path, **kwargs)` inside `def f(path, **kwargs)`, and this module calls
    `f` but never with `weights_only` (or its own `**`)."""
    star = next(k.value for k in call.keywords if k.arg is None)
    scope = src.scopes[call]
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or \
            scope.args.kwarg is None or not isinstance(star, ast.Name) or \
            star.id != scope.args.kwarg.arg:
        return False
    callers = src.calls_named(scope.name)
    return bool(callers) and not any(
        keyword(c, "weights_only") is not None or has_star_kwargs(c) for c in callers)


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def _saved(src: PythonSource) -> Saved:
    """What this file's `torch.save` calls store, and the Namespaces its other saving
    helpers are handed (`utils.save_on_master({"args": args, ...}, path)`): those may
    unpack a model into its state dict, so only what they are given as-is counts."""
    reader = _Contents(src, module_values(src))
    namespace: ast.AST | None = None
    opaque: tuple[ast.AST, str] | None = None
    for save in src.calls:
        torch_save = src.qualname(save.func) in SAVES
        if not torch_save and "save" not in (_called_name(save) or "").lower():
            continue
        obj = argument(save, "obj", 0) if torch_save else argument(save, "", 0)
        for kind in sorted(reader.of(src.scopes[save], obj, 0)):
            if kind == "namespace":
                namespace = namespace or save
            elif torch_save and opaque is None:
                opaque = (save, kind)
    return Saved(namespace, opaque)


@dataclass
class _Contents:
    """What an expression puts in a checkpoint that weights_only refuses: "namespace" for
    an argparse.Namespace, else a description. A name's answer is worked out once (per
    function, where it comes in as a parameter), so many saves cost one pass."""

    src: PythonSource
    values: ModuleValues
    memo: dict[tuple[str, ast.AST | None], frozenset[str]] = field(default_factory=dict)

    def of(self, scope: ast.AST, node: ast.expr | None, depth: int) -> frozenset[str]:
        if node is None or depth > MAX_DEPTH:
            return frozenset()
        if isinstance(node, ast.Dict | ast.List | ast.Tuple):
            parts = node.values if isinstance(node, ast.Dict) else node.elts
            return frozenset().union(*(self.of(scope, v, depth + 1) for v in parts))
        if isinstance(node, ast.Call):
            qualname = self.src.qualname(node.func) or ""
            if qualname == "argparse.Namespace" or _called_name(node) == "parse_args":
                return frozenset({"namespace"})
            return frozenset({_OPAQUE_CALLS[qualname]}) if qualname in _OPAQUE_CALLS \
                else frozenset()
        return self._name(scope, node.id, depth) if isinstance(node, ast.Name) \
            else frozenset()

    def _name(self, scope: ast.AST, name: str, depth: int) -> frozenset[str]:
        assigned = [v for v in self.values.assigned.get(name, []) if v is not None]
        passed = isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and not assigned
        key = (name, scope if passed else None)
        if key not in self.memo:
            self.memo[key] = frozenset()  # a name that leads back to itself adds nothing
            self.memo[key] = self._work_out(scope, name, assigned, passed, depth)
        return self.memo[key]

    def _work_out(self, scope: ast.AST, name: str, assigned: list[ast.expr], passed: bool,
                  depth: int) -> frozenset[str]:
        built = {_class_built(self.src, value) for value in assigned
                 if not _same_object(self.src, name, value)}
        if assigned and None not in built:  # `model = Net()`, and never anything else
            return frozenset({f"{name}, a whole {sorted(b for b in built if b)[0]} object,"})
        found = [self.of(scope, v, depth + 1)
                 for v in [*assigned, *self.values.items.get(name, [])]]
        if passed and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            callers = self._passed(scope, name, depth)
            if not callers and name in ARGUMENT_NAMES:
                return frozenset({"namespace"})  # `def save_model(args, ...)`, called elsewhere
            found += callers
        return frozenset().union(*found)

    def _passed(self, helper: ast.FunctionDef | ast.AsyncFunctionDef, name: str,
                depth: int) -> list[frozenset[str]]:
        """What the module's calls of `helper` pass as its parameter `name`
        (`save_checkpoint({"args": args, ...}, path)`)."""
        params = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
        if name not in params:
            return []
        index = params.index(name)
        found = []
        for call in self.src.calls_named(helper.name):
            offset = 1 if params[:1] == ["self"] and isinstance(call.func, ast.Attribute) \
                else 0
            given = argument(call, name, index - offset if index >= offset else None)
            found.append(self.of(self.src.scopes[call], given, depth + 1))
        return found


def _same_object(src: PythonSource, name: str, value: ast.expr) -> bool:
    """`model = torch.load(...)` or `model = model.cuda()`: the name keeps the kind of
    object it had (what was saved comes back; a method returns the model itself)."""
    if not isinstance(value, ast.Call):
        return False
    if src.qualname(value.func) in LOADS:
        return True
    receiver = value.func.value if isinstance(value.func, ast.Attribute) else None
    return isinstance(receiver, ast.Name) and receiver.id == name


def _class_built(src: PythonSource, value: ast.expr) -> str | None:
    """The class `value` instantiates (`Net(...)`, `models.ResNet(...)`), for classes
    other than plain containers and argument namespaces; else None."""
    if not isinstance(value, ast.Call):
        return None
    callee = _called_name(value) or ""
    qualname = src.qualname(value.func) or ""
    if not callee[:1].isupper() or callee in _CONTAINERS or qualname == "argparse.Namespace":
        return None
    return callee

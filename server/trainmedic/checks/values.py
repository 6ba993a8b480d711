"""What a variable can hold, read from one module without running it.

A small flow-insensitive analysis: every assignment to a name anywhere in the module counts,
whatever its order or branch. It knows literals, conditional expressions, comparisons, dict
lookups, `getattr(torch, name)`, the `torch.<dtype>` attributes, argparse options (`choices`,
`default`, `store_true`) and function parameter defaults. A result is the values seen plus
whether that list is complete: a parameter's default is one value it can take, not the only
one. Checks ask "can this be float16?" (a value seen) and "is this scaler off for float16?"
(complete, and only False), so an incomplete answer keeps a check quiet where quiet is safe.

"Worlds" tie two expressions to one choice: fixing `dtype = "float16"` evaluates both the
autocast's dtype and the scaler's `enabled` for that choice, so `GradScaler(enabled=(dtype ==
"float16"))` is seen to be on exactly when the autocast is fp16.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from trainmedic.checks.sources.python import PythonSource, dotted, keyword

MAX_VALUES = 32   # a set larger than this is treated as unknown (bounded work and memory)
MAX_DEPTH = 24    # how far one name may lead to another
MAX_WORLDS = 64   # how many single choices are tried per question


@dataclass(frozen=True)
class TorchDtype:
    """`torch.float16` and friends, by their short name."""

    name: str


@dataclass(frozen=True)
class Values:
    """The values an expression was seen to take; `complete` when it can take no other."""

    items: frozenset[object] = frozenset()
    complete: bool = False
    too_many: bool = False  # past MAX_VALUES: nothing is known, whatever is added later

    def __or__(self, other: Values) -> Values:
        items = self.items | other.items
        if self.too_many or other.too_many or len(items) > MAX_VALUES:
            return Values(too_many=True)
        return Values(items, self.complete and other.complete)

    def only(self, *allowed: object) -> bool:
        """Complete, and every value is one of `allowed`."""
        return self.complete and bool(self.items) and self.items <= set(allowed)


UNKNOWN = Values()
BOOLS = Values(frozenset({True, False}), True)
_COMPARE: dict[type[ast.cmpop], Callable[[object, object], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b,  # type: ignore[operator]
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
FP16_NAMES = frozenset({"float16", "half"})


def _argparse_dest(call: ast.Call) -> str | None:
    given = keyword(call, "dest")
    if given is not None and isinstance(given.value, ast.Constant) and \
            isinstance(given.value.value, str):
        return given.value.value
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and
             isinstance(a.value, str)]
    long = next((f for f in flags if f.startswith("--")), None)
    name = long or next(iter(flags), None)
    return name.lstrip("-").replace("-", "_") if name else None


@dataclass(eq=False)
class ModuleValues:
    """The assignments of one module, indexed by the dotted name they assign."""

    src: PythonSource
    defaults: bool = False  # options and parameters hold only their defaults
    assigned: dict[str, list[ast.expr | None]] = field(default_factory=dict)
    items: dict[str, list[ast.expr]] = field(default_factory=dict)  # set by `name[k] = v`
    parameters: dict[str, list[ast.expr | None]] = field(default_factory=dict)  # defaults
    option_calls: dict[str, list[ast.Call]] = field(default_factory=dict)  # add_argument
    _options: dict[str, Values] = field(default_factory=dict)
    _cache: dict[str, Values] = field(default_factory=dict)

    @classmethod
    def read(cls, src: PythonSource) -> ModuleValues:
        values = cls(src)
        for node in src.bindings:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    values._assign(target, node.value)
            elif isinstance(node, ast.AnnAssign):
                values._assign(node.target, node.value)
            elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.withitem |
                            ast.NamedExpr | ast.comprehension):
                bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
                if bound is not None:
                    values._assign(bound, None)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                values._parameters(node.args)
        for call in src.calls_named("add_argument"):
            dest = _argparse_dest(call)
            if dest:
                values.option_calls.setdefault(dest, []).append(call)
        return values

    def with_defaults(self) -> ModuleValues:
        """The same module for a run that passes no options and calls with no arguments."""
        return ModuleValues(self.src, True, self.assigned, self.items, self.parameters,
                            self.option_calls)

    def _assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._assign(element.value if isinstance(element, ast.Starred) else element,
                             None)
            return
        if isinstance(target, ast.Subscript):  # `state["args"] = args`: an item of `state`
            base = dotted(target.value)
            if base and value is not None:
                self.items.setdefault(base, []).append(value)
            return
        name = dotted(target)
        if name:
            self.assigned.setdefault(name, []).append(value)

    def _parameters(self, args: ast.arguments) -> None:
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = \
            [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in [*zip(positional, defaults, strict=True),
                             *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
            self.parameters.setdefault(arg.arg, []).append(default)

    def _bound(self, name: str) -> list[ast.expr | None]:
        """What `name` is set to: its assignments, and per parameter of that name its
        default, and None (anything) unless only defaults count and it has one."""
        found = list(self.assigned.get(name, []))
        for default in self.parameters.get(name, []):
            if default is None or not self.defaults:
                found.append(None)  # a caller may pass anything
            if default is not None:
                found.append(default)
        return found

    def option(self, dest: str) -> Values | None:
        """What `args.<dest>` holds after `parse_args()`, when an option sets it."""
        if dest not in self._options and dest in self.option_calls:
            out = Values(complete=True)
            for call in self.option_calls[dest]:
                out = out | self._option(call)
            self._options[dest] = out
        return self._options.get(dest)

    def _option(self, call: ast.Call) -> Values:
        """What an argparse option can hold after `parse_args()`."""
        action = keyword(call, "action")
        kind = action.value.value if action is not None and \
            isinstance(action.value, ast.Constant) else None
        if kind in ("store_true", "store_false"):
            return Values(frozenset({kind == "store_false"}), True) if self.defaults else BOOLS
        default = keyword(call, "default")
        seen = self.evaluate(default.value) if default is not None else \
            Values(frozenset({None}), True)
        if self.defaults:
            return seen
        choices = keyword(call, "choices")
        if choices is None:
            return Values(seen.items, False)
        return seen | self._elements(choices.value)

    def _elements(self, node: ast.expr) -> Values:
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            out = Values(complete=True)
            for element in node.elts:
                out = out | self.evaluate(element)
            return out
        if isinstance(node, ast.Dict):
            return self._elements(ast.List([k for k in node.keys if k is not None]))
        if isinstance(node, ast.Name):
            found = self.assigned.get(node.id, [])
            if len(found) == 1 and found[0] is not None:
                return self._elements(found[0])
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            if isinstance(node.func, ast.Name) and node.func.id in ("sorted", "list", "tuple",
                                                                    "set"):
                return self._elements(node.args[0])  # `choices=sorted(DTYPES)`
            if isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
                return self._elements(node.func.value)
        return UNKNOWN

    # --- evaluation ---------------------------------------------------------------------------

    def evaluate(self, node: ast.expr | None, world: Mapping[str, object] | None = None,
                 depth: int = 0) -> Values:
        """The values `node` can take, with the names of `world` fixed to one value each."""
        if node is None or depth > MAX_DEPTH:
            return UNKNOWN
        world = world or {}
        if isinstance(node, ast.Constant):
            return Values(frozenset({node.value}), True)
        qualname = self.src.qualname(node)
        if qualname and qualname.startswith("torch.") and qualname.count(".") == 1:
            return Values(frozenset({TorchDtype(qualname[6:])}), True)
        if isinstance(node, ast.Name | ast.Attribute):
            return self._name(node, world, depth)
        if isinstance(node, ast.IfExp):
            test = self.evaluate(node.test, world, depth + 1)
            if test.only(True):
                return self.evaluate(node.body, world, depth + 1)
            if test.only(False):
                return self.evaluate(node.orelse, world, depth + 1)
            return self.evaluate(node.body, world, depth + 1) | \
                self.evaluate(node.orelse, world, depth + 1)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node, world, depth)
        if isinstance(node, ast.BoolOp):
            return self._boolean(node, world, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.evaluate(node.operand, world, depth + 1)
            return Values(frozenset(not v for v in inner.items), inner.complete)
        if isinstance(node, ast.Subscript):
            return self._lookup(node, world, depth)
        if isinstance(node, ast.Call):
            return self._call(node, world, depth)
        return UNKNOWN

    def _name(self, node: ast.Name | ast.Attribute, world: Mapping[str, object],
              depth: int) -> Values:
        name = dotted(node)
        if name is None:
            return UNKNOWN
        if name in world:
            return Values(frozenset({world[name]}), True)
        cacheable = not world
        if cacheable and name in self._cache:
            return self._cache[name]
        if cacheable:
            self._cache[name] = UNKNOWN  # a name that leads back to itself adds nothing
        found = self._bound(name)
        out: Values | None = None
        if found:
            out = Values(complete=True)
            for value in found:
                out = out | (self.evaluate(value, world, depth + 1) if value is not None
                             else UNKNOWN)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            out = self.option(node.attr)  # `args.dtype` after parse_args()
        result = out if out is not None else UNKNOWN
        if cacheable:
            self._cache[name] = result
        return result

    def _compare(self, node: ast.Compare, world: Mapping[str, object], depth: int) -> Values:
        op = _COMPARE.get(type(node.ops[0]))
        left = self.evaluate(node.left, world, depth + 1)
        right_node = node.comparators[0]
        right = self._elements(right_node) if isinstance(node.ops[0], ast.In | ast.NotIn) \
            else self.evaluate(right_node, world, depth + 1)
        if op is None or not (left.complete and right.complete) or not right.items:
            return Values(BOOLS.items, False)
        if isinstance(node.ops[0], ast.In | ast.NotIn):
            container = frozenset(right.items)
            return Values(frozenset(op(v, container) for v in left.items), True)
        outcomes = set()
        for a in left.items:
            for b in right.items:
                try:
                    outcomes.add(bool(op(a, b)))
                except TypeError:
                    return Values(BOOLS.items, False)
        return Values(frozenset(outcomes), True)

    def _boolean(self, node: ast.BoolOp, world: Mapping[str, object], depth: int) -> Values:
        parts = [self.evaluate(v, world, depth + 1) for v in node.values]
        if not all(p.complete and p.items <= {True, False} for p in parts):
            return Values(BOOLS.items, False)
        combine = all if isinstance(node.op, ast.And) else any
        outcomes: set[object] = {False, True}
        if all(len(p.items) == 1 for p in parts):
            outcomes = {combine(next(iter(p.items)) for p in parts)}
        elif combine is all and any(p.items == {False} for p in parts):
            outcomes = {False}
        elif combine is any and any(p.items == {True} for p in parts):
            outcomes = {True}
        return Values(frozenset(outcomes), True)

    def _lookup(self, node: ast.Subscript, world: Mapping[str, object], depth: int) -> Values:
        """`{"float16": torch.float16, ...}[key]`, also through a name bound to the dict."""
        table = node.value
        if isinstance(table, ast.Name):
            found = self.assigned.get(table.id, [])
            table = found[0] if len(found) == 1 and found[0] is not None else table
        if not isinstance(table, ast.Dict):
            return UNKNOWN
        key = self.evaluate(node.slice, world, depth + 1)
        out = Values(complete=True)
        for k, v in zip(table.keys, table.values, strict=True):
            if k is None:
                return UNKNOWN
            known = self.evaluate(k, world, depth + 1)
            if not key.complete or not known.complete or key.items & known.items:
                out = out | self.evaluate(v, world, depth + 1)
        return out

    def _call(self, node: ast.Call, world: Mapping[str, object], depth: int) -> Values:
        """`getattr(torch, name)`: the dtype each string names."""
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                len(node.args) == 2 and self.src.qualname(node.args[0]) == "torch":
            names = self.evaluate(node.args[1], world, depth + 1)
            return Values(frozenset(TorchDtype(n) for n in names.items if isinstance(n, str)),
                          names.complete and all(isinstance(n, str) for n in names.items))
        return UNKNOWN

    # --- worlds -------------------------------------------------------------------------------

    def reachable(self, node: ast.AST, world: Mapping[str, object]) -> bool:
        """False when a conditional around `node` (within its statement: `a if test else
        b`, or an enclosing `if`) takes the other branch in `world`."""
        parents = self.src.parents
        while node in parents and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parent = parents[node]
            if isinstance(parent, ast.IfExp | ast.If) and node is not parent.test:
                test = self.evaluate(parent.test, world)
                in_body = node is parent.body or (isinstance(parent.body, list) and
                                                  node in parent.body)
                if test.only(not in_body):
                    return False
            node = parent
        return True

    def choices(self, *nodes: ast.expr | None) -> Iterator[dict[str, object]]:
        """One world per value of each name the expressions read that can take more than one
        value (or whose list of values is open), then the empty world."""
        names = self.names_read(*nodes)
        tried = 0
        for name in reversed(names):  # the choices furthest back (the options) first
            seen = self._name(_reference(name), {}, 0)
            if len(seen.items) < 2 and seen.complete:
                continue
            for value in sorted(seen.items, key=repr):
                tried += 1
                if tried > MAX_WORLDS:
                    break
                yield {name: value}
        yield {}

    def names_read(self, *nodes: ast.expr | None) -> dict[str, None]:
        """The names the expressions read, through the assignments of those names, in the
        order met (a dict used as an ordered set)."""
        names: dict[str, None] = {}
        for node in nodes:
            if node is not None:
                self._names_read(node, names, 0)
        return names

    def _names_read(self, node: ast.expr, names: dict[str, None], depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for child in ast.walk(node):
            if isinstance(child, ast.Name | ast.Attribute):
                name = dotted(child)
                if name is None or name in names or self.src.qualname(child):
                    continue
                names[name] = None
                for value in self._bound(name):
                    if value is not None:
                        self._names_read(value, names, depth + 1)


def _reference(name: str) -> ast.Name | ast.Attribute:
    """The expression a dotted name stands for."""
    first, *rest = name.split(".")
    node: ast.Name | ast.Attribute = ast.Name(first)
    for part in rest:
        node = ast.Attribute(node, part)
    return node


def shown(value: object) -> str:
    """A value as the script writes it: `'float16'`, `torch.float16`, `True`."""
    return f"torch.{value.name}" if isinstance(value, TorchDtype) else repr(value)


def is_fp16(value: object) -> bool:
    return isinstance(value, TorchDtype) and value.name in FP16_NAMES


_VALUES: WeakKeyDictionary[PythonSource, ModuleValues] = WeakKeyDictionary()
_DEFAULTS: WeakKeyDictionary[PythonSource, ModuleValues] = WeakKeyDictionary()


def module_values(src: PythonSource) -> ModuleValues:
    """The module's analysis, built once per parsed script and shared by the checks."""
    found = _VALUES.get(src)
    if found is None:
        found = _VALUES[src] = ModuleValues.read(src)
    return found


def default_values(src: PythonSource) -> ModuleValues:
    """The same analysis for a run that passes no options: what the script does by default."""
    found = _DEFAULTS.get(src)
    if found is None:
        found = _DEFAULTS[src] = module_values(src).with_defaults()
    return found

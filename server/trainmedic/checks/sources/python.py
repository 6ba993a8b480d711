"""A parsed Python script: the `ast` tree with an index the checks share, and edit helpers.

Edits are computed from `tokenize` tokens rather than by printing a new tree, so the rest of
the line - spacing, parentheses, comments - stays as the user wrote it.
"""

from __future__ import annotations

import ast
import io
import tokenize
from bisect import bisect_left
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from trainmedic.checks.findings import NEWLINES, CheckError, Position, Range, TextEdit, split_lines

Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Nodes that bind names (assignments, loop and `with` targets, function parameters).
_BINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem,
          ast.NamedExpr, ast.comprehension, ast.FunctionDef, ast.AsyncFunctionDef)
_SKIP = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                   tokenize.DEDENT})


@dataclass(frozen=True)
class Tokens:
    """Significant tokens of a stretch of lines (no comments, newlines or indentation)."""

    items: list[tokenize.TokenInfo]
    starts: list[Position]
    spans: list[Range]

    @classmethod
    def read(cls, text: str, first_line: int) -> Tokens:
        items = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                 if t.type not in _SKIP]
        spans = [Range(Position(t.start[0] - 1 + first_line, t.start[1]),
                       Position(t.end[0] - 1 + first_line, t.end[1])) for t in items]
        return cls(items, [s.start for s in spans], spans)

    def at_or_after(self, pos: Position) -> int:
        return bisect_left(self.starts, pos)

    def string(self, index: int) -> str:
        """The token's text; "" past either end."""
        return self.items[index].string if 0 <= index < len(self.items) else ""


def dotted(node: ast.expr) -> str | None:
    """`scaler`, `self.scaler`: the text of a plain name or attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def reference(node: ast.expr) -> str | None:
    """`dotted`, also through constant or plain-name subscripts: `self.scalers["gen"]`."""
    if isinstance(node, ast.Subscript):
        base = reference(node.value)
        index = node.slice
        if base and (isinstance(index, ast.Constant) or dotted(index)):
            return f"{base}[{ast.unparse(index)}]"
        return None
    return dotted(node)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def argument(call: ast.Call, name: str, index: int | None) -> ast.expr | None:
    """The argument bound to parameter `name` (keyword, or positional at `index`)."""
    found = keyword(call, name)
    if found is not None:
        return found.value
    if index is not None and index < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    return any(k.arg is None for k in call.keywords)


def literal(node: ast.expr | None) -> object:
    """The value of a constant expression (`-1`, `2**16`, `1e6` included), else `...`."""
    if node is None:
        return ...
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, power = literal(node.left), literal(node.right)
            if isinstance(base, int | float) and isinstance(power, int) and 0 <= power < 64:
                return base ** power
        return ...


def method(call: ast.Call) -> tuple[ast.expr, str] | None:
    """(receiver, name) for `receiver.name(...)`."""
    if isinstance(call.func, ast.Attribute):
        return call.func.value, call.func.attr
    return None


@dataclass(eq=False)
class PythonSource:
    """One script: its text, lines, tree, and the index every check reads."""

    path: str
    text: str
    lines: list[str]
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    scopes: dict[ast.AST, Scope] = field(default_factory=dict)
    import_froms: list[ast.ImportFrom] = field(default_factory=list)
    bindings: list[ast.AST] = field(default_factory=list)  # what binds names: see _BINDS
    _windows: dict[tuple[int, int], Tokens] = field(default_factory=dict)
    _names: dict[ast.expr, str | None] = field(default_factory=dict)

    @classmethod
    def parse(cls, path: str, text: str) -> PythonSource:
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as error:
            line = max((error.lineno or 1) - 1, 0)
            raise CheckError(f"{error.msg} (line {line + 1})", line,
                             max((error.offset or 1) - 1, 0)) from None
        except (ValueError, RecursionError, MemoryError) as error:
            raise CheckError(f"cannot parse: {error}") from None
        src = cls(path, text, split_lines(text), tree)
        src._index()
        return src

    def _index(self) -> None:
        stack: list[tuple[ast.AST, Scope]] = [(self.tree, self.tree)]
        while stack:
            node, scope = stack.pop()
            inner = node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else scope
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
                stack.append((child, inner))
            if isinstance(node, ast.Call):
                self.calls.append(node)
                self.scopes[node] = scope
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.import_froms.append(node)
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, _BINDS):
                self.bindings.append(node)
        self.calls.sort(key=lambda c: (c.lineno, c.col_offset))
        self.import_froms.sort(key=lambda s: s.lineno)

    # --- names ------------------------------------------------------------------------------

    def qualname(self, node: ast.expr) -> str | None:
        """The imported name an expression refers to: `nn.utils.clip_grad_norm_` →
        `torch.nn.utils.clip_grad_norm_` after `import torch.nn as nn`."""
        if node in self._names:
            return self._names[node]
        name = None
        if isinstance(node, ast.Name):
            name = self.imports.get(node.id)
        elif isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            name = f"{base}.{node.attr}" if base else None
        self._names[node] = name
        return name

    def calls_to(self, names: Collection[str]) -> Iterator[ast.Call]:
        return (c for c in self.calls if self.qualname(c.func) in names)

    def calls_named(self, name: str) -> list[ast.Call]:
        """Every call of a function or method called `name` (`f(...)`, `obj.f(...)`)."""
        return self._calls_by_name.get(name, [])

    @cached_property
    def _calls_by_name(self) -> dict[str, list[ast.Call]]:
        found: dict[str, list[ast.Call]] = {}
        for call in self.calls:
            func = call.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else None
            if name:
                found.setdefault(name, []).append(call)
        return found

    def alias_of(self, module: str) -> str | None:
        """The local name bound to `module` (`torch`, or `T` after `import torch as T`)."""
        return next((name for name, target in self.imports.items() if target == module), None)

    # --- structure --------------------------------------------------------------------------

    def statement(self, node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def scope_of(self, node: ast.AST) -> Scope:
        """The function whose body holds `node`, or the module."""
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return self.tree

    def loop_of(self, node: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
        """The innermost loop around `node` within its function."""
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, _LOOPS):
                return node
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                return None
        return None

    def in_fallback(self, node: ast.AST) -> bool:
        """`node` is compatibility code for another library version: in a `try` that
        catches ImportError or AttributeError (body or handler), under an `if` that tests
        `hasattr(...)` or a `__version__`, or after such an `if` that returns."""
        while node in self.parents:
            parent = self.parents[node]
            if isinstance(parent, ast.Try) and any(_catches_missing(h) for h in
                                                   parent.handlers):
                return True
            if isinstance(parent, ast.If) and node is not parent.test and \
                    _version_test(parent.test):
                return True
            if isinstance(node, ast.stmt) and _after_version_return(parent, node):
                return True
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                return False
            node = parent
        return False

    @staticmethod
    def inside(node: ast.expr | ast.stmt, outer: ast.stmt) -> bool:
        return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and \
            (node.end_lineno or 0, node.end_col_offset or 0) <= \
            (outer.end_lineno or 0, outer.end_col_offset or 0)

    # --- positions --------------------------------------------------------------------------

    def _char(self, lineno: int, byte_col: int) -> Position:
        line = self.lines[lineno - 1]
        if not line.isascii():
            byte_col = len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return Position(lineno - 1, byte_col)

    def start(self, node: ast.expr | ast.stmt | ast.keyword) -> Position:
        return self._char(node.lineno, node.col_offset)

    def end(self, node: ast.expr | ast.stmt | ast.keyword) -> Position:
        return self._char(node.end_lineno or node.lineno, node.end_col_offset or 0)

    def range(self, node: ast.expr | ast.stmt | ast.keyword) -> Range:
        return Range(self.start(node), self.end(node))

    def segment(self, node: ast.expr | ast.stmt | ast.keyword) -> str:
        start, end = self.start(node), self.end(node)
        if start.line == end.line:
            return self.lines[start.line][start.character:end.character]
        return self.newline.join([self.lines[start.line][start.character:],
                                  *self.lines[start.line + 1:end.line],
                                  self.lines[end.line][:end.character]])

    @cached_property
    def newline(self) -> str:
        match = NEWLINES.search(self.text)
        return match.group(0) if match else "\n"

    # --- tokens -----------------------------------------------------------------------------

    def tokens(self, node: ast.expr | ast.stmt | ast.keyword) -> Tokens:
        """The tokens of the statement around `node` (of its header, for a compound one):
        tokenizing the whole file for every fix would cost more than the checks."""
        stmt = node if isinstance(node, ast.stmt) else self.statement(node)
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        last = stmt.end_lineno or stmt.lineno
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            header = body[0].lineno - 1 if body[0].lineno > stmt.lineno else \
                body[0].end_lineno or body[0].lineno
            if (node.end_lineno or node.lineno) <= header:
                last = header
        key = (first, last)
        if key not in self._windows:
            text = self.newline.join(self.lines[first - 1:last]) + self.newline
            try:
                self._windows[key] = Tokens.read(text, first - 1)
            except (tokenize.TokenError, SyntaxError):
                self._windows[key] = Tokens.read(self.text, 0)
        return self._windows[key]

    def module_range(self, stmt: ast.ImportFrom) -> Range:
        """The dotted module name of `from a.b import c`."""
        tokens = self.tokens(stmt)
        first = tokens.at_or_after(self.start(stmt)) + 1
        last = first
        while tokens.string(last + 1) not in ("import", ""):
            last += 1
        return Range(tokens.spans[first].start, tokens.spans[last].end)

    def grouped_range(self, node: ast.expr) -> Range:
        """`node`'s range with the parentheses directly around it, when the node is the value
        of an attribute (`(loss / n).backward()`), where such parentheses only group."""
        tokens = self.tokens(node)
        start = tokens.at_or_after(self.start(node)) - 1
        end = tokens.at_or_after(self.end(node))
        if start >= 0 and tokens.string(start) == "(" and tokens.string(end) == ")":
            return Range(tokens.spans[start].start, tokens.spans[end].end)
        return self.range(node)

    def open_paren(self, call: ast.Call) -> int:
        """Index in `tokens(call)` of the `(` that opens `call`'s arguments."""
        tokens = self.tokens(call)
        index = tokens.at_or_after(self.end(call.func))
        while tokens.string(index) not in ("(", ""):
            index += 1
        return index

    def close_paren(self, call: ast.Call) -> int:
        end = self.end(call)
        return self.tokens(call).at_or_after(Position(end.line, end.character - 1))

    # --- edits ------------------------------------------------------------------------------

    def argument_start(self, call: ast.Call, index: int) -> Position:
        """Where positional argument `index` starts, before any parentheses around it."""
        tokens = self.tokens(call)
        if index == 0:
            return tokens.spans[self.open_paren(call) + 1].start
        token = tokens.at_or_after(self.end(call.args[index - 1]))
        while tokens.string(token) not in (",", ""):
            token += 1
        return tokens.spans[token + 1].start

    def insert_first_argument(self, call: ast.Call, text: str) -> TextEdit:
        """`f(a)` → `f(text, a)`; `f()` → `f(text)`; a first argument on its own line keeps it."""
        tokens = self.tokens(call)
        paren = self.open_paren(call)
        if tokens.string(paren + 1) == ")":
            at = tokens.spans[paren].end
            return TextEdit(Range(at, at), text)
        at = tokens.spans[paren + 1].start
        return TextEdit(Range(at, at), f"{text}, ")

    def append_argument(self, call: ast.Call, text: str) -> TextEdit:
        """`f(a)` → `f(a, text)`; with a trailing comma, a new line in the same style."""
        tokens = self.tokens(call)
        close = self.close_paren(call)
        before = tokens.string(close - 1)
        after = tokens.spans[close - 1].end
        if before == "(":
            return TextEdit(Range(after, after), text)
        if before == "," and after.line != tokens.spans[close].start.line:
            indent = _indent(self.lines[tokens.spans[close - 2].start.line])
            end = Position(after.line, len(self.lines[after.line]))
            return TextEdit(Range(end, end), f"{self.newline}{indent}{text},")
        if before == ",":
            return TextEdit(Range(after, after), f" {text}")
        return TextEdit(Range(after, after), f", {text}")

    def delete_keyword(self, kw: ast.keyword) -> TextEdit:
        """Remove `kw` and one comma; a keyword alone on its line goes with its line."""
        tokens = self.tokens(kw)
        start, end = self.start(kw), self.end(kw)
        nxt = tokens.at_or_after(end)
        prev = tokens.at_or_after(start) - 1
        if tokens.string(nxt) == ",":
            comma = tokens.spans[nxt]
            rest = self.lines[comma.end.line][comma.end.character:].strip()
            if not self.lines[start.line][:start.character].strip() and \
                    (not rest or rest.startswith("#")):
                return TextEdit(Range(Position(start.line, 0), Position(comma.end.line + 1, 0)),
                                "")
            if tokens.string(nxt + 1) != ")":
                return TextEdit(Range(start, tokens.spans[nxt + 1].start), "")
            end = comma.end
        if tokens.string(prev) == "(":
            return TextEdit(Range(start, end), "")
        return TextEdit(Range(tokens.spans[prev].start, end), "")

    def starts_line(self, stmt: ast.stmt) -> bool:
        start = self.start(stmt)
        return not self.lines[start.line][:start.character].strip()

    def alone_on_line(self, stmt: ast.stmt) -> bool:
        """The statement starts its first line and nothing but a comment follows it."""
        end = self.end(stmt)
        rest = self.lines[end.line][end.character:].strip()
        return self.starts_line(stmt) and (not rest or rest.startswith("#"))

    def insert_line_after(self, stmt: ast.stmt, code: str) -> TextEdit:
        indent = _indent(self.lines[self.start(stmt).line])
        end_line = self.end(stmt).line
        if end_line + 1 < len(self.lines):
            at = Position(end_line + 1, 0)
            return TextEdit(Range(at, at), f"{indent}{code}{self.newline}")
        at = Position(end_line, len(self.lines[end_line]))
        return TextEdit(Range(at, at), f"{self.newline}{indent}{code}")

    def insert_line_before(self, stmt: ast.stmt, code: str) -> TextEdit:
        line = self.start(stmt).line
        at = Position(line, 0)
        return TextEdit(Range(at, at), f"{_indent(self.lines[line])}{code}{self.newline}")

    def delete_lines(self, stmt: ast.stmt) -> TextEdit:
        start, end = self.start(stmt).line, self.end(stmt).line
        return TextEdit(Range(Position(start, 0), Position(end + 1, 0)), "")


_MISSING = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def _catches_missing(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _MISSING for k in kinds if k is not None)


MAX_SIBLINGS = 50  # how far back a block is searched for an early-returning version test


def _after_version_return(parent: ast.AST, stmt: ast.stmt) -> bool:
    """`stmt` follows `if hasattr(torch, "new"): return new()` in its block."""
    block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse"))
                  if isinstance(b, list) and stmt in b), None)
    if block is None:
        return False
    index = block.index(stmt)
    return any(isinstance(s, ast.If) and _version_test(s.test) and s.body and
               isinstance(s.body[-1], ast.Return | ast.Raise)
               for s in block[max(index - MAX_SIBLINGS, 0):index])


def _version_test(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "hasattr":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "__version__":
            return True
        if isinstance(node, ast.Name) and "version" in node.id.lower():
            return True
    return False


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]

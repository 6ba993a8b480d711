"""TM112: NCCL watchdog settings under their deprecated environment names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, Position, Range, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.config import ConfigDocument
from trainmedic.checks.sources.python import PythonSource, method
from trainmedic.checks.sources.shell import ShellScript

DEPRECATED = ("NCCL_BLOCKING_WAIT", "NCCL_ASYNC_ERROR_HANDLING")
_SHELL = re.compile(rf"(?<![\w$])({'|'.join(DEPRECATED)})=")
_SETTERS = ("setdefault", "putenv", "__setitem__")


class DeprecatedNcclEnv(Check):
    """`NCCL_BLOCKING_WAIT` / `NCCL_ASYNC_ERROR_HANDLING` are deprecated names.

    ## What it does
    Finds the two names being set: `os.environ[...] = ...`, `os.environ.setdefault`,
    `os.putenv`, `os.environ.update(...)`, dictionary keys of an environment passed on,
    `export NAME=...` and `NAME=... cmd` in launch scripts, and environment entries in YAML.

    ## Why is this bad?
    PyTorch reads these settings as `TORCH_NCCL_BLOCKING_WAIT` and
    `TORCH_NCCL_ASYNC_ERROR_HANDLING`; the old names only work through a deprecation path
    that warns and will be dropped, at which point the job silently runs without the
    timeout handling it was configured for.

    ## Example
    ```sh
    export NCCL_ASYNC_ERROR_HANDLING=1
    ```

    ## Use instead
    ```sh
    export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
    ```

    ## Fix safety
    Safe: the same setting under the name PyTorch documents.
    """

    code = "TM112"
    rule_id = "nccl-timeout"
    name = "deprecated-nccl-env"

    def _finding(self, name: str, at: Position) -> CheckFinding:
        where = Range(at, Position(at.line, at.character + len(name)))
        return self.finding(where, f"{name} is deprecated: use TORCH_{name}",
                            [TextEdit(Range(at, at), "TORCH_")])

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        if not any(name in src.text for name in DEPRECATED):
            return
        for node in _set_names(src):
            if isinstance(node, ast.keyword):
                if node.arg in DEPRECATED:
                    yield self._finding(node.arg, src.start(node))
            elif isinstance(node.value, str) and node.value in DEPRECATED:
                start = src.start(node)
                offset = src.segment(node).find(node.value)
                if offset >= 0 and node.lineno == node.end_lineno:
                    yield self._finding(node.value,
                                        Position(start.line, start.character + offset))

    def shell(self, script: ShellScript) -> Iterator[CheckFinding]:
        for line, match in script.matches(_SHELL):
            yield self._finding(match.group(1), Position(line, match.start(1)))

    def config(self, doc: ConfigDocument) -> Iterator[CheckFinding]:
        for root in doc.roots:
            for node in root.walk():
                for key, key_range, value in node.entries:
                    where = key_range if key in DEPRECATED else value.range if \
                        key == "name" and value.value in DEPRECATED else None
                    name = key if key in DEPRECATED else str(value.value)
                    at = doc.find_word(where, name) if where is not None else None
                    if at is not None:
                        yield self._finding(name, at)


def _set_names(src: PythonSource) -> Iterator[ast.Constant | ast.keyword]:
    """String constants (and keywords) used as the name of an environment variable being
    set: subscript targets, dictionary keys, first arguments of setters."""
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.slice, ast.Constant):
            yield node.slice
        elif isinstance(node, ast.Dict):
            yield from (k for k in node.keys if isinstance(k, ast.Constant))
    for call in src.calls:
        _, name = method(call) or (None, "")
        if name in _SETTERS and call.args and isinstance(call.args[0], ast.Constant):
            yield call.args[0]
        elif name == "update":
            yield from call.keywords


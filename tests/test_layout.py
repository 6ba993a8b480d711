"""The package's folders are the pipeline: no import cycle, imports only forward along it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "trainmedic"

# Stages in data-flow order; a module may import its own stage and the ones before it. Before
# them all, what they share: the records they pass on, and what a run keeps for the next.
STAGES = ("model", "user_cache", "logs", "metrics", "catalogue", "matching", "events",
          "diagnosis", "render", "checks", "probes", "lsp", "agents", "cli", "__main__")


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module's imports of the package's modules, wherever they are written
    (`TYPE_CHECKING` blocks and function bodies included)."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                    + ([node.module] if node.module else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        found.add(f"{base}.{alias.name}")
                    elif base in modules:
                        found.add(base)
        graph[name] = found - {name}
    return graph


def _stage(module: str) -> int:
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 1 else -1


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def backwards(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} -> {target}" for module, targets in graph.items()
                  for target in targets if _stage(target) > _stage(module))


def test_no_import_cycle() -> None:
    assert not cycles(imports())


def test_imports_go_forward_along_the_pipeline() -> None:
    assert not backwards(imports())


def test_no_editor_feature_imports_another() -> None:
    # Each feature is applied on its own (lsp/features/__init__.py); what two share lives in
    # lsp/, beside them.
    features = "trainmedic.lsp.features."
    assert not {(name, other) for name, found in imports().items() if name.startswith(features)
                for other in found if other.startswith(features)}


def test_every_folder_is_a_stage() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert folders | modules <= set(STAGES)
    assert len(modules) <= 8


def test_the_checker_sees_cycles_and_backward_imports(tmp_path: Path) -> None:
    """A cycle through a function-level import, and a typing-only import pointing backwards."""
    package = tmp_path / "trainmedic"
    for folder in ("logs", "render"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "logs" / "reader.py").write_text("from typing import TYPE_CHECKING\n"
                                                "if TYPE_CHECKING:\n"
                                                "    from trainmedic.render import text\n")
    (package / "render" / "text.py").write_text("def f():\n"
                                                "    from trainmedic.logs import reader\n")
    graph = imports(package)
    assert cycles(graph) == [["trainmedic.logs.reader", "trainmedic.render.text"]]
    assert backwards(graph) == ["trainmedic.logs.reader -> trainmedic.render.text"]

"""Every library the package imports is declared, and the VSIX bundles what pyproject allows."""

from __future__ import annotations

import ast
import sys
from importlib.metadata import packages_distributions, version
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
BUNDLED = ROOT / "extension" / "bundled-requirements.txt"


def _requirements(lines: list[str]) -> dict[str, Requirement]:
    found = [Requirement(line) for line in lines]
    return {canonicalize_name(r.name): r for r in found}


RUNTIME = _requirements(PROJECT["dependencies"])
EXTRAS = {extra: _requirements(lines)
          for extra, lines in PROJECT["optional-dependencies"].items()}


def _third_party_imports(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        if "fixtures" in path.parts:  # scripts to check, never run
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"trainmedic"}


def _distributions(modules: set[str]) -> set[str]:
    owners = packages_distributions()
    return {canonicalize_name(owners[m][0]) for m in modules}


def test_every_imported_library_is_declared() -> None:
    package = ROOT / "server" / "trainmedic"
    probes = _distributions(_third_party_imports(package / "probes"))
    everything = _distributions(_third_party_imports(package))
    declared = set(RUNTIME).union(*(set(e) for e in EXTRAS.values()))
    assert sorted(everything - declared) == []
    assert sorted(probes - set(RUNTIME) - set(EXTRAS["probe"])) == []


def test_tests_import_only_declared_libraries() -> None:
    local = {path.stem for path in (ROOT / "tests").rglob("*.py")}
    modules = _third_party_imports(ROOT / "tests") - local
    declared = set(RUNTIME).union(*(set(e) for e in EXTRAS.values()))
    assert sorted(_distributions(modules) - declared) == []


def test_the_bundled_libraries_are_the_runtime_dependencies_at_allowed_versions() -> None:
    lines = [line.split("#")[0].strip() for line in BUNDLED.read_text("utf-8").splitlines()]
    pinned = _requirements([line for line in lines if line])
    assert set(RUNTIME) <= set(pinned)
    for name, requirement in RUNTIME.items():
        (spec,) = pinned[name].specifier
        assert spec.operator == "==", name
        assert requirement.specifier.contains(spec.version), (name, spec.version)


def test_the_tests_ran_on_the_bundled_versions() -> None:
    """What a user's editor runs is what this suite ran against."""
    lines = [line.split("#")[0].strip() for line in BUNDLED.read_text("utf-8").splitlines()]
    for name, requirement in _requirements([line for line in lines if line]).items():
        (spec,) = requirement.specifier
        if name in RUNTIME:
            assert version(name) == spec.version, name

"""The shared corpus and taxonomies beside the checkout, found in one place.

A test that needs them calls `need()`: outside CI their absence is a skip that says why; CI runs
beside them, so there it is a failure. Parametrised tests get one `missing` case instead of an
empty parameter set, so they cannot turn into a silent skip either.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
TAXONOMIES = (SHARED / "taxonomy.yaml", SHARED / "taxonomy-more.yaml")
MISSING = pytest.param(None, id="missing")


def need(path: Path | None) -> Path:
    """`path` when it exists; otherwise a skip outside CI and a failure under it."""
    if path is not None and path.exists():
        return path
    missing(f"the shared corpus and taxonomies are not beside this checkout ({SHARED})")


def missing(message: str) -> NoReturn:
    """Something a test needs is not here: outside CI a skip that says why; under CI, which
    sets everything up, a failure."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def labelled_folders() -> list[Path]:
    """Every corpus folder of failures: those with a `labels.yaml`, at any depth."""
    return sorted(labels.parent for labels in CORPUS.glob("**/labels.yaml"))


def labelled_cases() -> list[tuple[Path, dict[str, Any]]]:
    return [(folder / case["file"], case) for folder in labelled_folders()
            for case in yaml.safe_load((folder / "labels.yaml").read_text("utf-8"))]


def healthy_logs() -> list[Path]:
    """The runs that were fine: every log of a folder named `healthy` or `*-healthy`."""
    return sorted(p for p in CORPUS.glob("**/*.log")
                  if p.parent.name == "healthy" or p.parent.name.endswith("-healthy"))


def taxonomy() -> list[dict[str, Any]]:
    """The entries of every taxonomy file; each rule id of the catalogue's contract."""
    return [entry for path in TAXONOMIES if path.exists()
            for entry in yaml.safe_load(path.read_text("utf-8"))]


def case_id(value: object) -> str:
    return f"{value.parent.name}/{value.name}" if isinstance(value, Path) else ""

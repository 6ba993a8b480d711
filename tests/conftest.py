"""Shared options (`--update-golden` rewrites golden files from the current output) and
fixtures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden files from the current output (review the diff)")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 256-rank log of 6 MiB: step lines, tqdm bars, warnings, a CUDA OOM and its collateral."""
    path = tmp_path_factory.mktemp("big") / "job.log"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_log.py"), str(path), "6"],
                   check=True)
    return path

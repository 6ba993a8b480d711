"""Shared fixtures: the repository layout and the labelled corpus beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the labelled corpus is not beside this checkout ({CORPUS})")
    return CORPUS

"""Fixed scripts still train: every fixture marked "trainmedic-test: runs on CPU" is fixed
and then run for a few steps with the installed torch, in a fresh interpreter.

A fixture also marked "the original fails on torch >= 2.6" must fail as written there (the
fix is what makes it run), which shows the run reaches the code the fix changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.checks import fix_all, run_checks

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "checks"
MARK = "trainmedic-test: runs on CPU"
RUNNABLE = sorted(p for p in FIXTURES.glob("TM*/positive-*.py")
                  if ".fixed." not in p.name and MARK in p.read_text("utf-8"))
torch = pytest.importorskip("torch", reason="running fixed loops needs torch (CPU build)")
NEW_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 6)


def _run(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, str(script), "--steps", "3", "--out", str(cwd)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_there_are_runnable_fixtures_for_the_fixes() -> None:
    assert {p.parent.name for p in RUNNABLE} >= {"TM101", "TM104", "TM105", "TM106", "TM110"}


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixed_loop_trains_on_cpu(path: Path, tmp_path: Path) -> None:
    text = path.read_text("utf-8")
    fixed = fix_all(str(path), text)
    assert fixed != text
    assert path.parent.name not in {f.code for f in run_checks(str(path), fixed)}
    script = tmp_path / path.name
    script.write_text(fixed, "utf-8")
    done = _run(script, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    if NEW_TORCH and "the original fails on torch >= 2.6" in text:
        script.write_text(text, "utf-8")
        original = _run(script, tmp_path)
        assert original.returncode != 0
        # torch/serialization.py's message for a refused global
        assert "Weights only load failed" in original.stderr

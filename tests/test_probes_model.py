"""`trainmedic probe model`: each model-code error is raised for real, then its fix must work."""

from __future__ import annotations

import pytest

from trainmedic.cli import main

pytest.importorskip("torch")


def test_probe_model_shows_the_real_errors_and_fixes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "model"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out
    assert "mat1 and mat2 must have the same dtype, but got BFloat16 and Float" in out
    assert "torch.autocast(dtype=torch.bfloat16) works" in out
    assert "mat1 and mat2 shapes cannot be multiplied (4x8 and 16x32)" in out
    assert "The size of tensor a (3) must match the size of tensor b (5)" in out
    assert "modified by an inplace operation" in out
    assert "anomaly detection names the forward op: Error detected in" in out
    assert "Trying to backward through the graph a second time" in out
    assert "hidden = hidden.detach() each step fixes it" in out
    assert "a batch on another device fails" in out or "a CPU batch into a CUDA model" in out
    assert "x.to(next(model.parameters()).device) fixes it" in out

"""`trainmedic probe numerics`: finding the first NaN/Inf and an exploding gradient norm."""

from __future__ import annotations

import math

import pytest

from trainmedic.cli import main
from trainmedic.probes import numerics

torch = pytest.importorskip("torch")


def test_probe_runs_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "numerics"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out
    # PyTorch's own messages, as they appear in failing training logs
    assert "Function 'SqrtBackward0' returned nan values in its 0th output" in out
    assert "torch.sqrt(model(x) - 100.0)" in out                     # the forward line is named
    assert "first module with a non-finite output: 0 (Linear); the batch's non-finite rows: [2]" \
        in out
    assert "The total norm of order 2.0 for gradients from `parameters` is non-finite" in out
    assert f"PASS  lr={numerics.HIGH_LR} without clipping: grad norm" in out
    assert f"PASS  lr={numerics.LOW_LR} with clip_grad_norm_(max_norm=1.0): finite" in out


def test_high_lr_explodes_and_clipping_holds() -> None:
    norms, first_huge = numerics._train(torch, lr=numerics.HIGH_LR, clip=None)
    assert any(not math.isfinite(n) or n >= numerics.HUGE for n in norms)
    assert first_huge
    assert all(name.endswith(("weight", "bias")) for name in first_huge)
    norms, _ = numerics._train(torch, lr=numerics.LOW_LR, clip=1.0)
    assert len(norms) == numerics.STEPS
    assert all(math.isfinite(n) for n in norms)

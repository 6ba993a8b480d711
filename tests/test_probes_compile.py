"""`trainmedic probe compile`: recompile limit, static vs dynamic shapes, inductor on the CPU."""

from __future__ import annotations

import pytest

from trainmedic.cli import main
from trainmedic.probes import compile as compile_probe
from trainmedic.probes._torch import Report

torch = pytest.importorskip("torch")


def test_probe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "compile"])
    out = capsys.readouterr().out
    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") \
        else "cache_size_limit"
    assert f"torch._dynamo.config.{name} = " in out
    assert f"PASS  static shapes (12 input sizes, {name}=4): compiled 4 times" in out
    assert "PASS  dynamic=True: compiled 1 time(s) for all 12 sizes" in out
    if compile_probe._cxx_compiler()[0] is None:
        assert code == 1
        assert "FAIL  no working C++ compiler for inductor" in out
    else:
        assert code == 0, out
        assert "PASS  backend='inductor' compiled and ran a tiny function on the CPU" in out
    if not torch.cuda.is_available():
        assert "SKIP  GPU kernels (Triton): no GPU visible here" in out


def test_missing_compiler_is_reported(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(compile_probe, "_cxx_compiler",
                        lambda: (None, "InvalidCxxCompiler: No working C++ compiler found"))
    import torch._inductor.config  # the probe reads cpp.cxx from it

    report = Report()
    compile_probe._inductor_cpu(torch, report)
    out = capsys.readouterr().out
    assert report.code == 1
    assert "FAIL  no working C++ compiler for inductor" in out
    assert "InvalidCxxCompiler" in out

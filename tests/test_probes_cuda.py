"""`trainmedic probe cuda`: the CUDA stack check, its SKIPs without a GPU, device-assert triage."""

from __future__ import annotations

import types
import warnings
from typing import Any

import pytest

from trainmedic.cli import main
from trainmedic.probes import cuda
from trainmedic.probes._torch import Report

torch = pytest.importorskip("torch")


def test_probe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "cuda"])
    out = capsys.readouterr().out
    assert f"torch {torch.__version__}" in out
    assert "compiled GPU architectures:" in out
    # the CPU triage of the usual device-side asserts runs everywhere, with PyTorch's own messages
    assert "PASS  label 5 with 3 classes on the CPU raises IndexError: " \
           "Target 5 is out of bounds." in out
    assert "index out of range in self" in out
    assert "CUDA_LAUNCH_BLOCKING=1" in out
    assert "compute-sanitizer" in out
    if torch.cuda.is_available():
        assert "is covered by the compiled architectures" in out
        assert "cuBLAS" in out
        assert "cuDNN" in out
    else:
        assert code == 0
        assert "FAIL" not in out
        assert "SKIP  GPU architecture vs torch.cuda.get_arch_list() " \
               "(the no-kernel-image check)" in out


@pytest.mark.parametrize(("arch_list", "capability", "covered"), [
    (["sm_50", "sm_60", "sm_70", "sm_80", "sm_86", "sm_90"], (8, 6), True),
    (["sm_37", "sm_50", "sm_60", "sm_70"], (8, 6), False),    # RTX 3060 on an old build
    (["sm_80"], (8, 9), True),                                 # same major, newer minor
    (["sm_90"], (8, 6), False),                                # newer cubins, older GPU
    (["sm_80", "compute_80"], (12, 0), True),                  # PTX is JIT-compiled for newer GPUs
    (["sm_80", "sm_90"], (12, 0), False),                      # sm_120 without PTX: no kernel image
    ([], (8, 0), False),
])
def test_arch_supports(arch_list: list[str], capability: tuple[int, int], covered: bool) -> None:
    assert cuda._arch_supports(arch_list, *capability) is covered


def _fake_torch(cuda_version: str | None, warning: str | None) -> Any:
    def is_available() -> bool:
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=2)
        return False

    return types.SimpleNamespace(version=types.SimpleNamespace(cuda=cuda_version),
                                 cuda=types.SimpleNamespace(is_available=is_available))


def test_old_driver_fails(capsys: pytest.CaptureFixture[str]) -> None:
    report = Report()
    message = ("CUDA initialization: The NVIDIA driver on your system is too old (found version "
               "11040). Please update your GPU driver by downloading and installing a new version")
    assert cuda._driver_checks(_fake_torch("12.4", message), report) is False
    assert report.code == 1
    assert "FAIL  torch cannot initialize CUDA: CUDA initialization: The NVIDIA driver on " \
           "your system is too old (found version 11040)" in capsys.readouterr().out


def test_cpu_only_build_skips(capsys: pytest.CaptureFixture[str]) -> None:
    report = Report()
    assert cuda._driver_checks(_fake_torch(None, None), report) is False
    assert report.code == 0
    assert "SKIP  CPU-only torch build" in capsys.readouterr().out


def test_no_driver_skips(monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cuda, "DRIVER_PROC", cuda.Path("/nonexistent/nvidia/version"))
    monkeypatch.setattr(cuda.shutil, "which", lambda _name: None)
    report = Report()
    assert cuda._driver_checks(_fake_torch("12.4", None), report) is False
    assert report.code == 0
    assert "SKIP  no NVIDIA driver visible" in capsys.readouterr().out


def test_without_torch_one_line_names_the_interpreter(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from trainmedic.probes import _torch

    def no_torch(name: str) -> Any:
        raise ImportError(f"No module named '{name}'")

    monkeypatch.setattr(_torch.importlib, "import_module", no_torch)
    assert _torch.import_torch("the CUDA stack") is None
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"cannot check the CUDA stack: {sys.executable} has no torch")
    assert "python -m trainmedic" not in line  # trainmedic may not be installed there

"""`trainmedic probe memory`: host headroom everywhere, the GPU allocator where a GPU exists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from shared_files import CORPUS, need

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.probes import PROBES, memory
from trainmedic.probes._torch import Report

ROOT = Path(__file__).resolve().parents[1]
CORPUS_OOM = CORPUS / "real-a" / "022.log"


def test_registered() -> None:
    assert PROBES["memory"] is memory
    assert memory.SUMMARY


def test_runs_on_this_machine() -> None:
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-m", "trainmedic", "probe", "memory"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    out = result.stdout
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    assert "torch " in out
    assert "host RAM:" in out
    assert "memory headroom" in out
    assert "expandable_segments:" in out
    assert "DefaultCPUAllocator" in out
    # Either the GPU was inspected or the probe says plainly that none is visible.
    assert "GPU(s) visible" in out or "no GPU visible" in out
    for line in out.splitlines():
        assert line.startswith(("PASS  ", "FAIL  ", "SKIP  ", "      ")), line


def test_allocator_settings_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    settings = memory.allocator_settings()
    assert settings == {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"}
    assert memory.expandable_segments_on(settings)
    assert not memory.expandable_segments_on({"PYTORCH_ALLOC_CONF": "expandable_segments:False"})
    assert not memory.expandable_segments_on({})


def test_meminfo_style_lines_are_read_as_bytes() -> None:
    values = memory._keyed("MemTotal:       24683652 kB\nMemAvailable:   100 kB\noom_kill 3\n")
    assert values == {"MemTotal": 24683652 * 1024, "MemAvailable": 100 * 1024, "oom_kill": 3}


class _FakeOOM(Exception):
    pass


def _fake_torch(message: str) -> Any:
    """Just enough of torch.cuda for the GPU branch, with one 32 GiB device."""
    state = {"ooms": 0}
    total = 32 << 30

    def empty(size: int, **_: object) -> None:
        if size > total:
            state["ooms"] += 1
            raise _FakeOOM(message)

    cuda = SimpleNamespace(
        device_count=lambda: 1,
        get_allocator_backend=lambda: "native",
        mem_get_info=lambda index=0: (20 << 30, total),
        memory_stats=lambda index=0: {"num_ooms": state["ooms"], "num_alloc_retries": 0},
        memory_allocated=lambda index=0: 1 << 30,
        memory_reserved=lambda index=0: 2 << 30,
        get_device_name=lambda index=0: "Fake GPU",
        empty_cache=lambda: None,
        OutOfMemoryError=_FakeOOM,
    )
    return SimpleNamespace(cuda=cuda, OutOfMemoryError=_FakeOOM, empty=empty, uint8="uint8")


def test_gpu_branch_catches_the_oom_and_reads_its_figures(
        capsys: pytest.CaptureFixture[str]) -> None:
    message = need(CORPUS_OOM).read_text("utf-8").splitlines()[0].split(": ", 1)[1]
    report = Report()
    memory._gpu(report, _fake_torch(message))
    out = capsys.readouterr().out
    assert report.failed == 0, out
    assert "cuda:0 Fake GPU: 20.00 GiB free of 32.00 GiB" in out
    assert "1.00 GiB reserved but unallocated" in out
    assert "raises _FakeOOM and can be caught" in out
    assert "the allocator counted the OOM" in out
    assert "reports reserved-but-unallocated memory" in out


def test_the_host_allocation_message_is_one_the_catalogue_knows() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as caught:
        torch.empty(1 << 60, dtype=torch.uint8)
    text = f"RuntimeError: {caught.value}\n"
    found = [f.rule_id for f in diagnose_text(text, bundled()).findings]
    assert found[:1] == ["host-oom-killed"]


def test_the_new_variable_alone_is_flagged_on_torch_2_9(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")
    report = Report()
    memory._report_allocator_config(report, "2.9.1+cu128")
    assert report.failed == 1
    assert "PYTORCH_CUDA_ALLOC_CONF as well" in capsys.readouterr().out
    report = Report()
    memory._report_allocator_config(report, "2.13.0")
    assert report.failed == 0

"""`trainmedic probe dataloader`: a real 2-worker loader and the limits its workers live under."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.probes import PROBES, dataloader

ROOT = Path(__file__).resolve().parents[1]


def _probe(preexec: object = None, env: dict[str, str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainmedic", "probe", "dataloader"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
                          preexec_fn=preexec, env=env)  # type: ignore[arg-type]


def test_registered() -> None:
    assert PROBES["dataloader"] is dataloader
    assert dataloader.SUMMARY


def test_runs_a_real_loader_on_this_machine() -> None:
    pytest.importorskip("torch")
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    result = _probe(env=env)
    out = result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), out
    assert "PASS  2 workers delivered all 16 samples" in out
    assert "PASS  samples were built in worker processes" in out
    assert "PASS  batches reached the main process through shared memory" in out
    assert "PASS  tensor contents survived the trip intact" in out
    assert "tensor sharing strategy: file_descriptor" in out or "file_system" in out
    assert "TOKENIZERS_PARALLELISM=false" in out
    if Path("/dev/shm").is_dir():
        assert "/dev/shm: " in out
    for line in out.splitlines():
        assert line.startswith(("PASS  ", "FAIL  ", "SKIP  ", "      ")), line


@pytest.mark.skipif(sys.platform == "win32", reason="no RLIMIT_NOFILE on Windows")
def test_a_low_open_file_limit_fails_with_the_fix() -> None:
    pytest.importorskip("torch")
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip("the hard open-file limit is below 1024 here")

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    result = _probe(preexec=lower)
    assert result.returncode == 1, result.stdout
    assert "FAIL  open-file limit (ulimit -n) soft 1024" in result.stdout
    assert "set_sharing_strategy('file_system')" in result.stdout
    # The loader itself still works at 1024 with this small dataset.
    assert "PASS  2 workers delivered all 16 samples" in result.stdout


KILLED_WORKER = """
import os, signal, sys
from trainmedic.probes import dataloader


def killed(self, index):
    os.kill(os.getpid(), signal.SIGKILL)
    return index

dataloader.TinyDataset.__getitem__ = killed
sys.exit(dataloader.run())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL of a forked worker is POSIX-only")
def test_a_dead_worker_is_reported_not_raised() -> None:
    torch = pytest.importorskip("torch")
    if torch.multiprocessing.get_all_start_methods()[0] != "fork":
        pytest.skip("the patched dataset only reaches workers through fork")
    done = subprocess.run([sys.executable, "-u", "-c", KILLED_WORKER], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines()
              if line.startswith("FAIL  the DataLoader failed")]
    assert failed, done.stdout
    assert "is killed by signal: Killed" in failed[0] or "exited unexpectedly" in failed[0]
    # What the probe prints is what the catalogue diagnoses.
    found = [f.rule_id for f in diagnose_text(failed[0], bundled()).findings]
    assert found[:1] == ["dataloader-worker-crash"]

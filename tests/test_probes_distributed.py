"""`trainmedic probe distributed` and `probe port`: real processes, real sockets, loopback only."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.probes import port


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 that this test process is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def test_distributed_probe_runs_a_real_gloo_job(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    assert main(["probe", "distributed"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out
    assert "torch " in out
    assert "backends: gloo yes" in out
    assert "NCCL_DEBUG=INFO" in out                       # the environment is shown
    assert "rendezvous: a file store in a private temporary folder (no network" in out
    assert "PASS  gloo listens on 127.0.0.1 only" in out  # nothing on [::] or 0.0.0.0
    assert "PASS  rendezvous and gloo all_reduce across 2 processes: 1 + 2 = 3.0" in out
    assert "PASS  TORCH_DISTRIBUTED_DEBUG=DETAIL checks report mismatched collectives" in out
    assert "PASS  a collective that rank 1 skips fails with a timeout" in out
    assert "Timed out waiting 2000ms for recv operation" in out   # gloo's real message
    assert "SKIP" in out                                  # NCCL: checked or said why not


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_distributed_probe_binds_loopback_only_and_makes_no_dns_query(tmp_path: Path) -> None:
    """What the probe's processes ask the kernel for: every bind on 127.0.0.1 (or a local
    socket), no connect to port 53."""
    pytest.importorskip("torch")
    trace = tmp_path / "trace"
    done = subprocess.run(["strace", "-f", "-e", "trace=bind,connect", "-o", str(trace),
                           sys.executable, "-m", "trainmedic", "probe", "distributed"],
                          capture_output=True, text=True, timeout=120, check=False)
    if "PTRACE" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip("strace cannot trace here")
    assert done.returncode == 0, done.stdout[-2000:]
    calls = [line for line in trace.read_text().splitlines()
             if ("bind(" in line or "connect(" in line) and "sa_family=AF_INET" in line]
    assert calls  # gloo's own sockets, at least
    for call in calls:
        assert "htons(53)" not in call, call
        if "bind(" in call:
            assert 'inet_addr("127.0.0.1")' in call, call


def test_port_probe_passes_on_a_free_port(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        free = int(sock.getsockname()[1])
    monkeypatch.setenv("MASTER_PORT", str(free))
    assert main(["probe", "port"]) == 0
    assert f"PASS  port {free} is free on 127.0.0.1" in capsys.readouterr().out


def test_port_probe_names_the_holder_and_a_free_port(listener: int,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASTER_PORT", str(listener))
    assert main(["probe", "port"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL  port {listener} cannot be used on 127.0.0.1: already in use (EADDRINUSE)" in out
    assert "torchrun --master-port " in out
    if port.holders(listener):                            # /proc visible (Linux)
        assert f"held by pid {os.getpid()}:" in out


def test_port_probe_defaults_to_29500_and_rejects_garbage(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MASTER_PORT", raising=False)
    main(["probe", "port"])
    assert "port 29500" in capsys.readouterr().out
    monkeypatch.setenv("MASTER_PORT", "not-a-port")
    assert main(["probe", "port"]) == 1
    assert "is not a port number" in capsys.readouterr().out

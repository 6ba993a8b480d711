"""`trainmedic probe checkpoint`: a real save/load round trip and the errors of damaged files."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.probes import checkpoint
from trainmedic.probes._torch import Report

torch = pytest.importorskip("torch")


def test_probe_runs_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "checkpoint"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out
    assert "PASS  torch.load(..., weights_only=True) reads a state_dict checkpoint" in out
    assert "PASS  load_state_dict(strict=True): all keys matched" in out
    assert "size mismatch for 0.weight" in out                      # another width, real message
    assert "Unsupported global: GLOBAL argparse.Namespace" in out   # weights_only refusal
    assert "with safe_globals([argparse.Namespace]) it loads" in out
    assert "a copy cut in half (interrupted save or download) fails to load" in out
    assert "Unsupported operand 118" in out                          # the Git LFS pointer
    assert "zipfile's CRC check catches the damaged tensor bytes" in out
    assert " free of " in out                                        # free space was reported


def test_full_device_reports_enospc(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path(checkpoint.FULL_DEVICE).exists():
        pytest.skip("no /dev/full on this system")
    report = Report()
    checkpoint._full_device(report)
    out = capsys.readouterr().out
    assert report.code == 0
    assert "No space left on device" in out or "file write failed" in out \
        or "unexpected pos" in out


def test_low_free_space_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(checkpoint.shutil, "disk_usage",
                        lambda _path: usage(100 * checkpoint.GIB, 99.9 * checkpoint.GIB,
                                            checkpoint.GIB // 10))
    report = Report()
    checkpoint.check_free_space(report, [tmp_path])
    assert report.code == 1
    assert "the next checkpoint save will fail with ENOSPC" in capsys.readouterr().out


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "model.pt"
    checkpoint.save_atomically(torch, {"model": torch.nn.Linear(64, 64).state_dict()}, path)
    return path


def test_verify_file_accepts_a_good_checkpoint(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert checkpoint.run(str(_saved(tmp_path))) == 0
    out = capsys.readouterr().out
    assert "format: zip" in out
    assert "every record's CRC are intact" in out
    assert "top-level: model" in out


@pytest.mark.parametrize(("content", "expected"), [
    (lambda data: data[: len(data) // 2], "the file is damaged"),
    (lambda data: b"", "the file is empty"),
    (lambda data: checkpoint.LFS_POINTER, "Git LFS pointer"),
    (lambda data: b"<!DOCTYPE html>\n<html>", "web page"),
])
def test_verify_file_rejects_damaged_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           content, expected: str) -> None:  # type: ignore[no-untyped-def]
    good = _saved(tmp_path)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(content(good.read_bytes()))
    report = Report()
    checkpoint.verify_file(torch, report, bad)
    assert report.code == 1
    assert expected in capsys.readouterr().out


def test_verify_file_names_globals_to_allowlist(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    path = tmp_path / "args.pt"
    torch.save({"args": argparse.Namespace(lr=1.0)}, path)
    report = Report()
    checkpoint.verify_file(torch, report, path)
    assert report.code == 1
    assert "globals to allowlist: argparse.Namespace" in capsys.readouterr().out


def test_zip_crc_error_spots_zeroed_tensor_bytes(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    assert checkpoint.zip_crc_error(path) is None
    start, size = checkpoint._tensor_data_offset(path) or (0, 0)
    data = bytearray(path.read_bytes())
    data[start + size // 2: start + size // 2 + 8] = bytes(8)
    path.write_bytes(bytes(data))
    assert "CRC mismatch" in (checkpoint.zip_crc_error(path) or "")

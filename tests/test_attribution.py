"""The initiating rank on synthetic jobs of 8 to 1,024 ranks, in every prefix and layout."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import LAYOUTS, PREFIXES, Job, interleaved, per_rank_files

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose, diagnose_text
from trainmedic.model import RankStatus

CATALOGUE = bundled()
SIZES = (8, 64, 1024)


def failing_rank(ranks: int) -> int:
    return (ranks * 5) // 8 + 1  # neither 0 nor the last: a rank no baseline guesses by luck


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("ranks", SIZES)
def test_interleaved_root_cause(prefix: str, ranks: int) -> None:
    job = Job(ranks, failing_rank(ranks))
    diagnosis = diagnose_text(interleaved(job, prefix), CATALOGUE, "job.log")
    assert diagnosis.findings[0].rule_id == "amp-loss-scale"
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason
    assert diagnosis.ranks[job.failing].status is RankStatus.FAILED_FIRST
    collateral = [r for r, rep in diagnosis.ranks.items()
                  if rep.status is RankStatus.FAILED_COLLATERAL]
    assert len(collateral) == ranks - 1


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("ranks", SIZES)
def test_interleaved_hang_names_the_missing_rank(prefix: str, ranks: int) -> None:
    job = Job(ranks, failing_rank(ranks), hang=True)
    diagnosis = diagnose_text(interleaved(job, prefix), CATALOGUE, "job.log")
    assert not diagnosis.root_causes
    assert diagnosis.findings[0].rule_id == "nccl-timeout"
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("ranks", SIZES)
def test_per_rank_files(layout: str, ranks: int, tmp_path: Path) -> None:
    job = Job(ranks, failing_rank(ranks), seed=ranks)
    paths = per_rank_files(job, layout, tmp_path)
    streams = [(str(p), io.BytesIO(p.read_bytes())) for p in reversed(paths)]
    diagnosis = diagnose(streams, CATALOGUE)
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason


def test_cli_on_a_1024_rank_log_directory(tmp_path: Path) -> None:
    job = Job(1024, 700, seed=7)
    per_rank_files(job, "torchrun-log-dir", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "trainmedic", "diagnose", str(tmp_path), "--format", "json"],
        capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(done.stdout)
    assert result["initiating_rank"] == 700
    assert result["ranks"]["700"]["status"] == "failed-first"
    assert len(result["ranks"]) == 1024


def test_mixed_runs_and_clashing_ranks_warn_but_answer(tmp_path: Path) -> None:
    per_rank_files(Job(4, 2), "torchrun-log-dir", tmp_path / "run-a")
    per_rank_files(Job(4, 1, seed=3), "torchrun-log-dir", tmp_path / "run-b")
    (tmp_path / "run-b" / "job" / "attempt_0" / "3" / "stdout.log").write_bytes(b"\xff\xfe\0\0")
    done = subprocess.run(
        [sys.executable, "-m", "trainmedic", "diagnose", str(tmp_path), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "logs of 2 runs or restart attempts are mixed here" in done.stderr
    assert "rank 0, 1, 2, 3 appears in several files" in done.stderr
    assert "stdout.log: skipped (binary file)" in done.stderr
    assert json.loads(done.stdout)["diagnoses"][0]["rule_id"] == "amp-loss-scale"


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_real_torchrun_log_dir_with_error_files(capsys: pytest.CaptureFixture[str]) -> None:
    # torch 2.13.0, `torchrun --nproc-per-node 3 --log-dir ... --redirects 3` with @record;
    # rank 1 fed a bfloat16 batch into a float Linear, ranks 0 and 2 lost their peer.
    from trainmedic.cli import main

    assert main(["diagnose", str(FIXTURES / "torchrun-logdir"), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["initiating_rank"] == 1
    first = result["diagnoses"][0]
    assert first["rule_id"] == "dtype-mismatch"
    assert any(e["path"].endswith("attempt_0/1/error.json") for e in first["evidence"])
    assert {r: v["status"] for r, v in result["ranks"].items()} == {
        "0": "failed-collateral", "1": "failed-first", "2": "failed-collateral"}

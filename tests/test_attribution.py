"""The initiating rank on synthetic jobs of 8 to 1,024 ranks, in every prefix and layout."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import LAYOUTS, PREFIXES, Job, interleaved, per_rank_files

from trainmedic.catalogue import bundled
from trainmedic.engine import diagnose, diagnose_text
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

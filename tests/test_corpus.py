"""The labelled corpus of real logs: first diagnosis per log, and silence on healthy runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.inputs import opened

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
CATALOGUE = bundled()


def cases() -> list[tuple[Path, dict[str, Any]]]:
    return [(labels.parent / case["file"], case)
            for labels in sorted(CORPUS.glob("*/labels.yaml"))
            for case in yaml.safe_load(labels.read_text("utf-8"))]


def first_id(path: Path) -> str | None:
    with opened([str(path)]) as streams:
        diagnosis = diagnose(streams, CATALOGUE)
    return diagnosis.findings[0].rule_id if diagnosis.findings else None


FOUNDING = {"amp-loss-scale", "amp-bf16-vs-fp16"}


@pytest.mark.parametrize(
    ("path", "case"),
    [c for c in cases() if c[1]["expected"] in FOUNDING],
    ids=lambda v: v.name if isinstance(v, Path) else "",
)
def test_founding_entries_come_first(path: Path, case: dict[str, Any]) -> None:
    assert first_id(path) in {case["expected"], *(case.get("also_ok") or [])}


@pytest.mark.parametrize("path", sorted((CORPUS / "healthy").glob("*.log")), ids=lambda p: p.name)
def test_healthy_runs_have_no_root_cause(path: Path) -> None:
    with opened([str(path)]) as streams:
        assert diagnose(streams, CATALOGUE).root_causes == ()


def needs_corpus() -> None:
    """CI runs beside the labelled corpus and must find it; elsewhere its absence is a skip."""
    if not CORPUS.is_dir() and not os.environ.get("CI"):
        pytest.skip(f"the labelled corpus is not beside this checkout ({CORPUS})")


def test_corpus_is_present() -> None:
    needs_corpus()
    assert len(cases()) >= 60, f"expected the labelled corpus at {CORPUS}"


def test_first_diagnosis_accuracy_over_the_whole_corpus() -> None:
    needs_corpus()
    right = [first_id(path) in {case["expected"], *(case.get("also_ok") or [])}
             for path, case in cases()]
    assert sum(right) / len(right) >= 0.9, f"{sum(right)}/{len(right)}"


def test_initiating_rank_accuracy_on_labelled_multi_rank_logs() -> None:
    needs_corpus()
    labelled = [(path, case) for path, case in cases()
                if case.get("multi_rank") and case.get("initiating_rank") is not None]
    right = 0
    for path, case in labelled:
        with opened([str(path)]) as streams:
            right += diagnose(streams, CATALOGUE).initiating_rank == case["initiating_rank"]
    assert right / len(labelled) >= 0.95, f"{right}/{len(labelled)}"

"""The labelled corpus of real logs: first diagnosis per log, and silence on healthy runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from shared_files import (
    MISSING,
    case_id,
    healthy_logs,
    labelled_cases,
    labelled_folders,
    need,
)

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.inputs import opened
from trainmedic.logs.prefixes import FRAMES, Frame
from trainmedic.model import Basis, Diagnosis

CATALOGUE = bundled()
FOUNDING = {"amp-loss-scale", "amp-bf16-vs-fp16"}
FOLDER_ACCURACY = 0.9  # the first diagnosis, in every folder
UNCLAIMED = {Basis.ONLY_RANK_IN_INPUT, Basis.ALL_RANKS_ALIKE, Basis.UNDETERMINED}


def diagnosis_of(path: Path) -> Diagnosis:
    with opened([str(path)]) as streams:
        return diagnose(streams, CATALOGUE)


def first_id(path: Path) -> str | None:
    diagnosis = diagnosis_of(path)
    return diagnosis.findings[0].rule_id if diagnosis.findings else None


def accepted(case: dict[str, Any]) -> set[str]:
    return {case["expected"], *(case.get("also_ok") or [])}


def right_first(path: Path, case: dict[str, Any]) -> bool:
    """The first finding is the label's, or is the root cause the rank attribution fired
    (collective-hang, which labels written before it existed name by the symptom after it)."""
    ids = [f.rule_id for f in diagnosis_of(path).findings]
    via = len(ids) > 1 and CATALOGUE.by_id[ids[0]].attribution is not None
    return bool(ids) and (ids[0] in accepted(case) or (via and ids[1] in accepted(case)))


FOUNDING_CASES = [c for c in labelled_cases() if c[1]["expected"] in FOUNDING]


@pytest.mark.parametrize(("path", "case"),
                         FOUNDING_CASES or [pytest.param(None, {}, id="missing")], ids=case_id)
def test_founding_entries_come_first(path: Path | None, case: dict[str, Any]) -> None:
    """The two seed modes are right on every real log that shows them."""
    assert first_id(need(path)) in accepted(case)


@pytest.mark.parametrize("path", healthy_logs() or [MISSING], ids=case_id)
def test_healthy_runs_have_no_root_cause_and_nothing_unexplained(path: Path | None) -> None:
    diagnosis = diagnosis_of(need(path))
    assert diagnosis.root_causes == ()
    assert diagnosis.unexplained == ()
    assert diagnosis.unexplained_anomalies == ()


@pytest.mark.parametrize("folder", labelled_folders() or [MISSING], ids=lambda f: str(f.name)
                         if isinstance(f, Path) else "")
def test_first_diagnosis_accuracy_in_every_folder(folder: Path | None) -> None:
    where = need(folder)
    cases = [(path, case) for path, case in labelled_cases() if path.parent == where]
    right = [right_first(path, case) for path, case in cases]
    assert len(right) >= 10
    assert sum(right) / len(right) >= FOLDER_ACCURACY, f"{sum(right)}/{len(right)}"


def test_corpus_is_present() -> None:
    need(None if not labelled_folders() else labelled_folders()[0])
    assert len(labelled_cases()) >= 240


def test_initiating_rank_accuracy_on_labelled_multi_rank_logs() -> None:
    """On every folder: the rank of every log whose label settles it."""
    cases = labelled_cases()
    need(cases[0][0] if cases else None)
    labelled = [(path, case) for path, case in cases
                if case.get("multi_rank") and case.get("initiating_rank") is not None]
    right = sum(diagnosis_of(path).initiating_rank == case["initiating_rank"]
                for path, case in labelled)
    assert len(labelled) >= 30
    assert right / len(labelled) >= 0.95, f"{right}/{len(labelled)}"


def test_no_rank_is_claimed_where_the_label_settles_none() -> None:
    """On multi-rank logs labelled `initiating_rank: null`: no rank, or a basis that claims no
    order (only-rank-in-input, all-ranks-alike, undetermined)."""
    cases = labelled_cases()
    need(cases[0][0] if cases else None)
    unsettled = [path for path, case in cases
                 if case.get("multi_rank") and case.get("initiating_rank") is None]
    claims = [str(path) for path in unsettled
              if (d := diagnosis_of(path)).initiating_rank is not None
              and d.initiating_basis not in UNCLAIMED]
    assert len(unsettled) >= 30
    assert len(claims) / len(unsettled) <= 0.1, claims


def answers_changed(paths: list[Path], change: Callable[[str], str], folder: Path) -> list[str]:
    """The logs whose first finding or initiating rank `change` of their text changes (each
    changed copy is written to `folder`)."""
    changed = []
    for path in paths:
        copied = folder / path.name
        text = path.read_text("utf-8", errors="surrogateescape")
        copied.write_text(change(text), "utf-8", errors="surrogateescape")
        before, after = diagnosis_of(path), diagnosis_of(copied)
        if ([f.rule_id for f in before.findings[:1]], before.initiating_rank) != (
                [f.rule_id for f in after.findings[:1]], after.initiating_rank):
            changed.append(f"{path.parent.name}/{path.name}")
    return changed


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.tool)
def test_a_collector_frame_on_every_line_changes_no_answer(frame: Frame,
                                                           tmp_path: Path) -> None:
    """The labelled multi-rank logs, each line behind the frame a log collector puts there
    (kubectl, docker, CI runners, journald): the same first finding and initiating rank."""
    cases = labelled_cases()
    need(cases[0][0] if cases else None)
    head = frame.example[: frame.example.index("[rank3]: ")]
    settled = [path for path, case in cases
               if case.get("multi_rank") and case.get("initiating_rank") is not None]
    assert not answers_changed(
        settled, lambda text: "".join(head + line for line in text.splitlines(keepends=True)),
        tmp_path)


def as_a_web_page_hands_it_on(text: str) -> str:
    """`text` copied from a rendered page and a terminal: a no-break space after every colon,
    quotes typeset curly, and each run of four spaces a tab."""
    curly = re.sub(r"'([^'\n]{0,80})'", "\u2018\\1\u2019", text)
    curly = re.sub(r'"([^"\n]{0,80})"', "\u201c\\1\u201d", curly)
    return curly.replace(": ", ":\u00a0").replace("    ", "\t")


def test_a_log_copied_from_a_web_page_changes_no_answer(tmp_path: Path) -> None:
    """Every labelled log, handed on as a web page and a terminal's copy hand it on: the same
    first finding and initiating rank."""
    cases = labelled_cases()
    need(cases[0][0] if cases else None)
    assert not answers_changed([path for path, _ in cases], as_a_web_page_hands_it_on, tmp_path)

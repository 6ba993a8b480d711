"""Timestamps of the formats training tools print."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from trainmedic.logs.timestamps import Clock, read_stamp


def epoch(*parts: int, micro: int = 0) -> float:
    return datetime(*parts, microsecond=micro, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01 12:00:00,123 INFO [rank1] step", epoch(2024, 5, 1, 12, 0, 0, micro=123000)),
        ("2024-05-01T12:00:00.5Z boom", epoch(2024, 5, 1, 12, 0, 0, micro=500000)),
        ("2024-05-01T14:00:00+02:00 boom", epoch(2024, 5, 1, 12, 0, 0)),
        ("[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale]",
         epoch(2023, 6, 7, 22, 16, 0, micro=18000)),
        ("  time      : 2024-03-12_15:25:37", epoch(2024, 3, 12, 15, 25, 37)),
        ("1714564800.25 worker started", 1714564800.25),
    ],
)
def test_formats(text: str, expected: float) -> None:
    assert Clock().date(read_stamp(text)) == pytest.approx(expected)


def test_glog_takes_the_year_of_the_last_full_date() -> None:
    clock = Clock()
    clock.date(read_stamp("2026-11-29 18:16:25,461 INFO start"))
    glog = read_stamp("E1129 18:16:31.927000 7923 api.py:1002] failed")
    assert clock.date(glog) == pytest.approx(epoch(2026, 11, 29, 18, 16, 31, micro=927000))


def test_vllm_month_day() -> None:
    clock = Clock()
    clock.date(read_stamp("2025-07-21 00:00:00 boot"))
    assert clock.date(read_stamp("INFO 07-21 14:30:01 config.py:1020] ok")) == pytest.approx(
        epoch(2025, 7, 21, 14, 30, 1))


@pytest.mark.parametrize("text", [
    "step 10 loss 2.31", "{'epoch': 0.05}", "99-99 99:99:99 x",
    "id 12024-05-01 12:00:00 x", "v1-05-01 12:00:00 x", "run 307-21 14:30:01 x",
])
def test_no_timestamp(text: str) -> None:
    assert Clock().date(read_stamp(text)) is None


def test_an_event_line_takes_its_time_from_its_text_else_from_its_frame(tmp_path: Path) -> None:
    """Hit lines have their times read where their chunk is scanned (`events.scan.read_line`),
    a traceback's lines where they are folded: either way a line dated only by the frame a
    container runtime put before it takes that frame's time, and one with a time of its own
    keeps it, in a log read in one process or by workers."""
    from trainmedic.catalogue.load import bundled
    from trainmedic.diagnosis.engine import diagnose
    from trainmedic.logs.inputs import opened
    from trainmedic.matching.choice import matcher_for

    framed = "2024-05-12T15:51:49.5Z stderr F [rank3]: "
    log = tmp_path / "run.log"
    log.write_text(
        f"{framed}RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[rank1]:2024-05-12 15:51:50,250 - ERROR - RuntimeError: CUDA error: an illegal memory "
        "access was encountered\n" * 2, "utf-8")
    catalogue = bundled()
    for jobs in (1, 2):
        with opened([str(log)], None) as streams:
            found = diagnose(streams, catalogue, matcher_for(catalogue), jobs, None,
                             total_bytes=None)
        times = {line.rank: line.timestamp for finding in found.findings
                 for line in finding.evidence}
        assert times[3] == pytest.approx(epoch(2024, 5, 12, 15, 51, 49, micro=500000))
        assert times[1] == pytest.approx(epoch(2024, 5, 12, 15, 51, 50, micro=250000))

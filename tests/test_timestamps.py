"""Timestamps of the formats training tools print."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from trainmedic.logs.timestamps import Clock


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
    assert Clock().parse(text) == pytest.approx(expected)


def test_glog_takes_the_year_of_the_last_full_date() -> None:
    clock = Clock()
    clock.parse("2026-11-29 18:16:25,461 INFO start")
    assert clock.parse("E1129 18:16:31.927000 7923 api.py:1002] failed") == pytest.approx(
        epoch(2026, 11, 29, 18, 16, 31, micro=927000))


def test_vllm_month_day() -> None:
    clock = Clock()
    clock.parse("2025-07-21 00:00:00 boot")
    assert clock.parse("INFO 07-21 14:30:01 config.py:1020] ok") == pytest.approx(
        epoch(2025, 7, 21, 14, 30, 1))


@pytest.mark.parametrize("text", [
    "step 10 loss 2.31", "{'epoch': 0.05}", "99-99 99:99:99 x",
    "id 12024-05-01 12:00:00 x", "v1-05-01 12:00:00 x", "run 307-21 14:30:01 x",
])
def test_no_timestamp(text: str) -> None:
    assert Clock().parse(text) is None

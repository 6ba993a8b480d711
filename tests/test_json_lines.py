"""Logs of JSON records, one a line: read as the text the records hold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.logs.formats.json_lines import record_text, text_key
from trainmedic.model import Diagnosis

CATALOGUE = bundled()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fp16-loss-scale-4ranks.log"
TIME = "2024-05-12T15:51:49.420123456Z"


def docker(text: str) -> str:
    """`text` as Docker's json-file logging driver writes it (its documentation's example:
    `{"log":"Log line is here\\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}`)."""
    return "".join(json.dumps({"log": line, "stream": "stderr", "time": TIME}) + "\n"
                   for line in text.splitlines(keepends=True))


def answer(diagnosis: Diagnosis) -> tuple[object, ...]:
    return (diagnosis.initiating_rank, [f.rule_id for f in diagnosis.findings],
            [[line.number for line in f.evidence] for f in diagnosis.findings])


def test_a_docker_json_file_log_gets_the_answer_of_the_lines_it_holds_at_the_same_lines() -> None:
    plain = diagnose_text(EXAMPLE.read_text("utf-8"), CATALOGUE)
    wrapped = diagnose_text(docker(EXAMPLE.read_text("utf-8")), CATALOGUE)
    assert answer(wrapped) == answer(plain)
    assert plain.findings[0].rule_id == "amp-loss-scale"
    assert wrapped.findings[0].evidence[0].text.startswith(TIME + " ")  # as kubectl shows it


def test_a_record_holding_a_whole_traceback_is_read_as_its_lines() -> None:
    traceback = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
                 '    scaler.unscale_(optimizer)\n'
                 "ValueError: Attempting to unscale FP16 gradients.")  # torch/amp/grad_scaler.py
    records = "".join(json.dumps({"level": "ERROR", "message": text}) + "\n"
                      for text in ("starting", traceback, "exiting"))
    found = diagnose_text(records, CATALOGUE).findings
    assert found[0].rule_id == "amp-loss-scale"
    assert found[0].evidence[0].text == "ValueError: Attempting to unscale FP16 gradients."


def test_logs_that_are_not_records_of_text_are_left_alone() -> None:
    metrics = '{"loss": 1.43, "grad_norm": 3.48}\n{"loss": 2.23, "grad_norm": NaN}\n'
    assert text_key(metrics.encode()) is None  # JSON, but no text in it
    mixed = 'python train.py\n{"message": "a"}\n{"message": "b"}\n'
    assert text_key(mixed.encode()) is None
    assert text_key(b"{'loss': 2.0}\n{'loss': 1.0}\n") is None  # a Python dict's repr
    assert text_key(b'{"log": "a\\n"}\n{"log": "b\\n"}\n') == "log"
    assert record_text(b'{"log": "broken\n', "log") == b'{"log": "broken\n'
    nested = b'{"log": ' + b"[" * 100_000 + b"\n"  # deeper than Python's recursion goes
    assert record_text(nested, "log") == nested


def test_a_stream_of_records_on_standard_input_is_unwrapped() -> None:
    """Standard input cannot seek back: its first block is peeked at."""
    done = subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", "-", "--format",
                           "json", "--no-redact"], input=docker(EXAMPLE.read_text("utf-8")),
                          text=True, capture_output=True, cwd=ROOT, timeout=120, check=True)
    first = json.loads(done.stdout)["diagnoses"][0]
    assert first["rule_id"] == "amp-loss-scale"
    assert first["evidence"][0]["text"].startswith(TIME + " 2026-11-29 ")

"""`trainmedic watch`: a growing log is read once, and the answer comes as the cause appears."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from trainmedic.catalogue import bundled
from trainmedic.engine import Diagnoser
from trainmedic.watch import Follower

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fp16-loss-scale-4ranks.log"


def test_follower_reads_each_byte_once_and_survives_truncation(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    follower = Follower([str(log)], Diagnoser(bundled()))
    log.write_bytes(b"".join(lines[:50]))
    follower.poll()
    with log.open("ab") as f:
        f.write(b"".join(lines[50:]))
    follower.poll()
    assert follower.poll() == 0
    assert follower.bytes_read == EXAMPLE.stat().st_size
    diagnosis = follower.diagnoser.diagnosis()
    assert diagnosis.initiating_rank == 2
    log.write_bytes(b"restarted\n")
    assert follower.poll() == len(b"restarted\n")
    follower.close()


def test_watch_reports_when_the_root_cause_is_written(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if b"Minimum loss scale" in ln) - 40
    log.write_bytes(b"".join(lines[:20]))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "trainmedic", "watch", str(log), "--interval", "0.1",
         "--timeout", "120", "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    assert watcher.poll() is None  # nothing wrong yet: still watching
    with log.open("ab") as f:
        f.write(b"".join(lines[20:cut]))
        f.flush()
        time.sleep(0.5)
        f.write(b"".join(lines[cut:]))
    out, err = watcher.communicate(timeout=120)
    assert watcher.returncode == 1, err
    result = json.loads(out)
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    assert result["initiating_rank"] == 2


def test_watch_times_out_without_a_root_cause(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("step 1 loss=2.0\n")
    done = subprocess.run([sys.executable, "-m", "trainmedic", "watch", str(log),
                           "--interval", "0.1", "--timeout", "1"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert "No root cause found." in done.stdout

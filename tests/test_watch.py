"""`trainmedic watch`: a growing log is read once, and the answer comes as the cause appears."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.diagnosis.watch import Follower, GrowingFile

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
    restarted = (b"restarted\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 b"20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 3.06 GiB is free.\n")
    log.write_bytes(restarted)
    assert follower.poll() == len(restarted)
    oom = next(f for f in follower.diagnoser.diagnosis().findings if f.rule_id == "cuda-oom")
    assert [(line.path, line.number) for line in oom.evidence] == [(str(log), 2)]  # anew
    follower.close()


@pytest.mark.parametrize("name", ["node0.log.gz", "node0.log"])  # told by its bytes, not name
def test_a_compressed_log_in_a_watched_folder_is_read_whole_once(tmp_path: Path,
                                                                  name: str) -> None:
    import gzip

    (tmp_path / name).write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    follower = Follower([str(tmp_path)], Diagnoser(bundled()))
    follower.poll()
    follower.poll()
    diagnosis = follower.diagnoser.diagnosis()
    assert diagnosis.initiating_rank == 2
    found = next(f for f in diagnosis.findings if f.rule_id == "amp-loss-scale")
    assert len(found.evidence) == len(set(found.evidence))  # read once, not at every poll
    follower.close()


def test_a_rotated_or_rewritten_file_is_read_again(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"one\ntwo\n")
    file = GrowingFile(str(log))
    assert b"".join(file.read()) == b"one\ntwo\n"
    log.rename(tmp_path / "run.log.1")  # rotated: a new file, already longer than the old
    log.write_bytes(b"restart 1\nrestart 2\n")
    assert file.restart_if_rewritten()
    assert b"".join(file.read()) == b"restart 1\nrestart 2\n"
    log.write_bytes(b"RESTART 1\nrestart 2\nrestart 3\n")  # rewritten in place, longer
    assert file.restart_if_rewritten()
    assert b"".join(file.read()) == b"RESTART 1\nrestart 2\nrestart 3\n"
    with log.open("ab") as f:
        f.write(b"restart 4\n")
    assert not file.restart_if_rewritten()  # appended to: only the new bytes are read
    assert b"".join(file.read()) == b"restart 4\n"
    file.close()


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

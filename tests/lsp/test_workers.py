"""The server's worker processes: the answer of one process, not forked from the server, kept
between jobs, replaced when one dies, gone with the server."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lsp_helpers import process_runs

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.events import parallel
from trainmedic.logs.inputs import opened
from trainmedic.lsp.workers import Workers
from trainmedic.render.json import to_dict

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = bundled()
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the processes' parents from /proc")


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)  # six pieces for the six-chunk log
    kept = Workers(2)
    yield kept
    kept.shutdown()


def answer(log: Path, workers: Workers | None = None) -> dict[str, object]:
    with opened([str(log)]) as streams:
        if workers is None:
            return to_dict(diagnose(streams, CATALOGUE), CATALOGUE)
        with workers.job(CATALOGUE) as submit:
            return to_dict(diagnose(streams, CATALOGUE, jobs=workers.count, submit=submit),
                           CATALOGUE)


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_workers_give_the_answer_of_one_process_and_are_kept(big_log: Path,
                                                             workers: Workers) -> None:
    alone = answer(big_log)
    assert alone["diagnoses"][0]["rule_id"] == "cuda-oom"  # type: ignore[index]

    assert answer(big_log, workers) == alone
    started = {p.pid for p in multiprocessing.active_children()}
    assert answer(big_log, workers) == alone

    assert len(started) == 2
    assert {p.pid for p in multiprocessing.active_children()} == started  # kept, not restarted
    assert all(parent(pid) != os.getpid() for pid in started)  # not forked from this process


def test_a_small_log_starts_no_workers(workers: Workers) -> None:
    """A job hands the workers its first piece before they start (and its catalogue's file
    is written): a log below PARALLEL_MIN_BYTES, not dense with evidence, hands none."""
    log = ROOT / "examples" / "fp16-loss-scale-4ranks.log"
    with opened([str(log)]) as streams, workers.job(CATALOGUE) as submit:
        found = diagnose(streams, CATALOGUE, jobs=workers.count, submit=submit,
                         total_bytes=log.stat().st_size)
    assert found.findings[0].rule_id == "amp-loss-scale"
    assert not multiprocessing.active_children()
    assert workers._rules_folder is None  # type: ignore[attr-defined]


def test_a_worker_that_dies_fails_its_job_and_the_next_job_gets_new_ones(
        big_log: Path, workers: Workers) -> None:
    alone = answer(big_log)
    submit = workers.submitter(CATALOGUE)
    before = {p.pid for p in multiprocessing.active_children()}
    killed = set()

    def submit_then_kill(path: str, first: int, stop: int | None, folder: str) -> object:
        future = submit(path, first, stop, folder)
        if first == 0:  # the first piece's workers killed, as the out-of-memory killer would
            started = {p.pid for p in multiprocessing.active_children()} - before
            # All at once: one started for a later piece, while the pool breaks, would be left
            # waiting for pieces, and the exit waiting for it.
            assert len(started) == workers.count
            for pid in started:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        return future

    with opened([str(big_log)]) as streams, \
            pytest.raises(parallel.WorkerError, match="worker process died"):
        diagnose(streams, CATALOGUE, jobs=2, submit=submit_then_kill)  # type: ignore[arg-type]

    assert killed
    assert answer(big_log, workers) == alone
    assert not killed & {p.pid for p in multiprocessing.active_children()}


WORKERS_THEN_WAIT = """
import sys
from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.events import parallel
from trainmedic.logs.inputs import opened
from trainmedic.lsp.workers import Workers
import multiprocessing, time

parallel.PIECE_CHUNKS = 1
catalogue, workers = bundled(), Workers(2)
with opened([sys.argv[1]]) as streams:
    diagnose(streams, catalogue, jobs=2, submit=workers.submitter(catalogue))
print(*[p.pid for p in multiprocessing.active_children()], flush=True)
time.sleep(60)
"""


def test_workers_exit_when_their_server_is_killed(big_log: Path) -> None:
    server = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WORKERS_THEN_WAIT),
                               str(big_log)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    pids = [int(pid) for pid in server.stdout.readline().split()]
    assert len(pids) == 2
    assert all(process_runs(pid) for pid in pids)

    server.kill()
    server.wait()
    deadline = time.monotonic() + 10
    while any(process_runs(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if process_runs(pid)]


def test_idle_workers_stop_and_the_next_job_starts_new_ones(big_log: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)
    workers = Workers(2, idle_seconds=0.5)
    try:
        alone = answer(big_log)
        before = {p.pid for p in multiprocessing.active_children()}
        assert answer(big_log, workers) == alone
        started = {p.pid for p in multiprocessing.active_children()} - before
        assert len(started) == 2
        deadline = time.monotonic() + 30
        while started & {p.pid for p in multiprocessing.active_children()}:
            assert time.monotonic() < deadline, "idle workers still running"
            time.sleep(0.1)
        assert answer(big_log, workers) == alone  # new workers
    finally:
        workers.shutdown()


def test_a_piece_names_its_catalogue_and_does_not_carry_it(big_log: Path, workers: Workers,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces that carried the catalogue (hundreds of kilobytes each) could fill the pipe to
    the workers; a worker killed then left the pool's feeder blocked, and the server's exit
    hung. A piece is now a few hundred bytes, and the catalogue's file goes at shutdown."""
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    sent: list[int] = []
    real_submit = ProcessPoolExecutor.submit

    def measured(pool: ProcessPoolExecutor, *args: object) -> object:
        sent.append(len(pickle.dumps(args)))
        return real_submit(pool, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ProcessPoolExecutor, "submit", measured)
    assert answer(big_log, workers)["diagnoses"]
    assert len(pickle.dumps(CATALOGUE)) > 50_000
    assert len(sent) > 1
    assert max(sent) < 1_000
    folder = workers._rules_folder
    assert folder is not None
    assert len(os.listdir(folder)) == 1
    workers.shutdown()
    assert not os.path.exists(folder)

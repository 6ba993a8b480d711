"""Reading in parallel: the same chunks from any starting point, the same answer for any --jobs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose, scanner_for
from trainmedic.events import parallel
from trainmedic.logs.inputs import InputError, opened, total_size
from trainmedic.logs.reader import CHUNK_BYTES, Chunk, Chunker, read_chunks, read_part
from trainmedic.matching.choice import matcher_for
from trainmedic.render.json import to_dict

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = bundled()
SMALL = 64  # bytes per chunk in the reader tests, so a few lines span several chunks

lines = st.lists(st.text(st.sampled_from("ab \r\x1bé"), max_size=90), max_size=40)


def texts(chunks: list[Chunk]) -> list[tuple[int, str]]:
    return [(chunk.index, chunk.text) for chunk in chunks]


@settings(max_examples=200, deadline=None)
@given(lines, st.booleans(), st.lists(st.integers(1, 200), min_size=1, max_size=20))
def test_chunks_do_not_depend_on_how_bytes_arrive(body: list[str], newline_at_end: bool,
                                                   sizes: list[int]) -> None:
    data = "\n".join(body).encode() + (b"\n" if newline_at_end else b"")
    whole = list(read_chunks(io.BytesIO(data), "x.log", SMALL))
    chunker, fed, position = Chunker("x.log", chunk_bytes=SMALL), [], 0
    while position < len(data):
        size = sizes[len(fed) % len(sizes)]
        fed.extend(chunker.feed(data[position:position + size]))
        position += size
    if (last := chunker.flush()) is not None:
        fed.append(last)
    assert texts(fed) == texts(whole)
    assert all(chunk.text.endswith("\n") for chunk in whole)


@settings(max_examples=200, deadline=None)
@given(lines, st.integers(1, 6))
def test_parts_of_a_file_cut_the_chunks_a_whole_read_does(tmp_path_factory: pytest.TempPathFactory,
                                                          body: list[str], pieces: int) -> None:
    path = tmp_path_factory.mktemp("parts") / "x.log"
    data = "\n".join(body).encode()
    path.write_bytes(data)
    whole = list(read_chunks(io.BytesIO(data), str(path), SMALL))
    last = -(-len(data) // SMALL)
    bounds = sorted({0, *(last * i // pieces for i in range(1, pieces))})
    parts = [chunk for first, stop in zip(bounds, [*bounds[1:], None], strict=True)
             for chunk in read_part(str(path), first, stop, SMALL)]
    assert texts(parts) == texts(whole)


def test_a_part_reads_each_chunk_but_the_last_with_one_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.log"
    lines = (b"[rank%d]: step %d loss=2.5\n" % (i % 8, i) for i in range(80_000))
    path.write_bytes(b"".join(lines))  # 2 MB: more than a line may hold
    size = 1 << 14
    whole = list(read_chunks(path.open("rb"), str(path), size))
    fed: list[int] = []
    feed = Chunker.feed

    def counted(chunker: Chunker, data: bytes) -> list[Chunk]:
        fed.append(len(data))
        return feed(chunker, data)

    monkeypatch.setattr(Chunker, "feed", counted)
    assert texts(list(read_part(str(path), 0, None, size))) == texts(whole)
    assert len(whole) > 100
    assert sum(fed) < 2 * size  # the Chunker cut only the last: the file may still grow


def test_an_over_long_line_is_cut_the_same_from_any_start(tmp_path: Path) -> None:
    from trainmedic.logs.reader import MAX_LINE_BYTES

    path = tmp_path / "long.log"
    path.write_bytes(b"head\n" + b"x" * (3 * MAX_LINE_BYTES) + b"\nloss=nan tail\n")
    whole = list(read_chunks(path.open("rb"), str(path)))
    parts = [c for first in range(5) for c in read_part(str(path), first, first + 1)]
    assert texts(parts) == texts(whole)
    assert [len(c.text) for c in whole] == [5 + MAX_LINE_BYTES + 1, 14]


def answer(paths: list[str], jobs: int) -> dict[str, object]:
    with opened(paths) as streams:
        return to_dict(diagnose(streams, CATALOGUE, jobs=jobs), CATALOGUE)


_scan_piece = parallel._scan_piece
PIDS = "TRAINMEDIC_TEST_PIDS"


def _scan_noting_the_process(path: str, first: int, stop: int | None, folder: str) -> str:
    """A worker's scan that leaves its process id behind, slow enough that both workers work."""
    Path(os.environ[PIDS], f"{os.getpid()}-{first}").touch()
    time.sleep(0.1)
    return _scan_piece(path, first, stop, folder)


def test_any_number_of_jobs_gives_the_answer_of_one(big_log: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)  # six pieces for this six-chunk log
    alone = answer([str(big_log)], 1)
    # the near-certain OOM stays above the weaker fragmentation reading of the same line
    assert alone["diagnoses"][0]["rule_id"] == "cuda-oom"  # type: ignore[index]
    assert alone["initiating_rank"] == 137
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv(PIDS, str(pids))
    monkeypatch.setattr(parallel, "_scan_piece", _scan_noting_the_process)
    assert answer([str(big_log)], 2) == alone
    workers = {name.split("-")[0] for name in os.listdir(pids)}
    assert len(os.listdir(pids)) == -(-big_log.stat().st_size // CHUNK_BYTES)  # every piece,
    assert len(workers) == 2  # by two processes,
    assert str(os.getpid()) not in workers  # neither of them this one
    # Small files and an error file (read in this process) keep their place among the pieces.
    small = tmp_path / "rank-3.log"
    small.write_text("[rank3]: step 1 loss=2.5\n[rank3]: step 2 loss=2.4\n", "utf-8")
    error_file = ROOT / "tests/fixtures/torchrun-logdir/none__jjcm70d/attempt_0/1/error.json"
    inputs = [str(small), str(big_log), str(error_file), str(small)]
    one = answer(inputs, 1)
    for jobs in (2, 3):
        assert answer(inputs, jobs) == one


def _first_pieces_last(path: str, first: int, stop: int | None, folder: str) -> str:
    """A worker's scan that takes longer the earlier its piece (pickled by name, so top level)."""
    time.sleep(0.3 / (first + 1))
    return _scan_piece(path, first, stop, folder)


def test_the_answer_does_not_depend_on_which_worker_finishes_first(
        big_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)
    monkeypatch.setattr(parallel, "_scan_piece", _first_pieces_last)
    assert answer([str(big_log)], 3) == answer([str(big_log)], 1)


def _first_piece_slow(path: str, first: int, stop: int | None, folder: str) -> str:
    """A worker's scan that leaves its process id and first chunk behind, the first piece's
    slowly: a failure flood in one chunk."""
    Path(os.environ[PIDS], f"{os.getpid()}-{first}").touch()
    if first == 0:
        time.sleep(0.5)
    return _scan_piece(path, first, stop, folder)


def test_a_slow_piece_holds_up_only_the_piece_given_with_it(
        big_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)  # a piece a chunk; AHEAD = 2 a worker
    monkeypatch.setenv(PIDS, str(tmp_path))
    monkeypatch.setattr(parallel, "_scan_piece", _first_piece_slow)
    assert answer([str(big_log)], 2) == answer([str(big_log)], 1)
    taken: dict[str, list[int]] = {}
    for name in os.listdir(tmp_path):
        pid, first = name.split("-")
        taken.setdefault(pid, []).append(int(first))
    slow = next(firsts for firsts in taken.values() if 0 in firsts)
    assert sorted(slow) == [0, 2]  # the rest went to the worker that was free
    assert sum(map(len, taken.values())) == -(-big_log.stat().st_size // CHUNK_BYTES)


def test_workers_answer_on_descriptors_past_1024(big_log: Path) -> None:
    """A process holding a thousand files (a folder of per-rank logs, an editor) still hears
    its workers: select() refuses a descriptor numbered 1024 or more."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200
    if soft < wanted and (hard != resource.RLIM_INFINITY and hard < wanted):
        pytest.skip(f"at most {hard} open files here")
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    held = []
    try:
        with open(os.devnull, "rb") as null:
            while not held or held[-1] < 1100:
                held.append(os.dup(null.fileno()))
        assert answer([str(big_log)], 2) == answer([str(big_log)], 1)
    finally:
        for descriptor in held:
            os.close(descriptor)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _dies(path: str, first: int, stop: int | None, folder: str) -> str:
    """A worker killed mid-task, as the system's out-of-memory killer would."""
    os._exit(137)


def test_a_worker_that_dies_is_one_clear_error(big_log: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_scan_piece", _dies)
    with pytest.raises(parallel.WorkerError, match=r"worker process died.*--jobs 1"):
        answer([str(big_log)], 2)


def _unreadable(path: str, first: int, stop: int | None, folder: str) -> str:
    raise InputError(f"{path}: permission denied")


def _faulty(path: str, first: int, stop: int | None, folder: str) -> str:
    return str(1 / 0)


def _out_of_memory(path: str, first: int, stop: int | None, folder: str) -> str:
    raise MemoryError


def test_what_a_worker_raises_is_raised_here(big_log: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_scan_piece", _unreadable)
    with pytest.raises(InputError, match=r"job\.log: permission denied$"):
        answer([str(big_log)], 2)
    monkeypatch.setattr(parallel, "_scan_piece", _faulty)  # a fault of this code: where it is
    with pytest.raises(RuntimeError, match=r"(?s)worker process failed.*_faulty.*ZeroDivision"):
        answer([str(big_log)], 2)
    monkeypatch.setattr(parallel, "_scan_piece", _out_of_memory)  # as if killed for it
    with pytest.raises(parallel.WorkerError, match=r"worker process died.*--jobs 1"):
        answer([str(big_log)], 2)


def test_a_diagnosis_stopped_early_leaves_no_worker_behind(
        big_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)
    monkeypatch.setenv(PIDS, str(tmp_path))
    monkeypatch.setattr(parallel, "_scan_piece", _scan_noting_the_process)
    scanner = scanner_for(CATALOGUE, matcher_for(CATALOGUE))
    with big_log.open("rb") as stream:
        found = parallel.scans(scanner, [(str(big_log), stream)], jobs=2)
        assert isinstance(next(found), parallel.SourceStart)
        assert isinstance(next(found), parallel.ChunkScan)
        found.close()  # what a consumer's error or Ctrl-C does
    workers = {int(name.split("-")[0]) for name in os.listdir(tmp_path)}
    assert len(workers) == 2
    for pid in workers:  # stopped, and waited for
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_folders_of_processes_that_are_gone_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    prefix = parallel.SCANS_PREFIX
    for name in (f"{prefix}{gone}-abc", f"{prefix}{os.getpid()}-def", f"{prefix}xyz",
                 f"trainmedic-rules-{gone}-ghi", "trainmedic-other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "scans").write_bytes(b"pickled")
    parallel.remove_orphans(prefix, str(tmp_path))
    assert {p.name for p in tmp_path.iterdir()} == {
        f"{prefix}{os.getpid()}-def", f"{prefix}xyz", f"trainmedic-rules-{gone}-ghi",
        "trainmedic-other"}


def test_a_forced_single_job_reads_in_one_process(big_log: Path) -> None:
    assert parallel.jobs_for(1) == 1
    assert parallel.jobs_for(3) == 3
    assert parallel.jobs_for(None) == parallel.cores()
    assert total_size([str(big_log)] * 6, 1 << 20) == 6 << 20  # --max-bytes 1M of each


def _pieces_noted(path: str, first: int, stop: int | None, folder: str) -> str:
    """A worker's scan that leaves its process id and first chunk behind."""
    Path(os.environ[PIDS], f"{os.getpid()}-{first}").touch()
    return _scan_piece(path, first, stop, folder)


@pytest.mark.parametrize("dense_from", [None, 1])
def test_a_small_input_goes_to_workers_only_from_a_chunk_dense_with_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense_from: int | None) -> None:
    """Below PARALLEL_MIN_BYTES the chunks are read here; after the first one holding
    DENSE_LINES hit and metric lines, with DENSE_MIN_CHUNKS or more to go, the workers read
    the rest. The answer is the one a single process gives."""
    monkeypatch.setattr(parallel, "DENSE_LINES", 100)
    overflow = ("[default{}]:[deepspeed] OVERFLOW! Rank {} Skipping step. Attempted loss scale: "
                "1.0, reducing to 1.0\n")  # deepspeed/runtime/fp16/loss_scaler.py
    lines, size = [], 0
    while size < 6 * CHUNK_BYTES - 100:
        dense = dense_from is not None and size >= dense_from * CHUNK_BYTES
        rank = len(lines) % 8
        lines.append(overflow.format(rank, rank) if dense and len(lines) % 50 == 0 else
                     f"[default{rank}]:step {len(lines)} tokens/s 1234\n")
        size += len(lines[-1])
    log = tmp_path / "job.log"
    log.write_text("".join(lines), "utf-8")
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv(PIDS, str(pids))
    monkeypatch.setattr(parallel, "_scan_piece", _pieces_noted)

    def read(jobs: int) -> dict[str, object]:
        with opened([str(log)]) as streams:
            return to_dict(diagnose(streams, CATALOGUE, jobs=jobs, total_bytes=size), CATALOGUE)

    assert read(2) == read(1)
    noted = [name.split("-") for name in os.listdir(pids)]
    if dense_from is None:
        assert noted == []  # all of it read here
    else:
        assert min(int(first) for _, first in noted) == dense_from + 1
        assert str(os.getpid()) not in {pid for pid, _ in noted}


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_counts_every_byte_once(big_log: Path, jobs: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 2)
    done: list[int] = []
    with opened([str(big_log)]) as streams:
        diagnose(streams, CATALOGUE, jobs=jobs, progress=done.append)
    assert done == sorted(done)
    assert done[-1] == big_log.stat().st_size


def test_cli_jobs_option(big_log: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", str(big_log),
                               "--format", "json", *args], capture_output=True, text=True,
                              check=False)

    one, two = run("--jobs", "1"), run("-j", "2")
    assert one.returncode == two.returncode == 0
    assert json.loads(one.stdout) == json.loads(two.stdout)
    bad = run("--jobs", "0")
    assert bad.returncode == 2
    assert "not a process count" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_traceback_across_a_chunk_boundary_is_read_whole_by_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers leave a chunk's first lines in the file; the ones a traceback runs into are read
    from it again, so the traceback is the one a single process reads."""
    step = "[rank1]: step {} loss=2.5 lr=1e-4\n"
    lines, size, number = [], 0, 0
    while size < CHUNK_BYTES - 200:  # the header and first frame end the first chunk
        lines.append(step.format(number))
        size, number = size + len(lines[-1]), number + 1
    lines += ["[rank0]: Traceback (most recent call last):\n",
              '[rank0]:   File "train.py", line 7, in <module>\n',
              *(step.format(n) for n in range(number, number + 40)),
              '[rank0]:   File "model.py", line 3, in forward\n',
              "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
              *(step.format(n) for n in range(number + 40, number + 99))]
    log = tmp_path / "job.log"
    log.write_text("".join(lines), "utf-8")
    assert log.stat().st_size > CHUNK_BYTES  # the traceback straddles the boundary
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)
    with opened([str(log)]) as streams:
        alone = diagnose(streams, CATALOGUE, jobs=1)
    with opened([str(log)]) as streams:
        both = diagnose(streams, CATALOGUE, jobs=2)
    assert [(t.exception, t.frames) for t in both.tracebacks] == \
        [(t.exception, t.frames) for t in alone.tracebacks] == \
        [("RuntimeError", ("train.py:7 in <module>", "model.py:3 in forward"))]
    assert to_dict(both, CATALOGUE) == to_dict(alone, CATALOGUE)


def test_a_diagnosis_leaves_no_reference_cycles(big_log: Path) -> None:
    """`diagnose` turns the collector off for the run: that is only right while reading,
    scanning and folding leave no cycles behind for it to find."""
    import gc

    logs = [big_log, ROOT / "examples" / "fp16-loss-scale-4ranks.log",
            *sorted((ROOT / "tests" / "fixtures").rglob("*.log"))[:40]]
    gc.collect()
    gc.disable()
    try:
        for log in logs:
            with log.open("rb") as stream:
                diagnose([(str(log), stream)], CATALOGUE)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_cli_turns_the_collector_back_on(capsys: pytest.CaptureFixture[str]) -> None:
    """`diagnose` runs with the collector off, and a caller in the same process (a test, an
    agent's tool) gets it back as it was."""
    import gc

    from trainmedic.cli import main

    assert gc.isenabled()
    main(["diagnose", str(ROOT / "examples" / "fp16-loss-scale-4ranks.log")])
    assert gc.isenabled()
    assert "Root cause" in capsys.readouterr().out


@given(st.integers(0, 600), st.integers(1, 8))
def test_pieces_cover_the_file_once_and_end_in_single_chunks(chunks: int, jobs: int) -> None:
    """Every chunk in exactly one piece, in order; PIECE_CHUNKS at most; smaller toward the
    end, where the last of them hold one chunk each, one per worker at least, so that a
    failure's flood in the last chunks is shared out."""
    cut = list(parallel.pieces(chunks, jobs))
    firsts = [first for first, _ in cut]
    stops = [stop for _, stop in cut]
    assert firsts[0] == 0
    assert stops[-1] is None
    assert stops[:-1] == firsts[1:]
    sizes = [stop - first for first, stop in cut[:-1] if stop is not None]
    sizes.append(max(1, chunks - firsts[-1]))
    assert all(1 <= size <= parallel.PIECE_CHUNKS for size in sizes)
    assert sizes == sorted(sizes, reverse=True)
    if chunks >= 2 * jobs:
        assert sizes[-jobs:] == [1] * jobs

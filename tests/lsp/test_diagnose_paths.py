"""`trainmedic.diagnose` with `{"paths"}`: files and folders read by the CLI's input code, so the
editor's answer is the CLI's (ranks from file names, big logs the editor cannot send)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import FIXTURES, eventually, execute, large_log, logged, process_runs, read
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from trainmedic.events.parallel import cores

# torchrun-raise.log (4 ranks, rank 1 fed a wrong-shaped batch) split into one file per rank
# with the `[rankN]:` prefixes taken off, and the launcher's own lines in launcher.log: the
# shape of a job whose ranks write their own files.
PER_RANK = FIXTURES.parent / "per-rank-files"
SIXTY_MB = 60_000_000


def cli(*paths: Path, options: tuple[str, ...] = ()) -> dict[str, Any]:
    """What `trainmedic diagnose --format json` answers for the same paths."""
    done = subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", "--format", "json",
                           *options, *map(str, paths)], capture_output=True, text=True,
                          check=True)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def statuses(result: dict[str, Any]) -> dict[str, str]:
    return {rank: report["status"] for rank, report in result["ranks"].items()}


@pytest.mark.asyncio
async def test_a_folder_of_per_rank_files_gets_the_clis_ranks(client: LanguageClient) -> None:
    assert sorted(p.name for p in PER_RANK.iterdir()) == [
        "launcher.log", "rank0.log", "rank1.log", "rank2.log", "rank3.log"]
    assert not any(line.startswith("[rank") for p in PER_RANK.glob("rank*.log")
                   for line in p.read_text().splitlines())

    result = await execute(client, "trainmedic.diagnose", {"paths": [str(PER_RANK)]})
    expected = cli(PER_RANK)

    assert result["initiating_rank"] == expected["initiating_rank"] == 1  # the injected rank
    assert result["initiating_basis"] == expected["initiating_basis"]
    assert statuses(result) == statuses(expected)
    assert set(result["ranks"]) == {"0", "1", "2", "3"}
    assert result["ranks"]["1"]["status"] == "failed-first"
    assert [d["rule_id"] for d in result["diagnoses"]] == \
        [d["rule_id"] for d in expected["diagnoses"]]
    top = result["diagnoses"][0]
    assert Path(top["evidence"][0]["path"]).name == "rank1.log"
    assert top["evidence"][0]["rank"] == 1  # read from the file's name, given in the JSON
    assert result["warnings"] == []


@pytest.mark.asyncio
async def test_a_folder_of_compressed_per_rank_files_gets_the_ranks_of_the_plain_ones(
        client: LanguageClient, tmp_path: Path) -> None:
    import gzip

    for plain in PER_RANK.iterdir():
        (tmp_path / f"{plain.name}.gz").write_bytes(gzip.compress(plain.read_bytes()))
    result = await execute(client, "trainmedic.diagnose", {"paths": [str(tmp_path)]})
    expected = cli(PER_RANK)
    assert result["initiating_rank"] == cli(tmp_path)["initiating_rank"] == 1
    assert statuses(result) == statuses(expected)
    assert [d["rule_id"] for d in result["diagnoses"]] == \
        [d["rule_id"] for d in expected["diagnoses"]]
    assert Path(result["diagnoses"][0]["evidence"][0]["path"]).name == "rank1.log.gz"
    assert result["warnings"] == []


@pytest.mark.asyncio
async def test_the_diagnosis_is_published_on_each_cited_file(client: LanguageClient) -> None:
    await execute(client, "trainmedic.diagnose", {"paths": [str(PER_RANK)]})

    root_file = (PER_RANK / "rank1.log").as_uri()
    await eventually(lambda: root_file in client.diagnostics)
    errors = [d for d in client.diagnostics[root_file]
              if d.severity == types.DiagnosticSeverity.Error]
    assert len(errors) == 1
    assert errors[0].message.startswith("Root cause on rank 1")
    lines = (PER_RANK / "rank1.log").read_text().splitlines()
    assert "mat1 and mat2 shapes" in lines[errors[0].range.start.line]
    collateral = client.diagnostics.get((PER_RANK / "rank0.log").as_uri(), [])
    assert collateral
    assert all(d.severity != types.DiagnosticSeverity.Error for d in collateral)
    links = [d.related_information[0].location for d in collateral if d.related_information]
    assert links
    assert all(link.uri == root_file for link in links)


def sixty_mb_log(folder: Path) -> Path:
    """A long healthy run that ends in the real fp16 failure, past the editor's 50 MB limit."""
    big = folder / "train.log"
    per_line = len(read("healthy-2ranks.log")) // len(read("healthy-2ranks.log").splitlines())
    big.write_text(large_log(SIXTY_MB // per_line + 1000))
    assert big.stat().st_size > SIXTY_MB
    return big


@pytest.mark.asyncio
async def test_a_60_mb_log_gets_the_clis_first_root_cause(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    big = sixty_mb_log(tmp_path)

    result = await execute(client, "trainmedic.diagnose", {"paths": [str(big)]})
    expected = cli(big)

    assert result["diagnoses"][0]["rule_id"] == expected["diagnoses"][0]["rule_id"]
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    assert result["diagnoses"][0]["evidence"] == expected["diagnoses"][0]["evidence"]
    assert result["initiating_rank"] == expected["initiating_rank"]
    reports = [r for rs in client.progress_reports.values() for r in rs]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert any(isinstance(r, types.WorkDoneProgressReport) and 0 < (r.percentage or 0) < 100
               for r in reports)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


@pytest.mark.asyncio
async def test_cancelling_a_diagnosis_of_paths_stops_it(client: LanguageClient,
                                                        tmp_path: Path) -> None:
    params = types.ExecuteCommandParams(command="trainmedic.diagnose",
                                        arguments=[{"paths": [str(sixty_mb_log(tmp_path))]}])
    running = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="big-paths"))
    await asyncio.sleep(0)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="big-paths"))

    with pytest.raises(JsonRpcRequestCancelled):
        await running
    await eventually(lambda: bool(logged(client, "trainmedic.diagnose cancelled")))


def workers_of(server_command: str) -> list[int]:
    """The worker processes of this test's server: the children of its fork server."""
    commands, parents = {}, {}
    for entry in Path("/proc").iterdir():
        try:
            pid, stat = int(entry.name), (entry / "stat").read_text()
            commands[pid] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except (ValueError, OSError):
            continue
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
    servers = {pid for pid, command in commands.items()
               if parents.get(pid) == os.getpid() and server_command.encode() in command}
    fork_servers = {pid for pid, parent in parents.items()
                    if parent in servers and b"forkserver" in commands[pid]}
    return [pid for pid, parent in parents.items() if parent in fork_servers]


NEEDS_WORKERS = pytest.mark.skipif(cores() < 2 or not sys.platform.startswith("linux"),
                                   reason="worker processes need two cores; found in /proc")


def three_copies(folder: Path) -> tuple[Path, list[Path]]:
    """A 60 MB log and two hard links to it: three logs for one job."""
    big = sixty_mb_log(folder)
    copies = [big, folder / "copy1.log", folder / "copy2.log"]
    for copy in copies[1:]:
        os.link(big, copy)
    return big, copies


def percentages(client: LanguageClient) -> list[int]:
    return [r.percentage or 0 for rs in client.progress_reports.values() for r in rs
            if isinstance(r, types.WorkDoneProgressReport)]


@pytest.mark.asyncio
@NEEDS_WORKERS
async def test_big_logs_read_by_kept_worker_processes_get_the_answer_of_one_process(
        client: LanguageClient, tmp_path: Path) -> None:
    big, copies = three_copies(tmp_path)  # three for a longer job, to cancel
    alone = cli(big, options=("--jobs", "1"))

    first = await execute(client, "trainmedic.diagnose", {"paths": [str(big)]})
    reported = len(percentages(client))
    params = types.ExecuteCommandParams(command="trainmedic.diagnose",
                                        arguments=[{"paths": list(map(str, copies))}])
    running = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="three-copies"))
    await eventually(lambda: any(0 < p < 100 for p in percentages(client)[reported:]))
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="three-copies"))
    with pytest.raises(JsonRpcRequestCancelled):
        await running
    again = await execute(client, "trainmedic.diagnose", {"paths": [str(big)]})

    for result in (first, again):
        assert {k: v for k, v in result.items() if k not in ("markdown", "warnings")} == alone
    assert len(logged(client, "worker processes")) == 1  # started once, kept for each job
    workers = workers_of("trainmedic lsp")
    assert len(workers) == cores()
    await client.shutdown_session()
    await eventually(lambda: not any(map(process_runs, workers)))  # gone with the server


@pytest.mark.asyncio
@NEEDS_WORKERS
async def test_a_worker_that_dies_is_one_clear_error_and_the_next_job_gets_new_ones(
        client: LanguageClient, tmp_path: Path) -> None:
    big, copies = three_copies(tmp_path)
    running = asyncio.ensure_future(execute(client, "trainmedic.diagnose",
                                            {"paths": list(map(str, copies))}))
    await eventually(lambda: any(0 < p < 100 for p in percentages(client)))
    killed = workers_of("trainmedic lsp")
    assert killed
    for pid in killed:
        os.kill(pid, signal.SIGKILL)  # as the system's out-of-memory killer would

    with pytest.raises(JsonRpcException) as refused:
        await running
    assert refused.value.message == \
        "a worker process died reading the logs, perhaps out of memory; not diagnosed"
    assert refused.value.code == types.LSPErrorCodes.RequestFailed
    assert not logged(client, "Traceback")
    result = await execute(client, "trainmedic.diagnose", {"paths": [str(big)]})
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    assert not set(killed) & set(workers_of("trainmedic lsp"))


@pytest.mark.asyncio
async def test_max_bytes_bounds_each_file_and_says_so(client: LanguageClient,
                                                      tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(large_log(5000))

    result = await execute(client, "trainmedic.diagnose", {"paths": [str(log)],
                                                           "maxBytes": 100_000})

    assert not [d for d in result["diagnoses"] if d["role"] == "root"]  # the failure is cut off
    assert result["warnings"] == [f"{log}: read only the first 100000 bytes (--max-bytes)"]


@pytest.mark.asyncio
@pytest.mark.parametrize("argument", [
    {"paths": []}, {"paths": "x.log"}, {"paths": [3]}, {"paths": ["a.log"], "text": "x"},
    {"paths": ["a.log"], "maxBytes": 0}, {"paths": ["a.log"], "maxBytes": True},
])
async def test_malformed_paths_are_invalid_params(client: LanguageClient,
                                                  argument: object) -> None:
    with pytest.raises(JsonRpcInvalidParams, match=r"paths|maxBytes|not both"):
        await execute(client, "trainmedic.diagnose", argument)


@pytest.mark.asyncio
async def test_what_is_not_a_log_is_refused_in_the_clis_words(client: LanguageClient,
                                                              tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"\0\1\2")
    with pytest.raises(JsonRpcInvalidParams, match="no such file or directory"):
        await execute(client, "trainmedic.diagnose", {"paths": [str(tmp_path / "gone.log")]})
    with pytest.raises(JsonRpcInvalidParams, match="binary file"):
        await execute(client, "trainmedic.diagnose", {"paths": [str(tmp_path / "model.bin")]})
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(JsonRpcInvalidParams, match="no log files in this directory"):
        await execute(client, "trainmedic.diagnose", {"paths": [str(empty)]})
    assert not logged(client, "Traceback")


@pytest.mark.asyncio
async def test_a_file_opened_too_big_to_send_is_diagnosed_only_when_it_is_a_log(
        client: LanguageClient, tmp_path: Path) -> None:
    log, notes = tmp_path / "train.log", tmp_path / "notes.md"
    log.write_text(read("amp-loss-scale-3ranks.log"))
    notes.write_text(read("amp-loss-scale-3ranks.log"))

    opened = await execute(client, "trainmedic.diagnose", {"paths": [str(log)], "ifLog": True})
    skipped = await execute(client, "trainmedic.diagnose", {"paths": [str(notes)], "ifLog": True})

    assert opened["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    assert skipped is None  # not matched by the default logGlobs
    assert log.as_uri() in client.diagnostics
    assert notes.as_uri() not in client.diagnostics

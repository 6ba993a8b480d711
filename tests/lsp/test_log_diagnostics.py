"""Log documents: diagnosed when opened and after edits, with progress on large ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import (
    errors,
    eventually,
    execute,
    large_log,
    logged,
    next_diagnostics,
    open_document,
    read,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

AMP = "amp-loss-scale-3ranks.log"


@pytest.mark.asyncio
async def test_opening_a_log_publishes_its_diagnosis(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    uri = (tmp_path / "slurm-1234.out").as_uri()
    open_document(client, uri, read(AMP))
    published = await next_diagnostics(client, uri)
    diagnosis = await execute(client, "trainmedic.diagnose", {"text": read(AMP)})

    assert published.version == 1
    root = errors(published.diagnostics)
    assert len(root) == 1
    assert root[0].code == "amp-loss-scale"
    # The Error sits on the initiating rank's first failure; when every rank failed alike
    # (no initiating rank), on the root cause's first evidence line.
    rank, top = diagnosis["initiating_rank"], diagnosis["diagnoses"][0]
    first = diagnosis["ranks"][str(rank)]["first_failure_line"]["line"] if rank is not None \
        else min(e["line"] for e in top["evidence"])
    assert root[0].range.start.line == first - 1
    others = {d.range.start.line: d for d in published.diagnostics if d is not root[0]}
    lines = read(AMP).splitlines()
    for rank in (1, 2):  # the other ranks' copies of the failure, linked to the root cause
        failure = lines.index(f"[rank{rank}]: FloatingPointError: Minimum loss scale reached "
                              "(0.0001). Your loss is probably exploding. Try lowering the "
                              "learning rate, using gradient clipping or increasing the batch "
                              "size.")
        assert failure in others
    for diagnostic in others.values():
        assert diagnostic.severity == types.DiagnosticSeverity.Information
        assert diagnostic.related_information is not None
        assert diagnostic.related_information[0].location.range == root[0].range


@pytest.mark.asyncio
async def test_only_documents_matching_the_log_globs_are_diagnosed(
        client: LanguageClient, tmp_path: Path) -> None:
    notes, log = (tmp_path / "notes.md").as_uri(), (tmp_path / "run.log").as_uri()
    open_document(client, notes, read(AMP))
    open_document(client, log, read(AMP))
    await next_diagnostics(client, log)
    assert notes not in client.diagnostics


@pytest.mark.asyncio
async def test_a_healthy_log_has_no_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "train.log").as_uri()
    open_document(client, uri, read("healthy-2ranks.log"))
    assert not (await next_diagnostics(client, uri)).diagnostics


@pytest.mark.asyncio
async def test_edits_are_diagnosed_once_they_pause(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "train.log").as_uri()
    healthy = read("healthy-2ranks.log")
    open_document(client, uri, healthy)
    await next_diagnostics(client, uri)

    end = types.Position(line=healthy.count("\n"), character=0)
    failure = read("bf16-unsupported.log").splitlines(keepends=True)
    for version, line in enumerate(failure, start=2):  # typed in quickly, line by line
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=end, end=end), text=line)]))
        end = types.Position(line=end.line + 1, character=0)

    published = await next_diagnostics(client, uri)
    assert published.version == 1 + len(failure)
    assert [d.code for d in errors(published.diagnostics)] == ["amp-bf16-vs-fp16"]
    with pytest.raises(asyncio.TimeoutError):  # one diagnosis for the burst, not one per edit
        await next_diagnostics(client, uri, timeout=1.0)


@pytest.mark.asyncio
async def test_closing_a_log_clears_its_diagnostics(client: LanguageClient,
                                                    tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read(AMP))
    assert (await next_diagnostics(client, uri)).diagnostics
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert not (await next_diagnostics(client, uri)).diagnostics


@pytest.mark.asyncio
async def test_a_progress_overwritten_line_is_found_where_the_editor_shows_it(
        client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "tqdm.log").as_uri()
    bar = "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}|" for p in range(0, 101, 10))
    open_document(client, uri, bar + "\n" + read("bf16-unsupported.log"))
    root = errors((await next_diagnostics(client, uri)).diagnostics)
    # Each \r starts an editor line; the failure is the last line of the log after the bar.
    assert root[0].range.start.line == bar.count("\r") + read("bf16-unsupported.log").count("\n")
    assert root[0].range.end.character == len("ValueError: Your setup doesn't support bf16/gpu.")


@pytest.mark.asyncio
async def test_large_logs_report_progress(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "big.log").as_uri()
    open_document(client, uri, large_log(5_000))
    published = await next_diagnostics(client, uri)

    assert [d.code for d in errors(published.diagnostics)] == ["amp-loss-scale"]
    reports = [r for rs in client.progress_reports.values() for r in rs]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].cancellable
    assert "big.log" in reports[0].title
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


@pytest.mark.asyncio
async def test_cancelling_the_progress_stops_the_diagnosis(client: LanguageClient,
                                                           tmp_path: Path) -> None:
    uri = (tmp_path / "huge.log").as_uri()
    open_document(client, uri, large_log(200_000))
    await eventually(lambda: bool(client.progress_reports))
    token = next(iter(client.progress_reports))
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    await eventually(lambda: bool(logged(client, "diagnosis of huge.log cancelled")))
    end = client.progress_reports[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd)
    assert end.message == "cancelled"
    assert uri not in client.diagnostics


@pytest.mark.asyncio
@pytest.mark.settings({"diagnoseOnOpen": False})
async def test_diagnose_on_open_can_be_turned_off(client: LanguageClient, tmp_path: Path) -> None:
    log, other = (tmp_path / "a.log").as_uri(), (tmp_path / "b.txt").as_uri()
    open_document(client, log, read(AMP))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="trainmedic.diagnose", arguments=[{"text": read(AMP), "uri": other}]))
    assert other in client.diagnostics
    assert log not in client.diagnostics

"""Open logs followed on disk: diagnosed as a job appends to them, without the client sending
an edit, reading only the new bytes; edited documents keep being diagnosed as text."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from lsp_helpers import errors, eventually, next_diagnostics, open_document, read
from lsprotocol import types
from pygls.workspace import PositionCodec
from pytest_lsp import LanguageClient

from trainmedic.catalogue.load import bundled
from trainmedic.lsp import following, jobs
from trainmedic.lsp.features.log_diagnostics import FOLLOW_SECONDS
from trainmedic.lsp.following import FollowedLog
from trainmedic.matching.choice import matcher_for

HEALTHY, AMP, BF16 = "healthy-2ranks.log", "amp-loss-scale-3ranks.log", "bf16-unsupported.log"
# A progress bar drawn with lone CRs: each starts a line in the editor but not in the core.
BAR = "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}|" for p in range(0, 101, 10)) + "\n"
SOON = 5.0  # a growth is published within FOLLOW_SECONDS or so; this leaves room for a slow CI
QUIET = 4 * FOLLOW_SECONDS + 1.0  # long enough for a follower to have published, had it run


def append(path: Path, text: str) -> None:
    with path.open("ab") as log:
        log.write(text.encode("utf-8"))


async def quiet(client: LanguageClient, uri: str) -> bool:
    """Whether nothing is published on `uri` for a while. (Not `next_diagnostics` timing out:
    the client would then drop the next notification, which a test may still want.)"""
    client.diagnostics.pop(uri, None)
    await asyncio.sleep(QUIET)
    return uri not in client.diagnostics


async def open_healthy_log(client: LanguageClient, tmp_path: Path) -> tuple[Path, str]:
    """A healthy log on disk, opened, with its first diagnostics published."""
    log = tmp_path / "train.log"
    log.write_bytes(read(HEALTHY).encode("utf-8"))
    uri = log.as_uri()
    open_document(client, uri, read(HEALTHY))
    await next_diagnostics(client, uri)
    return log, uri


def shown(diagnostics: Sequence[types.Diagnostic]) -> list[tuple[object, ...]]:
    return [(d.range, d.code, d.severity, d.message) for d in diagnostics]


def codes(client: LanguageClient, uri: str) -> list[str | int | None]:
    return [d.code for d in errors(client.diagnostics.get(uri, []))]


def full_change(uri: str, version: int, text: str) -> types.DidChangeTextDocumentParams:
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)])


@pytest.mark.asyncio
async def test_a_log_growing_on_disk_is_diagnosed_as_it_grows(client: LanguageClient,
                                                              tmp_path: Path) -> None:
    log = tmp_path / "slurm-1234.out"
    start = BAR + read(HEALTHY)
    log.write_bytes(start.encode("utf-8"))
    uri = log.as_uri()
    open_document(client, uri, start)
    assert not (await next_diagnostics(client, uri)).diagnostics

    append(log, read(AMP))  # the job writes on; the client sends nothing
    await eventually(lambda: codes(client, uri) == ["amp-loss-scale"], SOON)

    # The same lines, where the editor shows them: as a document holding the whole text has them.
    whole = (tmp_path / "whole.log").as_uri()  # not on disk: diagnosed as text
    open_document(client, whole, start + read(AMP))
    assert shown(client.diagnostics[uri]) == \
        shown((await next_diagnostics(client, whole)).diagnostics)


@pytest.mark.asyncio
async def test_a_rewritten_log_is_read_again(client: LanguageClient, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes((read(HEALTHY) + read(AMP)).encode("utf-8"))
    uri = log.as_uri()
    open_document(client, uri, read(HEALTHY) + read(AMP))
    await eventually(lambda: codes(client, uri) == ["amp-loss-scale"], SOON)

    log.write_bytes(read(HEALTHY).encode("utf-8"))  # the job restarted: shorter, and healthy
    await eventually(lambda: not client.diagnostics[uri], SOON)
    append(log, read(BF16))
    await eventually(lambda: codes(client, uri) == ["amp-bf16-vs-fp16"], SOON)


@pytest.mark.asyncio
async def test_closing_a_log_stops_following_it(client: LanguageClient, tmp_path: Path) -> None:
    log, uri = await open_healthy_log(client, tmp_path)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    await next_diagnostics(client, uri)

    append(log, read(AMP))
    assert await quiet(client, uri)


@pytest.mark.asyncio
async def test_an_edited_log_is_diagnosed_as_edited(client: LanguageClient,
                                                    tmp_path: Path) -> None:
    log, uri = await open_healthy_log(client, tmp_path)

    client.text_document_did_change(full_change(uri, 2, read(HEALTHY) + read(BF16)))  # unsaved
    assert [d.code for d in errors((await next_diagnostics(client, uri)).diagnostics)] == \
        ["amp-bf16-vs-fp16"]
    append(log, read(AMP))  # the file grows under the edited document: its lines are not these
    assert await quiet(client, uri)

    client.text_document_did_change(full_change(uri, 3, read(HEALTHY) + read(AMP)))  # reverted
    await eventually(lambda: codes(client, uri) == ["amp-loss-scale"], SOON)


@pytest.mark.asyncio
async def test_a_log_reloaded_from_disk_is_not_diagnosed_again(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    healthy = read(HEALTHY)
    start = healthy * (jobs.LARGE_LINES // healthy.count("\n") + 1)  # diagnosed as text, it
    log = tmp_path / "train.log"  # would take the worker thread and report progress
    log.write_bytes(start.encode("utf-8"))
    uri = log.as_uri()
    open_document(client, uri, start)
    assert not (await next_diagnostics(client, uri)).diagnostics
    append(log, read(AMP))
    await eventually(lambda: codes(client, uri) == ["amp-loss-scale"], SOON)
    followed = shown(client.diagnostics[uri])

    client.text_document_did_change(full_change(uri, 2, start + read(AMP)))  # as the editor
    assert shown((await next_diagnostics(client, uri)).diagnostics) == followed  # reloads it
    assert not client.progress_reports  # the follower's diagnosis: nothing was diagnosed again


@pytest.mark.asyncio
@pytest.mark.settings({"followLogs": False})
async def test_following_can_be_turned_off(client: LanguageClient, tmp_path: Path) -> None:
    log, uri = await open_healthy_log(client, tmp_path)
    append(log, read(AMP))
    assert await quiet(client, uri)


def follower(path: Path) -> FollowedLog:
    catalogue = bundled()
    return FollowedLog(str(path), catalogue, matcher_for(catalogue), PositionCodec())


def test_only_the_appended_bytes_are_read(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    first, rest = read(HEALTHY).encode("utf-8"), read(AMP).encode("utf-8")
    log.write_bytes(first)
    followed = follower(log)
    assert followed.poll()
    assert followed.bytes_read == len(first)
    assert not followed.poll()
    append(log, read(AMP))
    assert followed.poll()
    assert followed.bytes_read == len(first) + len(rest)
    assert followed.diagnoser.diagnosis().root_causes[0].rule_id == "amp-loss-scale"
    followed.close()
    append(log, read(BF16))
    assert not followed.poll()
    assert followed.bytes_read == len(first) + len(rest)


def test_a_document_matches_the_file_as_it_is_or_was_a_moment_ago(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(following, "RECENT_BYTES", 64)
    log = tmp_path / "run.log"
    text = read(HEALTHY)
    log.write_bytes(text.encode("utf-8"))
    followed = follower(log)
    followed.poll()

    assert followed.matches(text)
    assert followed.matches(text[:-40])  # the client has not reloaded the last growth yet
    assert not followed.matches(text[:-100])  # nor the one before: too far behind to tell
    assert not followed.matches(text + "typed\n")  # more than the file holds
    early = text.replace("loss", "lost", 1)  # an edit of the same length, among the summed bytes
    late = text[:-10] + text[-10:].upper()  # and among the recent ones
    for edited in (early, late):
        assert len(edited) == len(text)
        assert edited != text
        assert not followed.matches(edited)
    followed.close()

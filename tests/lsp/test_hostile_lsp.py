"""Hostile requests: slow diagnoses do not hold up hovers, results are bounded, per-call rule
packs wait for trust, a pack the native matcher cannot compile is left out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import errors, eventually, execute, next_diagnostics, open_document, read
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient
from test_rule_packs import NODE_FAILURE, write_pack

from trainmedic.lsp.jobs import LARGE_LINES
from trainmedic.lsp.server import UNOPENED_KEPT
from trainmedic.matching import hyperscan

AMP = "amp-loss-scale-3ranks.log"


def hover_params(uri: str, line: int) -> types.HoverParams:
    return types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                             position=types.Position(line=line, character=0))


async def first_error_line(client: LanguageClient, uri: str) -> int:
    return errors((await next_diagnostics(client, uri)).diagnostics)[0].range.start.line


@pytest.mark.asyncio
async def test_a_hover_is_answered_while_a_small_log_is_diagnosed(client: LanguageClient,
                                                                  tmp_path: Path) -> None:
    uri = (tmp_path / "train.log").as_uri()
    open_document(client, uri, read(AMP))
    line = await first_error_line(client, uri)
    # Fewer lines than LARGE_LINES, but long ones: a diagnosis of a few seconds.
    slow = ("loss scale: 1 |" * 400 + "\n") * (LARGE_LINES - 1)
    diagnosis = asyncio.ensure_future(execute(client, "trainmedic.diagnose", {"text": slow}))
    hover = await asyncio.wait_for(client.text_document_hover_async(hover_params(uri, line)),
                                   30)
    assert hover is not None
    assert not diagnosis.done()  # the hover did not wait for it
    assert "diagnoses" in await asyncio.wait_for(diagnosis, 120)


@pytest.mark.asyncio
async def test_results_for_unopened_documents_are_bounded(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    text = read(AMP)
    first = (tmp_path / "never-opened-0.log").as_uri()
    await execute(client, "trainmedic.diagnose", {"text": text, "uri": first})
    line = errors(client.diagnostics[first])[0].range.start.line
    assert await client.text_document_hover_async(hover_params(first, line)) is not None
    for index in range(1, UNOPENED_KEPT + 1):
        await execute(client, "trainmedic.diagnose",
                      {"text": text, "uri": (tmp_path / f"never-opened-{index}.log").as_uri()})
    assert await client.text_document_hover_async(hover_params(first, line)) is None
    newest = (tmp_path / f"never-opened-{UNOPENED_KEPT}.log").as_uri()
    assert await client.text_document_hover_async(hover_params(newest, line)) is not None


@pytest.mark.asyncio
async def test_a_result_is_dropped_when_its_document_closes(client: LanguageClient,
                                                            tmp_path: Path) -> None:
    uri = (tmp_path / "train.log").as_uri()
    open_document(client, uri, read(AMP))
    line = await first_error_line(client, uri)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    await eventually(lambda: len(client.diagnostics.get(uri, [None])) == 0)
    assert await client.text_document_hover_async(hover_params(uri, line)) is None


@pytest.mark.asyncio
async def test_a_rule_pack_for_one_call_is_refused_in_an_untrusted_workspace(
        client: LanguageClient, tmp_path: Path) -> None:
    pack = write_pack(tmp_path)
    with pytest.raises(JsonRpcInvalidParams, match="not trusted"):
        await execute(client, "trainmedic.diagnose",
                      {"text": NODE_FAILURE, "rulePacks": [str(pack)]})
    assert (await execute(client, "trainmedic.diagnose", {"text": read(AMP)}))["diagnoses"]


def native_refused_pack(root: Path) -> Path:
    """A pack whose pattern passes validation but which Hyperscan cannot compile (`\\u`)."""
    rule = write_pack(root) / "cluster" / "slurm-node-failure.yaml"
    text = rule.read_text("utf-8")
    rule.write_text(text.replace("DUE TO NODE FAILURE'", "DUE TO NODE FAILURE\\u0020?'"),
                    "utf-8")
    return rule.parent.parent


@pytest.mark.asyncio
@pytest.mark.skipif(not hyperscan.available(), reason="needs the hyperscan backend")
@pytest.mark.settings({"rulePacks": ["pack"], "workspaceTrusted": True})
async def test_a_pack_the_native_matcher_refuses_is_left_out(client: LanguageClient,
                                                             tmp_path: Path) -> None:
    native_refused_pack(tmp_path)
    await execute(client, "trainmedic.reloadRules")
    result = await execute(client, "trainmedic.diagnose", {"text": read(AMP)})
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    await eventually(lambda: any("hyperscan" in m.message for m in client.messages))
    shown = next(m.message for m in client.messages if "hyperscan" in m.message)
    assert "slurm-node-failure" in shown
    assert "Traceback" not in shown

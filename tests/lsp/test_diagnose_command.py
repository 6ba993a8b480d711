"""`trainmedic.diagnose`: the JSON contract, diagnostics on a document, cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import errors, eventually, execute, large_log, logged, read
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

AMP = "amp-loss-scale-3ranks.log"


@pytest.mark.asyncio
async def test_diagnose_text_returns_the_json_contract(client: LanguageClient) -> None:
    result = await execute(client, "trainmedic.diagnose", {"text": read(AMP)})

    assert {"initiating_rank", "diagnoses", "ranks", "markdown"} <= result.keys()
    top = result["diagnoses"][0]
    assert top["rule_id"] == "amp-loss-scale"
    assert top["role"] == "root"
    assert top["verify"] == "trainmedic probe amp"
    assert {"path", "line", "text"} <= top["evidence"][0].keys()
    # Lines are counted within the text, as `trainmedic diagnose --format json` counts them.
    lines = read(AMP).splitlines()
    for evidence in top["evidence"]:
        assert lines[evidence["line"] - 1] == evidence["text"]
    assert any("Minimum loss scale reached" in e["text"] for e in top["evidence"])
    assert set(result["ranks"]) == {"0", "1", "2"}
    assert "Mixed precision loss scale" in result["markdown"]
    assert client.diagnostics == {}  # no uri, nothing published


@pytest.mark.asyncio
async def test_diagnose_single_process_traceback(client: LanguageClient) -> None:
    result = await execute(client, "trainmedic.diagnose", {"text": read("bf16-unsupported.log")})

    assert result["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"
    assert result["initiating_rank"] is None


@pytest.mark.asyncio
async def test_diagnose_selection_publishes_on_the_document(client: LanguageClient,
                                                            tmp_path: Path) -> None:
    uri = (tmp_path / "terminal-output.txt").as_uri()
    start = types.Position(line=100, character=0)
    selection = {"start": {"line": 100, "character": 0}, "end": {"line": 208, "character": 0}}

    result = await execute(client, "trainmedic.diagnose",
                           {"text": read(AMP), "uri": uri, "range": selection})
    published = client.diagnostics[uri]  # published before the answer, on the same stream

    evidence_line = result["diagnoses"][0]["evidence"][0]["line"]
    root = errors(published)
    assert len(root) == 1
    assert root[0].range.start.line == start.line + evidence_line - 1
    assert root[0].code == "amp-loss-scale"
    assert root[0].source == "trainmedic"
    assert root[0].code_description is not None
    assert root[0].code_description.href.endswith("/amp-loss-scale")
    assert root[0].data["verify"] == "trainmedic probe amp"
    assert {"rule_id", "fix", "verify", "role", "rank"} <= root[0].data.keys()
    collateral = [d for d in published if d is not root[0]]
    assert collateral
    for diagnostic in collateral:
        assert diagnostic.severity == types.DiagnosticSeverity.Information
        assert diagnostic.related_information is not None
        assert diagnostic.related_information[0].location.uri == uri
        assert diagnostic.related_information[0].location.range == root[0].range


@pytest.mark.asyncio
@pytest.mark.parametrize("argument", [
    None, "just text", {"txt": "x"}, {"text": 3}, {"text": "x", "uri": 5},
    {"text": "x", "range": {"start": {"line": -1, "character": 0}}},
    {"text": "x", "rulePacks": "not-a-list"},
])
async def test_malformed_arguments_are_invalid_params(client: LanguageClient,
                                                      argument: object) -> None:
    with pytest.raises(JsonRpcInvalidParams):
        await execute(client, "trainmedic.diagnose", argument)
    result = await execute(client, "trainmedic.diagnose", {"text": read("bf16-unsupported.log")})
    assert result["diagnoses"]


@pytest.mark.asyncio
async def test_cancelling_a_diagnosis_stops_it(client: LanguageClient) -> None:
    params = types.ExecuteCommandParams(command="trainmedic.diagnose",
                                        arguments=[{"text": large_log(200_000)}])
    running = asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="big-diagnosis"))
    await asyncio.sleep(0)  # the request goes out
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="big-diagnosis"))

    with pytest.raises(JsonRpcRequestCancelled):
        await running
    await eventually(lambda: bool(logged(client, "trainmedic.diagnose cancelled")))
    result = await execute(client, "trainmedic.diagnose", {"text": read("bf16-unsupported.log")})
    assert result["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"

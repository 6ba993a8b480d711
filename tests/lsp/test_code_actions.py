"""Code actions on a diagnosed line: each hands a command to the client, none runs here."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsp_helpers import errors, next_diagnostics, open_document, read
from lsprotocol import types
from pytest_lsp import LanguageClient


async def code_actions(client: LanguageClient, uri: str,
                       diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    line = diagnostics[0].range.start.line if diagnostics else 0
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=line, character=0),
                          end=types.Position(line=line, character=0)),
        context=types.CodeActionContext(diagnostics=diagnostics)))
    assert all(isinstance(action, types.CodeAction) for action in result or [])
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


@pytest_asyncio.fixture
async def root_cause(client: LanguageClient, tmp_path: Path) -> tuple[str, types.Diagnostic]:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read("amp-loss-scale-3ranks.log"))
    return uri, errors((await next_diagnostics(client, uri)).diagnostics)[0]


def by_command(actions: list[types.CodeAction]) -> dict[str, types.Command]:
    return {a.command.command: a.command for a in actions if a.command is not None}


@pytest.mark.asyncio
async def test_run_verification(client: LanguageClient,
                                root_cause: tuple[str, types.Diagnostic]) -> None:
    uri, diagnostic = root_cause
    command = by_command(await code_actions(client, uri, [diagnostic]))
    assert list(command["trainmedic.runVerification"].arguments or ()) == ["trainmedic probe amp"]


@pytest.mark.asyncio
async def test_copy_fix(client: LanguageClient, root_cause: tuple[str, types.Diagnostic]) -> None:
    uri, diagnostic = root_cause
    command = by_command(await code_actions(client, uri, [diagnostic]))
    fix = command["trainmedic.copyFix"].arguments
    assert fix is not None
    assert "GradScaler" in fix[0]


@pytest.mark.asyncio
async def test_show_entry(client: LanguageClient, root_cause: tuple[str, types.Diagnostic]) -> None:
    uri, diagnostic = root_cause
    command = by_command(await code_actions(client, uri, [diagnostic]))
    assert list(command["trainmedic.showEntry"].arguments or ()) == ["amp-loss-scale"]


@pytest.mark.asyncio
async def test_diagnose_with_rule_pack(client: LanguageClient,
                                       root_cause: tuple[str, types.Diagnostic]) -> None:
    uri, diagnostic = root_cause
    actions = await code_actions(client, uri, [diagnostic])
    assert list(by_command(actions)["trainmedic.diagnoseWithRulePack"].arguments or ()) == [uri]
    assert all(a.kind == types.CodeActionKind.QuickFix and list(a.diagnostics or ()) == [diagnostic]
               for a in actions)


@pytest.mark.asyncio
async def test_no_actions_without_a_trainmedic_diagnostic(
        client: LanguageClient, root_cause: tuple[str, types.Diagnostic]) -> None:
    uri, _ = root_cause
    other = types.Diagnostic(range=types.Range(start=types.Position(line=1, character=0),
                                               end=types.Position(line=1, character=1)),
                             message="from another tool", source="pylint")
    assert await code_actions(client, uri, [other]) == []
    assert await code_actions(client, uri, []) == []

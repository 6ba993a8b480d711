"""Hover on a diagnosed line shows the entry of what was found there."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import next_diagnostics, open_document, read
from lsprotocol import types
from pytest_lsp import LanguageClient


async def hover(client: LanguageClient, uri: str, line: int) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=3)))


@pytest.mark.asyncio
async def test_hover_on_the_root_cause_line(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read("amp-loss-scale-3ranks.log"))
    published = await next_diagnostics(client, uri)
    root = next(d for d in published.diagnostics if d.severity == types.DiagnosticSeverity.Error)

    result = await hover(client, uri, root.range.start.line)

    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    text = result.contents.value
    assert text.startswith("**Root cause: Mixed precision loss scale")
    assert "**Why.**" in text
    assert "GradScaler" in text
    assert "**Fix**" in text
    assert "scaler.update()" in text
    assert "`trainmedic probe amp`" in text                              # verification
    assert "`amp-bf16-vs-fp16`" in text                                  # related entries
    assert "**Evidence lines per rank:** rank 0: " in text               # evidence per rank
    assert "rank 1: " in text
    assert "rank 2: " in text


@pytest.mark.asyncio
async def test_hover_on_a_collateral_line(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read("amp-loss-scale-3ranks.log"))
    published = await next_diagnostics(client, uri)
    line = next(d.range.start.line for d in published.diagnostics
                if d.severity != types.DiagnosticSeverity.Error)

    result = await hover(client, uri, line)
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    assert "**Fix**" in result.contents.value


@pytest.mark.asyncio
async def test_no_hover_off_the_diagnosed_lines(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read("amp-loss-scale-3ranks.log"))
    published = await next_diagnostics(client, uri)
    diagnosed = {d.range.start.line for d in published.diagnostics}
    assert await hover(client, uri, min(set(range(len(diagnosed) + 1)) - diagnosed)) is None
    assert await hover(client, (tmp_path / "never-opened.log").as_uri(), 0) is None

"""A whole editor session never opens a connection: the server runs under an audit hook that
kills it on the first socket connect or name lookup."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from conftest import _client, close
from lsp_helpers import execute, initialize_params, next_diagnostics, open_document, read
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

GUARDED_SERVER = """
import os, sys
def guard(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                 "socket.gethostbyaddr", "socket.sendto", "urllib.Request"):
        sys.stderr.write(f"network access: {event} {args!r}\\n")
        os._exit(99)
sys.addaudithook(guard)
from trainmedic.cli import main
raise SystemExit(main(["lsp"]))
"""


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-c", GUARDED_SERVER], client_factory=_client))
async def guarded(lsp_client: LanguageClient, tmp_path: Path):
    await lsp_client.initialize_session(initialize_params(tmp_path))
    yield
    await close(lsp_client)


@pytest.mark.asyncio
async def test_a_full_session_touches_no_network(guarded: LanguageClient, tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    text = read("amp-loss-scale-3ranks.log")
    log.write_text(text)
    open_document(guarded, log.as_uri(), text)
    published = await next_diagnostics(guarded, log.as_uri())
    error = next(d for d in published.diagnostics
                 if d.severity == types.DiagnosticSeverity.Error)
    hover = await guarded.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=log.as_uri()),
        position=error.range.start))
    assert hover is not None
    result = await execute(guarded, "trainmedic.diagnose", {"text": text})
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    script = tmp_path / "train.py"
    script.write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    guarded.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=script.as_uri(), language_id="python",
                                             version=1, text=script.read_text())))
    checks = await next_diagnostics(guarded, script.as_uri())
    assert [d.code for d in checks.diagnostics] == ["TM101"]
    assert not guarded.stopped

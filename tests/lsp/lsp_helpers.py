"""What the end-to-end tests do over and over: read a fixture, open it, wait, run a command."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"
TIMEOUT = 30.0


def initialize_params(root: Path, options: Any = None) -> types.InitializeParams:
    """What VS Code sends, for a workspace folder at `root`."""
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options)


def read(name: str) -> str:
    return (FIXTURES / name).read_text("utf-8")


def large_log(lines: int) -> str:
    """A long healthy two-rank run (real lines, repeated) that ends in the real fp16 failure."""
    healthy = read("healthy-2ranks.log").splitlines()
    failing = read("amp-loss-scale-3ranks.log").splitlines()
    body = (healthy * (lines // len(healthy) + 1))[: lines - len(failing)]
    return "\n".join(body + failing) + "\n"


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="log", version=version,
                                             text=text)))


async def next_diagnostics(client: LanguageClient, uri: str,
                           timeout: float = TIMEOUT) -> types.PublishDiagnosticsParams:
    """The next diagnostics the server publishes for `uri`."""
    async def wait() -> types.PublishDiagnosticsParams:
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                return params

    return await asyncio.wait_for(wait(), timeout)


async def eventually(condition: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Wait until `condition()` holds: for states reached through several notifications, which
    `wait_for_notification` could miss between two waits."""
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments)))


def errors(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]


def logged(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.log_messages if text in m.message]


def process_runs(pid: int) -> bool:
    """Whether process `pid` runs (from /proc: a zombie has exited, only not been waited for)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

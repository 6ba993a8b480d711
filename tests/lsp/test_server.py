"""Start, initialize, shut down; the CLI without the LSP stack; features that fail."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_helpers import FIXTURES, eventually, initialize_params
from lsprotocol import types
from pytest_lsp import LanguageClient

from trainmedic.lsp.features import FEATURES
from trainmedic.lsp.server import ClientLogHandler, create_server

SERVER_COMMANDS = {"trainmedic.diagnose", "trainmedic.explain", "trainmedic.listRules",
                   "trainmedic.reloadRules", "trainmedic.check",
                   "trainmedic.testRuleFile"}


@pytest.mark.asyncio
async def test_initialize_and_shutdown(bare_client: LanguageClient, tmp_path: Path) -> None:
    result = await bare_client.initialize_session(initialize_params(tmp_path))

    assert result.server_info is not None
    assert result.server_info.name == "trainmedic"
    capabilities = result.capabilities
    assert capabilities.hover_provider
    assert isinstance(capabilities.code_action_provider, types.CodeActionOptions)
    assert list(capabilities.code_action_provider.code_action_kinds or ()) == ["quickfix"]
    # Only the server's own commands: the client implements runVerification, copyFix, ...
    assert capabilities.execute_command_provider is not None
    assert set(capabilities.execute_command_provider.commands) == SERVER_COMMANDS

    await bare_client.shutdown_session()
    await eventually(lambda: bare_client.stopped)  # the process exits on `exit`


def test_diagnose_command_does_not_load_the_lsp_stack() -> None:
    code = ("import sys; from trainmedic.cli import main; "
            f"main(['diagnose', {str(FIXTURES / 'bf16-unsupported.log')!r}, '--format', 'json']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out[: out.rindex("}") + 1])["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"
    assert out.rstrip().endswith("[]")


def test_lsp_subcommand_is_documented() -> None:
    out = subprocess.run([sys.executable, "-m", "trainmedic", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "lsp" in out


def test_a_feature_that_fails_to_load_is_logged_and_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="trainmedic"):
        ls = create_server([*FEATURES, "trainmedic.lsp.features.no_such_feature"])
    assert "no_such_feature failed to load" in caplog.text
    assert "trainmedic.diagnose" in ls.protocol.fm.commands


def test_each_server_is_fresh() -> None:
    one, two = create_server(), create_server()
    assert one is not two
    assert one.published is not two.published


@pytest.mark.asyncio
async def test_a_failing_handler_is_logged_and_the_others_still_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    ls = create_server(())

    def broken(params: object) -> list[str]:
        raise RuntimeError("boom")

    ls.on("trainmedic/test", broken)
    ls.on("trainmedic/test", lambda params: ["still here"])
    with caplog.at_level(logging.ERROR, logger="trainmedic"):
        assert await ls.dispatch("trainmedic/test", None) == ["still here"]
    assert "boom" in caplog.text


def test_logging_to_a_client_that_has_gone_does_not_loop() -> None:
    ls = create_server(())
    attempts = []

    class Gone:
        def write(self, data: bytes) -> None:
            attempts.append(data)
            raise ValueError("I/O operation on closed file")

        def close(self) -> None:
            pass

    ls.protocol.set_writer(Gone())
    package = logging.getLogger("trainmedic")  # where `serve` attaches it
    handler = ClientLogHandler(ls)
    package.addHandler(handler)
    try:
        logging.getLogger("trainmedic.test").error("a record the client will never see")
    finally:
        package.removeHandler(handler)
    assert 1 <= len(attempts) <= 3

"""The real server process (`python -m trainmedic lsp`) driven by a client with VS Code's
capabilities, in a workspace folder of its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Union

import cattrs
import pytest
import pytest_lsp
from lsp_helpers import initialize_params
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features


def _converter() -> cattrs.Converter:
    """pygls' converter, reading code actions right: lsprotocol 2025.0.0 takes any object with
    a `command` key for a Command, so a CodeAction that carries one would come back mangled."""
    converter = default_converter()

    def command_or_action(value: Any, _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(value.get("command"), str) else types.CodeAction
        return converter.structure(value, kind)

    converter.register_structure_hook(Union[types.Command, types.CodeAction],  # noqa: UP007
                                      command_or_action)
    return converter


def _client() -> LanguageClient:
    client = LanguageClient(converter_factory=_converter)
    register_lsp_features(client)
    return client


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "trainmedic", "lsp"],
                            client_factory=_client)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "settings(options): the initializationOptions the client starts with")
    config.addinivalue_line(
        "markers", "configuration(section): the client's answer to workspace/configuration")


@pytest.fixture
def registrations() -> list[types.Registration]:
    """What the server asked the client to register (file watchers)."""
    return []


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, tmp_path: Path,
                 registrations: list[types.Registration]):
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    @lsp_client.feature(types.CLIENT_UNREGISTER_CAPABILITY)
    def unregister_capability(params: types.UnregistrationParams) -> None:
        gone = {u.id for u in params.unregisterations}
        registrations[:] = [r for r in registrations if r.id not in gone]

    configuration = request.node.get_closest_marker("configuration")
    if configuration is not None:
        lsp_client.set_configuration(configuration.args[0], section="trainmedic")
    settings = request.node.get_closest_marker("settings")
    await lsp_client.initialize_session(
        initialize_params(tmp_path, settings.args[0] if settings else None))
    yield
    await close(lsp_client)


@pytest_lsp.fixture(config=SERVER)
async def bare_client(lsp_client: LanguageClient):
    """A server that has been started but not initialized."""
    yield
    await close(lsp_client)


async def close(client: LanguageClient) -> None:
    """Stop the server whatever state the test left it in, so the process always exits."""
    if client.stopped:
        return
    if client.capabilities is None:
        client.exit(None)
    else:
        await client.shutdown_session()

"""Settings: initializationOptions, workspace/configuration and didChangeConfiguration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from lsp_helpers import eventually, logged, next_diagnostics, open_document, read
from lsprotocol import types
from pytest_lsp import LanguageClient

AMP = "amp-loss-scale-3ranks.log"


def severities(diagnostics: Sequence[types.Diagnostic]) -> set[types.DiagnosticSeverity]:
    """The severities of the collateral lines."""
    return {d.severity for d in diagnostics
            if d.severity != types.DiagnosticSeverity.Error and d.severity is not None}


async def until_severity(client: LanguageClient, uri: str,
                         severity: types.DiagnosticSeverity) -> None:
    await eventually(lambda: severities(client.diagnostics.get(uri, ())) == {severity})


@pytest.mark.asyncio
@pytest.mark.settings({"collateralSeverity": "loud", "logGlobs": "*.log", "diagnoseOnOpen": 1})
async def test_invalid_settings_are_reported_and_defaults_used(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read(AMP))
    published = await next_diagnostics(client, uri)  # diagnoseOnOpen and logGlobs: defaults

    assert severities(published.diagnostics) == {types.DiagnosticSeverity.Information}
    for key in ("collateralSeverity", "logGlobs", "diagnoseOnOpen"):
        assert logged(client, f"trainmedic.{key} has an invalid value")


@pytest.mark.asyncio
@pytest.mark.settings(["not", "an", "object"])
async def test_settings_that_are_not_an_object_are_reported(client: LanguageClient) -> None:
    assert logged(client, "expected an object of trainmedic settings")


@pytest.mark.asyncio
@pytest.mark.settings({"collateralSeverity": "hint"})
async def test_initialization_options_apply(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read(AMP))
    assert severities((await next_diagnostics(client, uri)).diagnostics) == \
        {types.DiagnosticSeverity.Hint}


@pytest.mark.asyncio
@pytest.mark.configuration({"collateralSeverity": "warning"})
async def test_workspace_configuration_is_read_after_initialized(client: LanguageClient,
                                                                 tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read(AMP))
    await until_severity(client, uri, types.DiagnosticSeverity.Warning)


@pytest.mark.asyncio
async def test_a_pushed_change_rediagnoses_open_logs(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    uri = (tmp_path / "run.log").as_uri()
    open_document(client, uri, read(AMP))
    await next_diagnostics(client, uri)

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"trainmedic": {"collateralSeverity": "warning"}}))
    await until_severity(client, uri, types.DiagnosticSeverity.Warning)


@pytest.mark.asyncio
async def test_a_change_without_values_pulls_them(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "run.txt").as_uri()
    open_document(client, uri, read(AMP))
    client.set_configuration({"logGlobs": ["**/*.txt"]}, section="trainmedic")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    assert (await next_diagnostics(client, uri)).diagnostics  # a .txt log now

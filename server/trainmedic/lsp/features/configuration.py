"""Settings from the client: initializationOptions, then workspace/configuration and changes.

The client sends the `trainmedic` section with camelCase keys. An invalid value is reported in
the output channel and that setting keeps its default. Rule packs are configured only when the
client says the workspace is trusted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types

from trainmedic.lsp.server import SETTINGS_CHANGED, TrainmedicServer

logger = logging.getLogger(__name__)

SECTION = "trainmedic"


def pack_directories(ls: TrainmedicServer) -> list[Path]:
    """The configured rule packs, when trusted; relative ones from the workspace folder."""
    settings = ls.settings
    if not settings.workspace_trusted:
        if settings.rule_packs:
            logger.info("rule packs not loaded: the workspace is not trusted")
        return []
    root = ls.workspace.root_path
    found = []
    for text in settings.rule_packs:
        path = Path(os.path.expanduser(text))
        found.append(path if path.is_absolute() or root is None else Path(root) / path)
    return found


async def apply(ls: TrainmedicServer, data: Any, origin: str) -> None:
    """Apply one `trainmedic` section; features hear of it only when something changed."""
    if data is None:
        return
    if not isinstance(data, Mapping):
        logger.warning("%s: expected an object of trainmedic settings, got %.80r; "
                       "keeping the current settings", origin, data)
        return
    settings, problems = ls.settings.updated(data)
    for problem in problems:
        logger.warning("%s: %s", origin, problem)
    if settings == ls.settings:
        return
    ls.settings = settings
    ls.rules.configure(pack_directories(ls))
    await ls.dispatch(SETTINGS_CHANGED, settings)


async def pull(ls: TrainmedicServer) -> None:
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    items = await ls.workspace_configuration_async(types.ConfigurationParams(
        items=[types.ConfigurationItem(section=SECTION)]))
    await apply(ls, items[0] if items else None, "workspace/configuration")


def register(ls: TrainmedicServer) -> None:
    async def initialize(params: types.InitializeParams) -> None:
        await apply(ls, params.initialization_options, "initializationOptions")

    async def initialized(params: types.InitializedParams) -> None:
        await pull(ls)

    async def changed(params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get(SECTION) if isinstance(params.settings, Mapping) else None
        if pushed is not None:
            await apply(ls, pushed, "workspace/didChangeConfiguration")
        else:
            await pull(ls)

    ls.on(types.INITIALIZE, initialize)
    ls.on(types.INITIALIZED, initialized)
    ls.on(types.WORKSPACE_DID_CHANGE_CONFIGURATION, changed)

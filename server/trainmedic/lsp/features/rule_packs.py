"""The catalogue for the client: explain, listRules, reloadRules, and reloading changed packs.

Pack files are also checked before every diagnosis (`RulePacks.current`); watching them here
re-diagnoses the open logs as soon as a rule is saved.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from trainmedic.lsp.server import RULES_CHANGED, SETTINGS_CHANGED, TrainmedicServer
from trainmedic.render.markdown import rule_markdown

logger = logging.getLogger(__name__)

RULE_FILES = "**/*.{yaml,yml}"


class _Watcher:
    """Asks the client to watch the configured pack folders, when it can register watchers."""

    def __init__(self, ls: TrainmedicServer) -> None:
        self.ls = ls
        self.ready = False  # the client accepts requests only after `initialized`
        self.registration: str | None = None

    async def sync(self) -> None:
        workspace = self.ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if not (self.ready and watched and watched.dynamic_registration):
            return
        method = types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        if self.registration is not None:
            await self.ls.client_unregister_capability_async(types.UnregistrationParams(
                unregisterations=[types.Unregistration(id=self.registration, method=method)]))
            self.registration = None
        directories = [d.absolute() for d in self.ls.rules.directories]
        if not directories:
            return
        watchers = [types.FileSystemWatcher(glob_pattern=(
            types.RelativePattern(base_uri=d.as_uri(), pattern=RULE_FILES)
            if watched.relative_pattern_support else f"{d.as_posix()}/{RULE_FILES}"))
            for d in directories]
        registration = str(uuid.uuid4())
        await self.ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(id=registration, method=method,
                               register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                   watchers=watchers))]))
        self.registration = registration


def _rule_id(args: tuple[object, ...]) -> str:
    if len(args) != 1 or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("trainmedic.explain expects [rule_id: string]")
    return args[0]


def explain(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    rule_id = _rule_id(args)
    rule = ls.rules.current()[0].get(rule_id)
    if rule is None:
        raise JsonRpcInvalidParams(f"no rule with id {rule_id!r}")
    return {"id": rule.id, "title": rule.title, "markdown": rule_markdown(rule)}


def list_rules(ls: TrainmedicServer, *args: object) -> list[dict[str, Any]]:
    return [{"id": r.id, "title": r.title, "category": r.category, "role": r.role.value}
            for r in ls.rules.current()[0].rules]


async def reload_rules(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    catalogue, _ = ls.rules.reload()
    logger.info("reloaded %d rules", len(catalogue.rules))
    await ls.dispatch(RULES_CHANGED, None)
    return {"rules": len(catalogue.rules)}


def register(ls: TrainmedicServer) -> None:
    watcher = _Watcher(ls)

    async def initialized(params: types.InitializedParams) -> None:
        ls.rules.current()  # load and compile now, not on the first diagnosis
        watcher.ready = True
        await watcher.sync()

    async def files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        paths = [Path(p) for p in (to_fs_path(c.uri) for c in params.changes) if p]
        packs = [d.absolute() for d in ls.rules.directories]
        if any(pack in path.absolute().parents for path in paths for pack in packs):
            ls.rules.reload()
            logger.info("rule packs changed on disk: reloaded")
            await ls.dispatch(RULES_CHANGED, None)

    async def settings_changed(params: object) -> None:
        await watcher.sync()

    ls.on(types.INITIALIZED, initialized)
    ls.on(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, files_changed)
    ls.on(SETTINGS_CHANGED, settings_changed)
    ls.command("trainmedic.explain")(explain)
    ls.command("trainmedic.listRules")(list_rules)
    ls.command("trainmedic.reloadRules")(reload_rules)

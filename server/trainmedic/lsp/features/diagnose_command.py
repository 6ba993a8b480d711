"""`trainmedic.diagnose`: diagnose text the client sends (a selection, a terminal's output).

Argument: `{"text": str, "uri"?: str, "range"?: Range, "rulePacks"?: [dir]}`. The answer is the
JSON of `trainmedic diagnose --format json` (evidence lines counted within `text`) plus
`markdown`. With `uri`, the diagnosis is also published on that document, `range.start` placing
the text in it. `rulePacks` diagnoses with extra packs for this call only, which is how the
client's "diagnose again with a rule pack" works; it is refused unless the workspace is
trusted, like the configured packs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from trainmedic.catalogue.rules import Catalogue, RuleError
from trainmedic.lsp import jobs
from trainmedic.lsp.active_catalogue import layered
from trainmedic.lsp.conversions import LineMap, publishable
from trainmedic.lsp.server import TrainmedicServer
from trainmedic.render.json import to_dict
from trainmedic.render.markdown import diagnosis_markdown

logger = logging.getLogger(__name__)

COMMAND = "trainmedic.diagnose"
USAGE = f'{COMMAND} expects [{{"text": string, "uri"?: string, "range"?: Range, ' \
        '"rulePacks"?: string[]}]'


@dataclass(frozen=True)
class Request:
    text: str
    uri: str | None
    start: types.Position
    rule_packs: tuple[str, ...]


def _position(value: Any) -> types.Position:
    if isinstance(value, dict) and all(isinstance(value.get(k), int) and value[k] >= 0
                                       for k in ("line", "character")):
        return types.Position(line=value["line"], character=value["character"])
    raise JsonRpcInvalidParams(f"{USAGE}: range.start must be {{line, character}} >= 0")


def parse(args: tuple[object, ...]) -> Request:
    """The command's one argument, checked; a wrong one is an Invalid Params error."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(USAGE)
    request: dict[str, Any] = args[0]
    text, uri, where = request.get("text"), request.get("uri"), request.get("range")
    packs = request.get("rulePacks", [])
    if not isinstance(text, str):
        raise JsonRpcInvalidParams(f"{USAGE}: text must be a string")
    if uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{USAGE}: uri must be a string")
    if not (isinstance(packs, list) and all(isinstance(p, str) for p in packs)):
        raise JsonRpcInvalidParams(f"{USAGE}: rulePacks must be a list of folders")
    start = types.Position(line=0, character=0)
    if where is not None:
        start = _position(where.get("start") if isinstance(where, dict) else None)
    return Request(text, uri, start, tuple(packs))


def _with_packs(ls: TrainmedicServer, directories: tuple[str, ...]) -> Catalogue | None:
    if not directories:
        return None
    if not ls.settings.workspace_trusted:  # a pack's patterns run on whatever is diagnosed
        raise JsonRpcInvalidParams("rulePacks are not applied: the workspace is not trusted")

    def fail(error: RuleError) -> None:
        raise JsonRpcInvalidParams(f"invalid rule: {error}")

    return layered(ls.rules.current()[0], (Path(d) for d in directories), fail)


async def diagnose(ls: TrainmedicServer, *args: object) -> dict[str, Any] | None:
    """The diagnosis; None when cancelled, which pygls has already answered."""
    request = parse(args)
    catalogue = _with_packs(ls, request.rule_packs)
    path = (to_fs_path(request.uri) or request.uri) if request.uri else "<text>"
    with ls.cancellation() as cancel:
        try:
            diagnosis, catalogue = await jobs.run(ls, request.text, path, cancel,
                                                  "trainmedic: diagnosing", catalogue)
        except jobs.Cancelled:
            logger.info("%s cancelled", COMMAND)
            return None
    result = to_dict(diagnosis, catalogue)
    result["markdown"] = diagnosis_markdown(diagnosis, catalogue)
    if request.uri is not None:
        document = ls.workspace.text_documents.get(request.uri)
        lines = LineMap(request.text, request.start, ls.workspace.position_codec)
        ls.publish(request.uri, publishable(diagnosis, catalogue, request.uri, lines,
                                            ls.settings.collateral_severity),
                   document.version if document is not None else None)
    return result


def register(ls: TrainmedicServer) -> None:
    ls.command(COMMAND)(diagnose)

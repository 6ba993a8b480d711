"""`trainmedic.diagnose`: diagnose text the client sends (a selection, a terminal's output),
or files and folders the server reads from disk.

Argument: `{"text": str, "uri"?: str, "range"?: Range, "rulePacks"?: [dir]}`, or
`{"paths": [file or folder], "maxBytes"?: int, "ifLog"?: bool, "rulePacks"?: [dir]}`.
The answer is the JSON of `trainmedic diagnose --format json` plus `markdown`.

For `text`, evidence lines are counted within it; with `uri`, the diagnosis is also published
on that document, `range.start` placing the text in it.

`paths` are read by the CLI's own input code (folders walked, ranks from file names, launcher
error files, `maxBytes` of each file as `--max-bytes`), so the answer is the CLI's; it adds
`warnings` (what reading skipped or cut), and the diagnosis is published on every file it
cites. Logs too big for the editor to send go this way. `ifLog` is the client opening such a
file: it is diagnosed only when a log opened would be (`logGlobs`, `diagnoseOnOpen`), and the
answer is null otherwise.

`rulePacks` diagnoses with extra packs for this call only, which is how the client's
"diagnose again with a rule pack" works; it is refused unless the workspace is trusted, like
the configured packs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from trainmedic.catalogue.rules import Catalogue, RuleError
from trainmedic.events.parallel import WorkerError
from trainmedic.logs.inputs import InputError
from trainmedic.lsp import jobs
from trainmedic.lsp.active_catalogue import layered
from trainmedic.lsp.conversions import LineIndex, LineMap, publishable
from trainmedic.lsp.server import JsonAnswer, TrainmedicServer
from trainmedic.render.json import to_dict
from trainmedic.render.markdown import diagnosis_markdown

logger = logging.getLogger(__name__)

COMMAND = "trainmedic.diagnose"
USAGE = f'{COMMAND} expects [{{"text": string, "uri"?: string, "range"?: Range, ' \
        '"rulePacks"?: string[]}] or [{"paths": string[], "maxBytes"?: integer, ' \
        '"ifLog"?: boolean, "rulePacks"?: string[]}]'
WORKER_DIED = "a worker process died reading the logs, perhaps out of memory; not diagnosed"


@dataclass(frozen=True)
class Request:
    text: str | None  # None: `paths` are read from disk
    uri: str | None
    start: types.Position
    rule_packs: tuple[str, ...]
    paths: tuple[str, ...] = ()
    max_bytes: int | None = None
    if_log: bool = False


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
    if not (isinstance(packs, list) and all(isinstance(p, str) for p in packs)):
        raise JsonRpcInvalidParams(f"{USAGE}: rulePacks must be a list of folders")
    if "paths" in request:
        return _paths_request(request, tuple(packs))
    if not isinstance(text, str):
        raise JsonRpcInvalidParams(f"{USAGE}: text must be a string")
    if uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{USAGE}: uri must be a string")
    start = types.Position(line=0, character=0)
    if where is not None:
        start = _position(where.get("start") if isinstance(where, dict) else None)
    return Request(text, uri, start, tuple(packs))


def _paths_request(request: dict[str, Any], packs: tuple[str, ...]) -> Request:
    paths, max_bytes, if_log = request["paths"], request.get("maxBytes"), request.get("ifLog")
    if "text" in request:
        raise JsonRpcInvalidParams(f"{USAGE}: text or paths, not both")
    if not (isinstance(paths, list) and paths and all(isinstance(p, str) and p for p in paths)):
        raise JsonRpcInvalidParams(f"{USAGE}: paths must be a non-empty list of files or folders")
    if max_bytes is not None and not (isinstance(max_bytes, int) and
                                      not isinstance(max_bytes, bool) and max_bytes > 0):
        raise JsonRpcInvalidParams(f"{USAGE}: maxBytes must be a positive integer")
    if if_log is not None and not isinstance(if_log, bool):
        raise JsonRpcInvalidParams(f"{USAGE}: ifLog must be true or false")
    return Request(None, None, types.Position(line=0, character=0), packs, tuple(paths),
                   max_bytes, bool(if_log))


def _with_packs(ls: TrainmedicServer, directories: tuple[str, ...]) -> Catalogue | None:
    if not directories:
        return None
    if not ls.settings.workspace_trusted:  # a pack's patterns run on whatever is diagnosed
        raise JsonRpcInvalidParams("rulePacks are not applied: the workspace is not trusted")

    def fail(error: RuleError) -> None:
        raise JsonRpcInvalidParams(f"invalid rule: {error}")

    return layered(ls.rules.current()[0], (Path(d) for d in directories), fail)


def _absolute(ls: TrainmedicServer, path: str) -> str:
    """A path as given, or under the workspace's root when relative."""
    root = ls.workspace.root_path
    return str(Path(root, path)) if root and not Path(path).is_absolute() else path


async def _diagnose_paths(ls: TrainmedicServer, request: Request,
                          catalogue: Catalogue | None) -> dict[str, Any] | None:
    paths = [_absolute(ls, p) for p in request.paths]
    if request.if_log and not all(ls.diagnoses_on_open(from_fs_path(p) or p) for p in paths):
        return None
    with ls.cancellation() as cancel:
        try:
            found = await jobs.run_paths(ls, paths, request.max_bytes, cancel,
                                         "trainmedic: diagnosing", catalogue)
        except jobs.Cancelled:
            logger.info("%s cancelled", COMMAND)
            return None
        except InputError as error:
            raise JsonRpcInvalidParams(str(error)) from None
        except WorkerError:
            raise JsonRpcException(WORKER_DIED, types.LSPErrorCodes.RequestFailed) from None
    for warning in found.warnings:
        logger.warning("%s", warning)
    diagnosis, catalogue = found.diagnosis, found.catalogue
    result = JsonAnswer(to_dict(diagnosis, catalogue))
    result["markdown"] = diagnosis_markdown(diagnosis, catalogue)
    result["warnings"] = list(found.warnings)
    cited = {line.path for finding in diagnosis.findings for line in finding.evidence}
    cited |= {failure.line.path for failure in diagnosis.unexplained}
    # Each cited file gets its own lines' diagnostics, placed by line number: the file was read
    # from disk, not sent, so no text maps lone carriage returns (which the editor also breaks
    # lines at) and reading it again to find them would double the cost of a big log.
    for path in sorted(cited & set(found.files)):
        uri = from_fs_path(path) or path
        document = ls.workspace.text_documents.get(uri)
        ls.publish(uri, publishable(diagnosis, catalogue, uri, LineIndex(
            ls.workspace.position_codec), ls.settings.collateral_severity, path),
            document.version if document is not None else None)
    return result


async def diagnose(ls: TrainmedicServer, *args: object) -> dict[str, Any] | None:
    """The diagnosis; None when cancelled, which pygls has already answered."""
    request = parse(args)
    catalogue = _with_packs(ls, request.rule_packs)
    if request.text is None:
        return await _diagnose_paths(ls, request, catalogue)
    path = (to_fs_path(request.uri) or request.uri) if request.uri else "<text>"
    with ls.cancellation() as cancel:
        try:
            diagnosis, catalogue = await jobs.run(ls, request.text, path, cancel,
                                                  "trainmedic: diagnosing", catalogue)
        except jobs.Cancelled:
            logger.info("%s cancelled", COMMAND)
            return None
    result = JsonAnswer(to_dict(diagnosis, catalogue))
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

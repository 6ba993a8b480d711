"""Commands over files on disk, for the client's language-model tools: `trainmedic.check`
checks scripts and configs, `trainmedic.diagnosePaths` diagnoses log files or folders.

Argument: `{"paths": [str]}`. Answers: the JSON of `trainmedic check --format json` plus
`report` (one line per finding), and the JSON of `trainmedic diagnose --format json` plus
`markdown`. Files are read where they are, as the command line reads them, in a worker
thread; a bad path is an Invalid Params error whose message says which.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from trainmedic.catalogue.rules import Catalogue
from trainmedic.checks.command import check_all, render_text, results_dict
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.inputs import InputError, expand, opened
from trainmedic.lsp.server import TrainmedicServer
from trainmedic.matching.python import Matcher
from trainmedic.render.json import to_dict
from trainmedic.render.markdown import diagnosis_markdown


def paths_argument(command: str, args: tuple[object, ...]) -> list[str]:
    request = args[0] if len(args) == 1 else None
    paths = request.get("paths") if isinstance(request, dict) else None
    if not (isinstance(paths, list) and paths and all(isinstance(p, str) and p for p in paths)):
        raise JsonRpcInvalidParams(f'{command} expects [{{"paths": [string, ...]}}]')
    return [os.path.expanduser(p) for p in paths]


def _check(paths: list[str]) -> dict[str, Any]:
    try:
        run = check_all(paths, fix=False)
    except (InputError, OSError) as error:
        raise JsonRpcInvalidParams(str(error)) from None
    results = list(run.results)
    return {**results_dict(results), "report": render_text(results), "notes": list(run.notes)}


def _diagnose(paths: list[str], catalogue: Catalogue, matcher: Matcher) -> dict[str, Any]:
    try:
        files, warnings = expand(paths)
        with opened(files) as streams:
            diagnosis = diagnose(streams, catalogue, matcher)
    except (InputError, OSError) as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return {**to_dict(diagnosis, catalogue), "markdown": diagnosis_markdown(diagnosis, catalogue),
            "notes": [*warnings, *streams.warnings]}


async def check_paths(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    paths = paths_argument("trainmedic.check", args)
    return await asyncio.get_running_loop().run_in_executor(ls.jobs, _check, paths)


async def diagnose_paths(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    paths = paths_argument("trainmedic.diagnosePaths", args)
    catalogue, matcher = ls.rules.current()  # on the event loop, where the packs reload
    return await asyncio.get_running_loop().run_in_executor(ls.jobs, _diagnose, paths,
                                                            catalogue, matcher)


def register(ls: TrainmedicServer) -> None:
    ls.command("trainmedic.check")(check_paths)
    ls.command("trainmedic.diagnosePaths")(diagnose_paths)

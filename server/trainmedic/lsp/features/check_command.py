"""`trainmedic.check`: check scripts, configs and notebooks on disk, for the client's
language-model tools (logs on disk go to `trainmedic.diagnose` with `paths`).

Argument: `{"paths": [str]}`. Answer: the JSON of `trainmedic check --format json` plus
`report` (one line per finding) and `notes`. Files are read where they are, as the command
line reads them, in a worker thread; a bad path is an Invalid Params error whose message says
which.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from trainmedic.checks.command import check_all, render_text, results_dict
from trainmedic.logs.inputs import InputError
from trainmedic.lsp.server import JsonAnswer, TrainmedicServer


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
    return JsonAnswer(results_dict(results), report=render_text(results), notes=list(run.notes))


async def check_paths(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    paths = paths_argument("trainmedic.check", args)
    return await asyncio.get_running_loop().run_in_executor(ls.jobs, _check, paths)


def register(ls: TrainmedicServer) -> None:
    ls.command("trainmedic.check")(check_paths)

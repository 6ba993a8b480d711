"""`trainmedic.testRuleFile`: check one rule file of a pack as its author saves it.

Argument: `{"path": str}`, a rule at `<pack>/<category>/<id>.yaml`. The pack is loaded as
`--rules <pack>` loads it (schema, id and category against the file's place, patterns), then
the rule's own examples run through the engine, as `trainmedic rules test` runs them. The
answer is `{"rule_id": str | None, "problems": [{"path", "line" (1-based or null),
"message"}]}`: none when the rule loads and its examples behave.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from trainmedic.catalogue.load import load_pack
from trainmedic.catalogue.rules import Catalogue, RuleError
from trainmedic.lsp.server import TrainmedicServer

USAGE = 'trainmedic.testRuleFile expects [{"path": string}] (a <pack>/<category>/<id>.yaml file)'


def _rule_path(args: tuple[object, ...]) -> Path:
    request = args[0] if len(args) == 1 else None
    given = request.get("path") if isinstance(request, dict) else None
    if not isinstance(given, str) or not given.endswith((".yaml", ".yml")):
        raise JsonRpcInvalidParams(USAGE)
    return Path(given).absolute()


def check_rule_file(path: Path, bundled: Catalogue) -> dict[str, Any]:
    try:
        pack = load_pack(path.parent.parent)
    except RuleError as error:
        return {"rule_id": None, "problems": [
            {"path": error.path, "line": error.line, "message": f"{error.field_name}: "
                                                                f"{error.reason}"}]}
    # A rule's id is its file's stem (the pack would not have loaded otherwise).
    rule = next((r for r in pack.rules if r.id == path.stem), None)
    if rule is None:
        return {"rule_id": None, "problems": [
            {"path": str(path), "line": None, "message": "not a rule of its pack"}]}
    from trainmedic.diagnosis.selftest import self_test  # the engine: not needed to start

    result = self_test(rule, bundled.merged(pack))
    return {"rule_id": rule.id, "problems": [
        {"path": str(path), "line": None, "message": f"examples: {failure}"}
        for failure in result.failures]}


async def rule_file_command(ls: TrainmedicServer, *args: object) -> dict[str, Any]:
    path = _rule_path(args)
    bundled = ls.rules.bundled
    return await asyncio.get_running_loop().run_in_executor(ls.jobs, check_rule_file, path,
                                                            bundled)


def register(ls: TrainmedicServer) -> None:
    ls.command("trainmedic.testRuleFile")(rule_file_command)

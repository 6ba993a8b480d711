"""Code actions on diagnosed log lines, each a command the client carries out.

The server never runs a verification command: it hands the command to the client's
`trainmedic.runVerification`, which shows it in a terminal when the user asks.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from trainmedic.lsp.conversions import SOURCE
from trainmedic.lsp.server import TrainmedicServer

KIND = types.CodeActionKind.QuickFix


def _action(title: str, command: str, argument: str,
            diagnostic: types.Diagnostic) -> types.CodeAction:
    return types.CodeAction(title=title, kind=KIND, diagnostics=[diagnostic],
                            command=types.Command(title=title, command=command,
                                                  arguments=[argument]))


def actions(uri: str, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    """Per rule: run its verification, copy its fix, open its entry; then one re-diagnose."""
    found: list[types.CodeAction] = []
    seen: set[str] = set()
    last: types.Diagnostic | None = None
    for diagnostic in diagnostics:
        data: Any = diagnostic.data
        if diagnostic.source != SOURCE or not isinstance(data, dict) or "rule_id" not in data:
            continue
        last = diagnostic
        rule_id = str(data["rule_id"])
        if rule_id in seen:
            continue
        seen.add(rule_id)
        if data.get("verify"):
            found.append(_action(f"Run verification: {data['verify']}",
                                 "trainmedic.runVerification", str(data["verify"]), diagnostic))
        if data.get("fix"):
            found.append(_action(f"Copy the fix for {rule_id}", "trainmedic.copyFix",
                                 str(data["fix"]), diagnostic))
        found.append(_action(f"Open the catalogue entry {rule_id}", "trainmedic.showEntry",
                             rule_id, diagnostic))
    if last is not None:
        found.append(_action("Diagnose again with a rule pack…",
                             "trainmedic.diagnoseWithRulePack", uri, last))
    return found


def register(ls: TrainmedicServer) -> None:
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return actions(params.text_document.uri, list(params.context.diagnostics)) or None

    ls.on(types.TEXT_DOCUMENT_CODE_ACTION, code_action,
          types.CodeActionOptions(code_action_kinds=[KIND]))

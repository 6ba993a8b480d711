"""The server's features: one module each, applied in order by `create_server()`.

To add a feature, write `features/<name>.py` with

    def register(ls: TrainmedicServer) -> None:
        ls.on(types.TEXT_DOCUMENT_HOVER, hover)              # an LSP method, or a server event
        ls.command("trainmedic.verbObject")(verb_object)     # a workspace/executeCommand command

add its module name to `FEATURES`, and add a pytest-lsp test under tests/lsp/.

`register` keeps any per-server state in local objects (never at module level) and subscribes
with `ls.on(method, handler, options)`, not with pygls' `@ls.feature`: several features may
need the same method (didOpen for logs and for training scripts; hover and code actions on
both), and `ls.on` lets them share it. A handler receives the params and may be async. A
command is `def verb_object(ls: TrainmedicServer, *args: object)`, checks its own arguments
and raises `JsonRpcInvalidParams` for bad ones. A feature whose `register` raises, or whose
handler raises, is logged and the server carries on without it.

Server events: `SETTINGS_CHANGED` (params: the new `Settings`) and `RULES_CHANGED` (params:
None), from `trainmedic.lsp.server`. Shared state lives on the server: `ls.settings`,
`ls.rules` (the catalogue), `ls.published` (the last diagnosis published per log document).
"""

FEATURES = (
    "trainmedic.lsp.features.configuration",  # first: settings are read before the others act
    "trainmedic.lsp.features.rule_packs",
    "trainmedic.lsp.features.diagnose_command",
    "trainmedic.lsp.features.log_diagnostics",
    "trainmedic.lsp.features.hover",
    "trainmedic.lsp.features.code_actions",
    "trainmedic.lsp.features.script_checks",
    "trainmedic.lsp.features.notebook_checks",
    "trainmedic.lsp.features.check_command",
    "trainmedic.lsp.features.rule_authoring",
)

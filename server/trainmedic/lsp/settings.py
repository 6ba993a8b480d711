"""What the client configures, typed: `trainmedic.<camelCase>` on the wire, snake_case here.

The defaults equal those of the extension's package.json. A value of the wrong type is
reported and that setting keeps its default; one bad setting never stops the server.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from trainmedic.lsp.log_globs import glob_problem

CollateralSeverity = Literal["information", "hint", "warning"]

DEFAULT_LOG_GLOBS = ("**/*.log", "**/*.out", "**/*.err", "**/slurm-*.out")


@dataclass(frozen=True)
class Settings:
    rule_packs: tuple[str, ...] = ()
    log_globs: tuple[str, ...] = DEFAULT_LOG_GLOBS
    diagnose_on_open: bool = True
    follow_logs: bool = True
    collateral_severity: CollateralSeverity = "information"
    script_checks: bool = True
    # Set by the client from VS Code's Workspace Trust; rule packs load only when true.
    workspace_trusted: bool = False

    def updated(self, data: Mapping[str, Any]) -> tuple[Settings, list[str]]:
        """These settings with `data` (camelCase keys) applied, and a line per invalid value.

        Keys absent from `data` keep their current value, so a partial update (a client that
        sends `workspaceTrusted` only at start-up) never resets the others; unknown keys
        belong to the client (`interpreter`, `trace.server`, ...) and are ignored.
        """
        hints = get_type_hints(Settings)
        changes: dict[str, Any] = {}
        problems = []
        for field in dataclasses.fields(self):
            key = camel_case(field.name)
            if key not in data:
                continue
            value = _coerce(data[key], hints[field.name])
            if value is None:
                default = field.default
                problems.append(f"trainmedic.{key} has an invalid value {data[key]!r}; "
                                f"using the default {_wire(default)!r}")
                value = default
            if field.name == "log_globs":
                value = _usable_globs(value, problems)
            changes[field.name] = value
        return dataclasses.replace(self, **changes), problems


def _usable_globs(globs: tuple[str, ...], problems: list[str]) -> tuple[str, ...]:
    """The globs that can be matched; a line in `problems` for each one skipped."""
    usable = []
    for glob in globs:
        problem = glob_problem(glob)
        if problem is None:
            usable.append(glob)
        else:
            problems.append(f"trainmedic.logGlobs: {glob!r} is not a valid glob ({problem}); "
                            "it is skipped")
    return tuple(usable)


def camel_case(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _wire(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _coerce(value: Any, hint: Any) -> Any:
    """`value` as the type `hint` names, or None when it is not one."""
    if hint is bool:
        return value if isinstance(value, bool) else None
    if get_origin(hint) is Literal:
        return value if value in get_args(hint) else None
    if get_origin(hint) is tuple:
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        return tuple(value) if ok else None
    raise TypeError(f"no coercion for {hint!r}")

"""The tools an agent calls, as plain functions: JSON arguments in, a report and JSON out.

`diagnose`, `check` and `explain` run the core that `trainmedic diagnose`, `trainmedic check`
and `trainmedic rules show` run, and answer with the same JSON. A bad argument (a missing file,
both or neither of `text` and `paths`, an unknown rule id) raises `ToolInputError`, whose text
is written for the model to act on. Nothing here opens a network connection or writes a file.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trainmedic.catalogue.rules import Catalogue
from trainmedic.checks.command import check_all, render_text, results_dict
from trainmedic.checks.registry import check_by_code
from trainmedic.diagnosis.engine import diagnose, diagnose_text
from trainmedic.logs.inputs import InputError, expand, opened
from trainmedic.matching.python import Matcher
from trainmedic.model import Basis, Diagnosis
from trainmedic.render.json import rule_dict, to_dict
from trainmedic.render.markdown import diagnosis_markdown, rule_markdown

# Text arrives whole inside one JSON message, so it is held in memory: past this size the
# caller is asked for a file instead, which `paths` streams with flat memory whatever its size.
MAX_TEXT_BYTES = 8 << 20


class ToolInputError(Exception):
    """A tool was called with arguments it cannot use; `str()` says what to change."""


@dataclass(frozen=True)
class Rules:
    """What every call diagnoses with: the catalogue and its compiled matcher."""

    catalogue: Catalogue
    matcher: Matcher


@dataclass(frozen=True)
class Answer:
    report: str               # for the model to read: Markdown, or one line per finding
    data: dict[str, Any]      # for programs: the JSON the matching CLI command prints


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Rules, Mapping[str, Any]], Answer]


def _only(tool: str, arguments: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ToolInputError(f"{tool}: unknown argument {', '.join(map(repr, unknown))}; "
                             f"it takes {' or '.join(allowed)}")


def _paths(tool: str, value: Any) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(p, str) and p for p in value)):
        raise ToolInputError(f"{tool}: paths must be a non-empty list of file or folder paths")
    return [os.path.expanduser(p) for p in value]


def _refused(error: OSError) -> ToolInputError:
    return ToolInputError(f"{error.filename or 'input'}: {error.strerror or error}")


def _with_notes(report: str, notes: list[str] | tuple[str, ...]) -> str:
    return report if not notes else \
        report.rstrip("\n") + "\n\n**Notes**\n\n" + "".join(f"- {n}\n" for n in notes)


def _diagnose_text(rules: Rules, text: Any) -> Diagnosis:
    if not isinstance(text, str):
        raise ToolInputError("diagnose: text must be a string (the log text itself)")
    # A character is at least one byte: a text longer than the limit is refused unencoded.
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "replace")) > MAX_TEXT_BYTES:
        raise ToolInputError(f"diagnose: text is over the {MAX_TEXT_BYTES >> 20} MiB limit; "
                             "save the log to a file and pass it in paths, which reads logs "
                             "of any size")
    return diagnose_text(text, rules.catalogue, matcher=rules.matcher)


def _diagnose_paths(rules: Rules, paths: Any) -> tuple[Diagnosis, list[str]]:
    """The logs read as `trainmedic diagnose PATH...` reads them, in this one process (a
    server's threads make forking worker processes unsafe)."""
    given = _paths("diagnose", paths)
    if "-" in given:
        raise ToolInputError("diagnose: '-' (standard input) cannot be read here, it carries the "
                             "protocol; pass the text itself as text")
    try:
        files, warnings = expand(given)
        with opened(files) as streams:
            diagnosis = diagnose(streams, rules.catalogue, rules.matcher)
    except InputError as error:
        raise ToolInputError(str(error)) from None
    except OSError as error:
        raise _refused(error) from None
    return diagnosis, [*warnings, *streams.warnings]


def run_diagnose(rules: Rules, arguments: Mapping[str, Any]) -> Answer:
    _only("diagnose", arguments, ("text", "paths"))
    text, paths = arguments.get("text"), arguments.get("paths")
    if (text is None) == (paths is None):
        raise ToolInputError("diagnose takes exactly one of text (the log text itself) or paths "
                             "(log files or folders on this machine)"
                             + (", not both" if text is not None else ""))
    notes: list[str] = []
    if text is not None:
        diagnosis = _diagnose_text(rules, text)
    else:
        diagnosis, notes = _diagnose_paths(rules, paths)
    report = diagnosis_markdown(diagnosis, rules.catalogue)
    return Answer(_with_notes(report, notes), to_dict(diagnosis, rules.catalogue))


def run_check(rules: Rules, arguments: Mapping[str, Any]) -> Answer:
    _only("check", arguments, ("paths",))
    try:
        run = check_all(_paths("check", arguments.get("paths")), fix=False)
    except InputError as error:
        raise ToolInputError(str(error)) from None
    except OSError as error:
        raise _refused(error) from None
    if run.unchecked:
        raise ToolInputError("\n".join(run.notes))
    results = list(run.results)
    return Answer(_with_notes(render_text(results), run.notes), results_dict(results))


def _unknown_rule(rule_id: str, catalogue: Catalogue) -> str:
    check = check_by_code(rule_id.upper())
    if check is not None:
        return (f"{rule_id} is the code of a script check, not a rule id; its catalogue entry "
                f"is {check.rule_id}: call explain with rule_id {check.rule_id!r}")
    ids = [rule.id for rule in catalogue.rules]
    close = difflib.get_close_matches(rule_id, ids, n=5, cutoff=0.6)
    close += [i for i in ids if (rule_id in i or i in rule_id) and i not in close]
    hint = f"did you mean: {', '.join(close[:5])}?" if close else \
        "use a rule_id from a diagnose or check result"
    return f"no rule with id {rule_id!r} ({hint})"


def run_explain(rules: Rules, arguments: Mapping[str, Any]) -> Answer:
    _only("explain", arguments, ("rule_id",))
    rule_id = arguments.get("rule_id")
    if not isinstance(rule_id, str) or not rule_id.strip():
        raise ToolInputError("explain: rule_id must be a rule id such as 'amp-loss-scale'")
    rule = rules.catalogue.get(rule_id.strip())
    if rule is None:
        raise ToolInputError(_unknown_rule(rule_id.strip(), rules.catalogue))
    return Answer(rule_markdown(rule), rule_dict(rule))


LOCAL = "It runs on this machine: nothing is uploaded and no network connection is opened."

PATHS = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}

DIAGNOSE = Tool(
    name="diagnose",
    title="Diagnose a failed training run",
    description=(
        "Find why an ML training run failed (PyTorch, DeepSpeed, Megatron, Hugging Face, "
        "torchrun, Slurm, MPI) from its output. Call it when a training job crashed, hung, "
        "diverged or went NaN and you have its traceback, terminal output or log files. Pass "
        f"exactly one of `text` (the output itself, up to {MAX_TEXT_BYTES >> 20} MiB) or "
        "`paths` (log files or folders on this machine, any size; a torchrun --log-dir or a "
        "folder of per-rank logs is read as one run). Returns a Markdown report of the most "
        "likely root cause: what broke, the initiating rank (the rank that failed first; the "
        "other ranks' timeouts and SIGTERMs are collateral), the fix, and a command that "
        "verifies the fix. The structured content is the JSON of `trainmedic diagnose "
        "--format json`: initiating_rank, initiating_basis (how it was chosen), "
        "initiating_host, initiating_reason, diagnoses (most likely root cause first, each "
        "with rule_id, role root or collateral, confidence, rank, evidence lines, fix, "
        "verify), ranks and metric series. Tokens and passwords in evidence lines are "
        "redacted. Call explain with a rule_id for the full entry. " + LOCAL),
    input_schema={
        "type": "object",
        "properties": {
            "text": {"type": "string",
                     "description": f"The log text itself, up to {MAX_TEXT_BYTES >> 20} MiB: "
                                    "a traceback, the tail of a job's output. Use paths for "
                                    "files on disk."},
            "paths": {**PATHS, "description": "Log files or folders on this machine, read "
                                              "together as one run. Absolute paths, or "
                                              "relative to the server's working folder."},
        },
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "initiating_rank": {"type": ["integer", "null"],
                                "description": "The rank whose failure came first"},
            "initiating_basis": {"enum": [basis.value for basis in Basis],
                                 "description": "How the initiating rank was chosen"},
            "initiating_reason": {"type": "string"},
            "initiating_host": {"type": ["string", "null"],
                                "description": "The host the initiating rank ran on, when the "
                                               "input names it"},
            "diagnoses": {"type": "array", "items": {"type": "object", "required": [
                "rule_id", "title", "role", "confidence", "rank", "evidence", "fix",
                "verify"]}, "description": "Most likely root cause first"},
            "ranks": {"type": "object"},
            "series": {"type": "object"},
        },
        "required": ["initiating_rank", "initiating_basis", "initiating_reason", "diagnoses",
                     "ranks"],
    },
    run=run_diagnose,
)

CHECK = Tool(
    name="check",
    title="Check training scripts and configs",
    description=(
        "Look for risky lines in PyTorch training scripts (*.py), Jupyter notebooks (*.ipynb, "
        "their code cells), DeepSpeed JSON configs, Accelerate YAML configs and launch scripts "
        "(*.sh): deprecated torch.cuda.amp calls, "
        "fp16 without a GradScaler, a scaler that is never updated, clipping scaled "
        "gradients, torch.load without weights_only, init_process_group without a timeout, "
        "deprecated NCCL_* variables and more. Call it before launching a run, after editing "
        "training code, or when a diagnosis points at the training code. `paths` are files "
        "or folders (folders are walked). Returns one line per finding (path:line:column: "
        "code message [rule_id]; path:cell N:line:column: in a notebook) and, as structured "
        "content, the JSON of `trainmedic check --format json`: files, and findings with code, "
        "rule_id, severity, message, a 0-based range (and the cell, in a notebook) and the fix "
        "as text edits. It only reads: no file is changed. " + LOCAL),
    input_schema={
        "type": "object",
        "properties": {"paths": {**PATHS, "description": "Scripts, configs or folders to "
                                                         "check on this machine."}},
        "required": ["paths"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"files": {"type": "integer"}, "fixed": {"type": "integer"},
                       "findings": {"type": "array", "items": {"type": "object", "required": [
                           "path", "code", "rule_id", "severity", "message", "range"]}}},
        "required": ["files", "findings"],
    },
    run=run_check,
)

EXPLAIN = Tool(
    name="explain",
    title="Explain a failure rule",
    description=(
        "The full catalogue entry of one failure rule: what the failure is, its symptoms and "
        "causes, the fix, how to prevent it and the command that verifies the fix. Call it "
        "with a rule_id from a diagnose or check result (such as amp-loss-scale or "
        "nccl-timeout) when the summary is not enough. Returns the entry as Markdown and its "
        "main fields as structured content; an unknown id gives an error naming close ids. "
        + LOCAL),
    input_schema={
        "type": "object",
        "properties": {"rule_id": {"type": "string", "minLength": 1,
                                   "description": "A rule id, as in a result's rule_id"}},
        "required": ["rule_id"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {key: {"type": "string"} for key in (
            "rule_id", "title", "category", "role", "summary", "fix", "verify")}
        | {"related": {"type": "array", "items": {"type": "string"}}},
        "required": ["rule_id", "title", "summary", "fix", "verify"],
    },
    run=run_explain,
)

TOOLS = (DIAGNOSE, CHECK, EXPLAIN)

"""`trainmedic check`: find the files, run the checks, write fixes, render the findings.

Explicitly named files that cannot be checked (missing, binary, not UTF-8, not parsable) are
errors; files met while walking a directory that cannot be checked are skipped with a
warning, since a repository holds JSON and YAML that are not training configs.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from trainmedic import __version__
from trainmedic.checks.findings import CheckError, CheckFinding, Range, Severity
from trainmedic.checks.registry import CHECKS, check_by_code
from trainmedic.checks.runner import (
    file_kind,
    fix_all,
    fix_notebook,
    run_checks,
    run_notebook_checks,
)
from trainmedic.checks.sources.notebook import CellFinding
from trainmedic.logs.inputs import SNIFF_BYTES, InputError, is_binary, open_regular

ENTRY_URL = "https://trainmedic.dev/rules/{}"
MAX_WALKED_BYTES = 1 << 20  # larger JSON/YAML met in a walk is data, not a config
# Read at most this much of a file: a notebook holds its outputs (images, tables) too, but a
# larger file is none of the kinds checked, and reading it whole could exhaust memory.
MAX_READ_BYTES = 64 << 20
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
BOM = "\ufeff"


@dataclass(frozen=True)
class Checked:
    """One file: its findings (after fixing, when fixing), and its text before and after."""

    path: str
    findings: tuple[CheckFinding, ...]
    before: str
    after: str
    fixed: int = 0
    placed: tuple[CellFinding, ...] = ()  # a notebook's findings, in their cells


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                         d not in ("node_modules", "__pycache__", "site-packages"))
        for name in sorted(files):
            if file_kind(name):
                yield Path(root, name)


def collect(paths: list[str]) -> tuple[list[tuple[Path, bool]], list[str]]:
    """(file, named explicitly) for every file to check, and warnings for what was skipped."""
    files: list[tuple[Path, bool]] = []
    warnings: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = list(_walk(path))
            if not found:
                raise InputError(f"{given}: no training scripts or configs in this directory "
                                 "(looked for *.py, *.ipynb, *.json, *.yaml, *.yml, *.sh)")
            for candidate in found:
                size = candidate.stat().st_size
                if file_kind(str(candidate)) in ("json", "yaml") and size > MAX_WALKED_BYTES:
                    warnings.append(f"{candidate}: skipped (larger than 1 MiB, not a config)")
                else:
                    files.append((candidate, False))
        elif path.exists():
            if not file_kind(given):
                raise InputError(f"{given}: not a file trainmedic checks "
                                 "(*.py, *.ipynb, *.json, *.yaml, *.yml, *.sh)")
            files.append((path, True))
        else:
            raise InputError(f"{given}: no such file or directory")
    return files, warnings


def read(path: Path) -> str:
    """The file's text with its newlines as they are; InputError when it is not text."""
    try:
        with open_regular(str(path)) as stream:  # a pipe named train.py would block
            data = stream.read(MAX_READ_BYTES + 1)
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None
    if len(data) > MAX_READ_BYTES:
        raise InputError(f"{path}: larger than {MAX_READ_BYTES >> 20} MiB, not a script, "
                         "config or notebook")
    if is_binary(data[:SNIFF_BYTES]):
        raise InputError(f"{path}: binary file, not a script or config")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text (byte {error.start})") from None


def check_notebook(path: Path, fix: bool) -> Checked:
    """Check a notebook's code cells; with `fix`, its JSON with the cells fixed."""
    original = read(path)
    name = str(path)
    found = run_notebook_checks(name, original)
    after = fix_notebook(name, original) if fix else original
    remaining = run_notebook_checks(name, after) if after != original else found
    findings = tuple(replace(p.finding, fix=tuple(e.edit for e in p.fix) if p.fix else None)
                     for p in remaining)
    return Checked(name, findings, original, after, max(len(found) - len(remaining), 0),
                   tuple(remaining))


def check_file(path: Path, fix: bool) -> Checked:
    """Check one file; with `fix`, its text after every fix (the caller decides to write)."""
    if file_kind(str(path)) == "notebook":
        return check_notebook(path, fix)
    original = read(path)
    text = original.removeprefix(BOM)
    name = str(path)
    findings = run_checks(name, text)
    if not fix:
        return Checked(name, tuple(findings), original, original)
    fixed = fix_all(name, text)
    remaining = run_checks(name, fixed)
    prefix = BOM if original.startswith(BOM) else ""
    return Checked(name, tuple(remaining), original, prefix + fixed,
                   max(len(findings) - len(remaining), 0))


# --- rendering -----------------------------------------------------------------------------------

def _range(where: Range) -> dict[str, Any]:
    return {"start": {"line": where.start.line, "character": where.start.character},
            "end": {"line": where.end.line, "character": where.end.character}}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _cells(result: Checked) -> list[int | None]:
    """Each finding's cell (0-based, counting every cell) in a notebook; None in a file."""
    return [p.cell for p in result.placed] or [None] * len(result.findings)


def render_text(results: list[Checked]) -> str:
    out = [f"{r.path}:{'' if cell is None else f'cell {cell + 1}:'}"
           f"{f.range.start.line + 1}:{f.range.start.character + 1}: "
           f"{f.code} {f.message} [{f.rule_id}]{' (fixable with --fix)' if f.fix else ''}"
           for r in results for f, cell in zip(r.findings, _cells(r), strict=True)]
    total = sum(len(r.findings) for r in results)
    fixable = sum(1 for r in results for f in r.findings if f.fix)
    fixed = sum(r.fixed for r in results)
    summary = f"Fixed {fixed}. " if fixed else ""
    if not total:
        summary += f"No findings in {_count(len(results), 'file')}."
    else:
        with_findings = sum(1 for r in results if r.findings)
        summary += f"{_count(total, 'finding')} in {with_findings} of " \
            f"{_count(len(results), 'file')}" + \
            (f" ({fixable} fixable with --fix)." if fixable else ".")
    return "\n".join([*out, summary]) + "\n"


def results_dict(results: list[Checked]) -> dict[str, Any]:
    """The JSON of `trainmedic check --format json` (ranges 0-based, as in LSP; in a
    notebook, lines count from the start of the finding's or the edit's `cell`)."""
    rows = []
    for r in results:
        for f, placed in zip(r.findings, r.placed or [None] * len(r.findings), strict=True):
            row: dict[str, Any] = {
                "path": r.path, "code": f.code, "rule_id": f.rule_id,
                "severity": f.severity.value, "message": f.message,
                "url": ENTRY_URL.format(f.rule_id), "range": _range(f.range),
                "fix": [{"range": _range(e.range), "new_text": e.new_text} for e in f.fix]
                if f.fix else None}
            if placed is not None:
                row["cell"] = placed.cell
                row["fix"] = [{"cell": e.cell, "range": _range(e.edit.range),
                               "new_text": e.edit.new_text} for e in placed.fix] \
                    if placed.fix else None
            rows.append(row)
    return {"files": len(results), "fixed": sum(r.fixed for r in results), "findings": rows}


def render_json(results: list[Checked]) -> str:
    return json.dumps(results_dict(results), indent=2, ensure_ascii=False) + "\n"


def _region(where: Range) -> dict[str, int]:
    return {"startLine": where.start.line + 1, "startColumn": where.start.character + 1,
            "endLine": where.end.line + 1, "endColumn": where.end.character + 1}


def render_sarif(results: list[Checked]) -> str:
    """SARIF 2.1.0, for code-scanning dashboards; columns count code points."""
    index = {check.code: i for i, check in enumerate(CHECKS)}
    rules = [{"id": c.code, "name": c.name,
              "shortDescription": {"text": c.summary().replace("`", "")},
              "fullDescription": {"text": c.sections().get("Why is this bad?", "")},
              "helpUri": ENTRY_URL.format(c.rule_id),
              "defaultConfiguration": {
                  "level": "note" if c.severity is Severity.INFORMATION else "warning"},
              "properties": {"rule_id": c.rule_id}} for c in CHECKS]
    found = []
    for result in results:
        uri = Path(result.path).as_posix()
        for f, cell in zip(result.findings, _cells(result), strict=True):
            entry: dict[str, Any] = {
                "ruleId": f.code, "ruleIndex": index[f.code],
                "level": "note" if f.severity is Severity.INFORMATION else "warning",
                "message": {"text": f.message},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri},
                                                    "region": _region(f.range)}}]}
            if cell is not None:  # SARIF regions cannot point into a notebook cell
                entry["properties"] = {"cell": cell}
            elif f.fix:
                check = check_by_code(f.code)
                entry["fixes"] = [{
                    "description": {"text": check.summary() if check else f.message},
                    "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": [
                        {"deletedRegion": _region(e.range),
                         "insertedContent": {"text": e.new_text}} for e in f.fix]}]}]
            found.append(entry)
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "trainmedic", "version": __version__,
                            "informationUri": "https://trainmedic.dev", "rules": rules}},
        "columnKind": "unicodeCodePoints", "results": found}]}
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"


def render_diff(results: list[Checked]) -> str:
    return "".join("".join(difflib.unified_diff(
        r.before.splitlines(keepends=True), r.after.splitlines(keepends=True), r.path, r.path))
        for r in results if r.after != r.before)


RENDERERS = {"text": render_text, "json": render_json, "sarif": render_sarif}


@dataclass(frozen=True)
class Run:
    results: tuple[Checked, ...]
    notes: tuple[str, ...]  # what was skipped or could not be checked, one line each, in order
    unchecked: bool         # an explicitly named file could not be checked


def check_all(paths: list[str], fix: bool) -> Run:
    """Check every file of `paths`; with `fix`, each result carries its fixed text."""
    files, warnings = collect(paths)
    notes = [f"warning: {warning}" for warning in warnings]
    results: list[Checked] = []
    failed = False
    for path, explicit in files:
        try:
            results.append(check_file(path, fix))
        except (CheckError, InputError) as error:
            message = str(error).removeprefix(f"{path}: ")
            if explicit:
                notes.append(f"{path}: cannot check: {message}")
                failed = True
            else:
                notes.append(f"warning: {path}: skipped ({message})")
    return Run(tuple(results), tuple(notes), failed)


@dataclass(frozen=True)
class Outcome:
    findings: bool   # findings remain (or, with --diff, the fixes were not written)
    unchecked: bool  # an explicitly named file could not be checked


def check_paths(paths: list[str], fix: bool, diff: bool, fmt: str,
                out: TextIO, err: TextIO) -> Outcome:
    """Run `trainmedic check` over `paths`, writing fixes when `fix`, a diff when `diff`."""
    run = check_all(paths, fix or diff)
    for note in run.notes:
        print(f"trainmedic: {note}", file=err)
    results = list(run.results)
    if fix:
        for result in results:
            if result.after != result.before:
                Path(result.path).write_text(result.after, "utf-8", newline="")
    if diff:
        out.write(render_diff(results))
        fixable = sum(1 for r in results if r.after != r.before)
        remaining = sum(len(r.findings) for r in results)
        print(f"trainmedic: {_count(fixable, 'file')} would change; "
              f"{_count(remaining, 'finding')} would remain", file=err)
        found = any(r.after != r.before or r.findings for r in results)
    else:
        if results or not run.unchecked:  # nothing was checked: the errors say it all
            out.write(RENDERERS[fmt](results))
        found = any(r.findings for r in results)
    return Outcome(found, run.unchecked)

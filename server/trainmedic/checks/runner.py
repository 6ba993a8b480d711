"""Run the registered checks over one file's text, and apply their fixes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePath

from trainmedic.checks.findings import (
    MAX_CHECKED_CHARS,
    CheckError,
    CheckFinding,
    Position,
    TextEdit,
    split_lines,
)
from trainmedic.checks.protocol import Check
from trainmedic.checks.registry import CHECKS
from trainmedic.checks.sources.config import parse_json, parse_yaml
from trainmedic.checks.sources.notebook import CellFinding, NotebookFile, NotebookScript
from trainmedic.checks.sources.python import PythonSource
from trainmedic.checks.sources.shell import ShellScript
from trainmedic.checks.suppress import suppressed

SUFFIXES = {".py": "python", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".sh": "shell",
            ".bash": "shell", ".ipynb": "notebook"}
MAX_FIX_PASSES = 10
# A config that mentions none of these holds nothing the checks look at; skipping its parse
# keeps large JSON and YAML files (lock files, data) cheap to open in the editor.
CONFIG_WORDS = ("fp16", "bf16", "bfloat16", "mixed_precision", "loss_scale", "NCCL_")


def file_kind(path: str) -> str | None:
    """"python", "json", "yaml", "shell", "notebook", or None for a file no check reads."""
    return SUFFIXES.get(PurePath(path).suffix.lower())


def run_checks(path: str, text: str,
               checks: Sequence[Check] = CHECKS) -> list[CheckFinding]:
    """Every finding of `checks` in `text`, in file order, without suppressed ones.

    The kind of file comes from the suffix of `path` (a notebook's findings are in its
    cells: see `run_notebook_checks`). Raises `CheckError` when the text does
    not parse as that kind of file (configs are parsed only when they mention a precision
    setting or an NCCL variable), or is longer than MAX_CHECKED_CHARS.
    """
    kind = file_kind(path)
    if len(text) > MAX_CHECKED_CHARS and kind is not None:
        raise CheckError(f"{len(text) / (1 << 20):.1f} MiB of text, longer than the "
                         f"{MAX_CHECKED_CHARS >> 20} MiB checked: generated code or data, "
                         "not a training script or config")
    found: list[CheckFinding] = []
    if kind == "python":
        src = PythonSource.parse(path, text)
        found = [f for check in checks for f in check.python(src)]
    elif kind in ("json", "yaml") and any(word in text for word in CONFIG_WORDS):
        doc = parse_json(path, text) if kind == "json" else parse_yaml(path, text)
        found = [f for check in checks for f in check.config(doc)]
    elif kind == "shell":
        script = ShellScript.parse(path, text)
        found = [f for check in checks for f in check.shell(script)]
    lines = split_lines(text)
    return sorted((f for f in found if not suppressed(lines, f)),
                  key=lambda f: (f.range.start, f.code))


def _offsets(text: str) -> list[int]:
    starts = [0]
    for number, line in enumerate(split_lines(text)[:-1]):
        starts.append(starts[number] + len(line))
        starts[-1] += 2 if text.startswith("\r\n", starts[-1]) else 1
    return starts


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:
        return a[0] <= b[1] and b[0] <= a[1]
    return a[0] < b[1] and b[0] < a[1]


def apply_fixes(text: str, findings: Iterable[CheckFinding]) -> str:
    """`text` with every fix applied that does not touch another fix's text.

    A finding's edits go in together or not at all; edits shared by several findings (an
    import rewrite) go in once. What is left over is fixed by running the checks again,
    as `fix_all` does.
    """
    starts = _offsets(text)

    def offset(pos: Position) -> int:
        return min(starts[min(pos.line, len(starts) - 1)] + pos.character, len(text))

    accepted: dict[tuple[int, int, str], TextEdit] = {}
    for finding in findings:
        if not finding.fix:
            continue
        spans = [((offset(e.range.start), offset(e.range.end)), e) for e in finding.fix]
        new = [(span, e) for span, e in spans if (*span, e.new_text) not in accepted]
        if any(_conflict(span, (a, b)) for span, _ in new for a, b, _t in accepted):
            continue
        accepted.update({(*span, e.new_text): e for span, e in new})
    out = text
    for start, end, new_text in sorted(accepted, key=lambda k: (k[0], k[1]), reverse=True):
        out = out[:start] + new_text + out[end:]
    return out


def fix_all(path: str, text: str, checks: Sequence[Check] = CHECKS) -> str:
    """`text` with the fixes applied until no check has one left to offer."""
    for _ in range(MAX_FIX_PASSES):
        fixed = apply_fixes(text, run_checks(path, text, checks))
        if fixed == text:
            break
        text = fixed
    return text


def check_script(script: NotebookScript, checks: Sequence[Check] = CHECKS) -> list[CellFinding]:
    """The findings in a notebook's joined code cells, each placed in its cell."""
    if not script.cells:
        return []
    as_python = f"{script.path}.py"  # the joined cells are read as the script they make
    return [script.place(f) for f in run_checks(as_python, script.text, checks)]


def run_notebook_checks(path: str, text: str,
                        checks: Sequence[Check] = CHECKS) -> list[CellFinding]:
    """Every finding in the code cells of the `.ipynb` JSON `text`, in cell order."""
    notebook = NotebookFile.parse(text)
    return check_script(NotebookScript.join(path, notebook.code_cells()), checks)


def fix_notebook(path: str, text: str, checks: Sequence[Check] = CHECKS) -> str:
    """The notebook's JSON with every fix applied in its cells (unchanged when none apply)."""
    notebook = NotebookFile.parse(text)
    sources = dict(notebook.code_cells())
    changed: dict[int, str] = {}
    for _ in range(MAX_FIX_PASSES):
        found = check_script(NotebookScript.join(path, sources.items()), checks)
        edits: dict[int, list[CheckFinding]] = {}
        for placed in found:
            for cell in {e.cell for e in placed.fix or ()}:
                # A fix that changes several cells goes into each cell as its own part.
                mine = tuple(e.edit for e in placed.fix or () if e.cell == cell)
                edits.setdefault(cell, []).append(CheckFinding(
                    placed.finding.code, placed.finding.rule_id, placed.finding.message,
                    placed.finding.severity, placed.finding.range, mine))
        fixed = {cell: apply_fixes(sources[cell], f) for cell, f in edits.items()}
        fixed = {cell: source for cell, source in fixed.items() if source != sources[cell]}
        if not fixed:
            break
        sources.update(fixed)
        changed.update(fixed)
    return notebook.with_sources(changed) if changed else text

"""Checks over training scripts and their configs: risky lines, each with a fix.

Python scripts are read with the standard library's `ast` (positions) and `tokenize` (edits),
DeepSpeed JSON with a small span-keeping parser, Accelerate YAML with PyYAML, launch scripts
line by line. Everything here is pure Python, so the language server's dependencies can ship
inside the VS Code extension as plain files, with no compiled wheels per platform.
"""

from trainmedic.checks.findings import CheckError, CheckFinding, Position, Range, Severity, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.registry import CHECKS, check_by_code
from trainmedic.checks.runner import apply_fixes, file_kind, fix_all, run_checks
from trainmedic.checks.suppress import ignore_edit

__all__ = [
    "CHECKS",
    "Check",
    "CheckError",
    "CheckFinding",
    "Position",
    "Range",
    "Severity",
    "TextEdit",
    "apply_fixes",
    "check_by_code",
    "file_kind",
    "fix_all",
    "ignore_edit",
    "run_checks",
]

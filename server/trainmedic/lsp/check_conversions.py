"""Script-check findings in LSP terms, for the features that show them (scripts, notebook
cells): positions in the client's units, diagnostics, edits, the hover and the quick fixes."""

from __future__ import annotations

import re

from lsprotocol import types
from pygls.workspace import PositionCodec

from trainmedic.catalogue.rules import Catalogue
from trainmedic.checks import CheckFinding, Position, Range, Severity, TextEdit, check_by_code
from trainmedic.lsp.conversions import ENTRY_URL, SOURCE

DEBOUNCE_SECONDS = 0.2  # a pause in typing before a changed document is checked again

SEVERITY = {Severity.WARNING: types.DiagnosticSeverity.Warning,
            Severity.INFORMATION: types.DiagnosticSeverity.Information}


def from_client(codec: PositionCodec, lines: list[str], at: types.Position) -> Position:
    """A client position as the checks count it (code points); pygls's codec converts."""
    found = codec.position_from_client_units(
        lines, types.Position(line=at.line, character=at.character))  # the codec may clamp it
    return Position(found.line, found.character)


def client_range(codec: PositionCodec, lines: list[str], where: Range) -> types.Range:
    return codec.range_to_client_units(lines, types.Range(
        start=types.Position(line=where.start.line, character=where.start.character),
        end=types.Position(line=where.end.line, character=where.end.character)))


def diagnostic(codec: PositionCodec, lines: list[str], finding: CheckFinding) -> types.Diagnostic:
    return types.Diagnostic(
        range=client_range(codec, lines, finding.range), message=finding.message,
        severity=SEVERITY[finding.severity], code=finding.code, source=SOURCE,
        code_description=types.CodeDescription(href=ENTRY_URL.format(finding.rule_id)))


def client_edit(codec: PositionCodec, lines: list[str], edit: TextEdit) -> types.TextEdit:
    return types.TextEdit(range=client_range(codec, lines, edit.range), new_text=edit.new_text)


FENCES = {"python": ("python", "py"), "json": ("json",), "yaml": ("yaml", "yml"),
          "shell": ("bash", "sh", "shell")}
_FENCE = re.compile(r"```(\w*)\n.*?```", re.S)
_INLINE_IGNORE = re.compile(r"[^.]*`# trainmedic: ignore[^`]*`[^.]*\.\s*")
NO_COMMENTS = "**Suppressing:** JSON has no comments, so a finding in a JSON file cannot be " \
    "silenced inline; the quick fix is the way to clear it."


def in_kind(section: str, kind: str | None) -> str:
    """A section's code examples for this kind of file only, when it has some (a YAML config
    is shown the YAML, not the Python, way to write it); else the section as it is."""
    blocks = list(_FENCE.finditer(section))
    mine = [b.group(0) for b in blocks if b.group(1) in FENCES.get(kind or "", ())]
    return "\n\n".join(mine) if mine and len(mine) < len(blocks) else section


def hover_markdown(finding: CheckFinding, title: str | None, kind: str | None = None) -> str:
    """The check's own words: what was found, why it matters, what to write instead, in the
    terms of the kind of file it is in (`file_kind`)."""
    check = check_by_code(finding.code)
    sections = check.sections() if check else {}
    entry = f"[{title or finding.rule_id}]({ENTRY_URL.format(finding.rule_id)})"
    safety = sections.get("Fix safety", "")
    if kind == "json":
        safety = _INLINE_IGNORE.sub("", safety).strip()
    parts = [f"**{finding.code}** {finding.message}",
             sections.get("Why is this bad?", ""),
             "**Fix**\n\n" + in_kind(sections.get("Use instead", ""), kind),
             "**Fix safety:** " + safety if safety else "",
             NO_COMMENTS if kind == "json" else "",
             f"Catalogue entry: {entry}"]
    return "\n\n".join(p for p in parts if p.strip())


def findings_hover(codec: PositionCodec, lines: list[str], findings: list[CheckFinding],
                   catalogue: Catalogue, kind: str | None = None) -> types.Hover | None:
    """One hover for the findings under the mouse, each in its check's words."""
    if not findings:
        return None
    text = "\n\n---\n\n".join(
        hover_markdown(f, (rule.title if (rule := catalogue.get(f.rule_id)) else None), kind)
        for f in findings)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=client_range(codec, lines, findings[0].range))


def finding_actions(codec: PositionCodec, lines: list[str], uri: str,
                    finding: CheckFinding, fix: dict[str, list[types.TextEdit]] | None,
                    ignore: TextEdit | None) -> list[types.CodeAction]:
    """The preferred quick fix of a finding in document `uri` (`fix`: its edits, by the
    document each changes), and "ignore here" (`ignore`: the edit that adds the comment)."""
    addressed = [diagnostic(codec, lines, finding)]
    actions: list[types.CodeAction] = []
    if fix:
        actions.append(types.CodeAction(
            title=f"Fix {finding.code}: {finding.message.split(':', 1)[0]}",
            kind=types.CodeActionKind.QuickFix, diagnostics=addressed, is_preferred=True,
            edit=types.WorkspaceEdit(changes=fix)))
    if ignore is not None:
        actions.append(types.CodeAction(
            title=f"Ignore {finding.code} here", kind=types.CodeActionKind.QuickFix,
            diagnostics=addressed,
            edit=types.WorkspaceEdit(changes={uri: [client_edit(codec, lines, ignore)]})))
    return actions

"""Script checks through the real server: diagnostics, hover, every quick fix, ignore here."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import TIMEOUT, next_diagnostics
from lsprotocol import types
from pytest_lsp import LanguageClient

from trainmedic.checks import CHECKS, run_checks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checks"
LANGUAGES = {".py": "python", ".json": "json", ".yaml": "yaml", ".sh": "shellscript"}
FIXABLE = [c.code for c in CHECKS
           if not c.sections()["Fix safety"].startswith("No automatic fix")]


def positive(code: str) -> Path:
    """The first positive fixture of `code` (Python first, where there is one)."""
    found = sorted(FIXTURES.glob(f"{code}/positive-*"), key=lambda p: (p.suffix != ".py", p))
    return next(p for p in found if ".fixed." not in p.name and ".findings" not in p.name)


def open_script(client: LanguageClient, uri: str, text: str, suffix: str) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=LANGUAGES[suffix], version=1,
                                             text=text)))


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def offset(text: str, at: types.Position) -> int:
    """An LSP position (UTF-16 columns) as an index into `text`."""
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:at.line])
    line = lines[at.line] if at.line < len(lines) else ""
    units = index = 0
    while index < len(line) and units < at.character:
        units += len(line[index].encode("utf-16-le")) // 2
        index += 1
    return start + index


def apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((offset(text, e.range.start), offset(text, e.range.end), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


async def opened(client: LanguageClient, path: Path, tmp_path: Path) -> tuple[str, str,
                                                                              list[types.Diagnostic]]:
    target = tmp_path / path.name
    text = path.read_text("utf-8")
    target.write_text(text, "utf-8")
    uri = target.as_uri()
    open_script(client, uri, text, path.suffix)
    return uri, text, (await next_diagnostics(client, uri)).diagnostics


async def actions(client: LanguageClient, uri: str,
                  diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


@pytest.mark.asyncio
async def test_diagnostics_carry_code_link_and_exact_range(client: LanguageClient,
                                                           tmp_path: Path) -> None:
    path = FIXTURES / "TM104" / "positive-accumulation.py"
    _, text, diagnostics = await opened(client, path, tmp_path)

    expected = run_checks(str(path), text)
    assert [d.code for d in diagnostics] == [f.code for f in expected]
    first = diagnostics[0]
    assert first.source == "trainmedic"
    assert first.severity == types.DiagnosticSeverity.Warning
    assert first.code_description is not None
    assert first.code_description.href == "https://trainmedic.dev/rules/amp-loss-scale"
    line = text.splitlines()[first.range.start.line]
    assert line[first.range.start.character:first.range.end.character] == \
        "scaler.step(optimizer)"


@pytest.mark.asyncio
async def test_configs_and_launch_scripts_are_checked(client: LanguageClient,
                                                      tmp_path: Path) -> None:
    for path, code, severity in (
            (FIXTURES / "TM107" / "positive-deepspeed.json", "TM107",
             types.DiagnosticSeverity.Warning),
            (FIXTURES / "TM109" / "positive-accelerate.yaml", "TM109",
             types.DiagnosticSeverity.Information),
            (FIXTURES / "TM112" / "positive-slurm.sh", "TM112",
             types.DiagnosticSeverity.Warning)):
        _, _, diagnostics = await opened(client, path, tmp_path)
        assert (diagnostics[0].code, diagnostics[0].severity) == (code, severity)


@pytest.mark.asyncio
async def test_hover_explains_why_and_the_fix(client: LanguageClient, tmp_path: Path) -> None:
    uri, _, diagnostics = await opened(client, FIXTURES / "TM105" / "positive-clip-scaled.py",
                                       tmp_path)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=diagnostics[0].range.start))

    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert text.startswith("**TM105**")
    assert "multiplied by the loss scale" in text  # why
    assert "scaler.unscale_(optimizer)" in text  # the fix
    assert "(https://trainmedic.dev/rules/amp-loss-scale)" in text
    assert hover.range == diagnostics[0].range


async def hover_text(client: LanguageClient, path: Path, tmp_path: Path) -> str:
    uri, _, diagnostics = await opened(client, path, tmp_path)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=diagnostics[0].range.start))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


@pytest.mark.asyncio
async def test_a_config_hover_shows_the_fix_in_the_configs_own_terms(
        client: LanguageClient, tmp_path: Path) -> None:
    text = await hover_text(client, FIXTURES / "TM109" / "positive-accelerate.yaml", tmp_path)

    assert "mixed_precision: bf16" in text
    assert "TrainingArguments" not in text  # the Python way is not the YAML file's


@pytest.mark.asyncio
async def test_a_json_hover_offers_no_comment_json_cannot_hold(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    json_text = await hover_text(client, FIXTURES / "TM107" / "positive-deepspeed.json",
                                 tmp_path)
    python_text = await hover_text(client, FIXTURES / "TM107" / "positive-growth-disabled.py",
                                   tmp_path)

    assert "# trainmedic: ignore[TM107]" in python_text
    assert "# trainmedic: ignore" not in json_text
    assert "JSON has no comments" in json_text
    assert '"loss_scale": 0' in json_text


@pytest.mark.asyncio
@pytest.mark.parametrize("code", FIXABLE)
async def test_quick_fix_removes_the_finding(client: LanguageClient, tmp_path: Path,
                                             code: str) -> None:
    uri, text, diagnostics = await opened(client, positive(code), tmp_path)
    target = next(d for d in diagnostics if d.code == code)

    fixes = [a for a in await actions(client, uri, target) if a.is_preferred]
    assert len(fixes) == 1
    assert fixes[0].kind == types.CodeActionKind.QuickFix
    assert fixes[0].edit is not None
    assert fixes[0].edit.changes is not None
    fixed = apply(text, list(fixes[0].edit.changes[uri]))
    change(client, uri, fixed, 2)
    after = (await next_diagnostics(client, uri)).diagnostics

    assert len([d for d in after if d.code == code]) < \
        len([d for d in diagnostics if d.code == code])


@pytest.mark.asyncio
async def test_ignore_here_silences_the_line(client: LanguageClient, tmp_path: Path) -> None:
    uri, text, diagnostics = await opened(client, FIXTURES / "TM110" / "positive-resume.py",
                                          tmp_path)
    ignore = next(a for a in await actions(client, uri, diagnostics[1])
                  if a.title == "Ignore TM110 here")
    assert ignore.edit is not None
    assert ignore.edit.changes is not None
    silenced = apply(text, list(ignore.edit.changes[uri]))
    assert "torch.load(url_or_path)  # a file from the model zoo  # trainmedic: ignore[TM110]" \
        in silenced
    change(client, uri, silenced, 2)
    after = (await next_diagnostics(client, uri)).diagnostics
    assert [d.range.start.line for d in after] == [diagnostics[0].range.start.line]


@pytest.mark.asyncio
async def test_a_script_mid_edit_keeps_its_diagnostics(client: LanguageClient,
                                                       tmp_path: Path) -> None:
    uri, text, diagnostics = await opened(client, FIXTURES / "TM110" / "positive-resume.py",
                                          tmp_path)
    change(client, uri, text.replace("def resume(", "def resume(("), 2)
    with pytest.raises(asyncio.TimeoutError):
        await next_diagnostics(client, uri, timeout=1.0)
    assert client.diagnostics[uri] == diagnostics


@pytest.mark.asyncio
@pytest.mark.settings({"scriptChecks": False})
async def test_script_checks_can_be_turned_off(client: LanguageClient, tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text("import torch\nstate = torch.load(p)\n", "utf-8")
    open_script(client, target.as_uri(), target.read_text("utf-8"), ".py")
    with pytest.raises(asyncio.TimeoutError):
        await next_diagnostics(client, target.as_uri(), timeout=min(1.0, TIMEOUT))


@pytest.mark.asyncio
async def test_hover_right_after_an_edit_answers_from_the_last_check(
        client: LanguageClient, tmp_path: Path) -> None:
    uri, text, diagnostics = await opened(client, FIXTURES / "TM105" / "positive-clip-scaled.py",
                                          tmp_path)
    at = diagnostics[0].range.start
    edited = text + "\n# a comment typed at the end\n"
    change(client, uri, edited, 2)  # the re-check is debounced: the hover comes first
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**TM105**")
    assert hover.range == diagnostics[0].range
    # the hovered line itself edited: what was found there no longer holds, checked again
    lines = text.splitlines(keepends=True)
    lines[at.line] = "pass\n"
    change(client, uri, "".join(lines), 3)
    gone = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at))
    assert gone is None

"""Script checks in a Jupyter notebook through the real server: the notebook is synced with
its cells, and diagnostics, hover and quick fixes are on the cells' documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_helpers import eventually, initialize_params
from lsprotocol import types
from pytest_lsp import LanguageClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks" / "finetune.ipynb"
KINDS = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}


def cell_uri(path: Path, index: int) -> str:
    """A cell's document URI as VS Code makes it: the notebook's path and a fragment."""
    return f"vscode-notebook-cell:{path}#W{index}sZmlsZQ%3D%3D"


async def start(client: LanguageClient, root: Path) -> types.InitializeResult:
    """Initialize as VS Code does, which also says it syncs notebooks."""
    params = initialize_params(root)
    params.capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    return await client.initialize_session(params)


def open_notebook(client: LanguageClient, path: Path) -> list[str]:
    """Open the fixture notebook as `path`; the URIs of its cells."""
    cells = json.loads(NOTEBOOK.read_text("utf-8"))["cells"]
    uris = [cell_uri(path, i) for i in range(len(cells))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=KINDS[c["cell_type"]], document=u)
                   for c, u in zip(cells, uris, strict=True)]),
        cell_text_documents=[types.TextDocumentItem(
            uri=u, version=1, text="".join(c["source"]),
            language_id="python" if c["cell_type"] == "code" else "markdown")
            for c, u in zip(cells, uris, strict=True)]))
    return uris


def edit_cell(client: LanguageClient, path: Path, uri: str, version: int, text: str) -> None:
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=path.as_uri(),
                                                                    version=version),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            text_content=[types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                changes=[types.TextDocumentContentChangeWholeDocument(text=text)])]))))


@pytest.mark.asyncio
async def test_notebook_cells_get_diagnostics_hover_and_fixes(bare_client: LanguageClient,
                                                              tmp_path: Path) -> None:
    client = bare_client
    sync = (await start(client, tmp_path)).capabilities.notebook_document_sync
    assert isinstance(sync, types.NotebookDocumentSyncOptions)
    (selector,) = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook"

    path = tmp_path / "finetune.ipynb"
    uris = open_notebook(client, path)
    await eventually(lambda: uris[2] in client.diagnostics and uris[3] in client.diagnostics)
    # The scaler is made in cell 1 and stepped in cell 2: one script.
    (step,) = client.diagnostics[uris[2]]
    assert (step.code, step.range.start.line, step.range.start.character) == ("TM104", 4, 4)
    assert [d.code for d in client.diagnostics[uris[3]]] == ["TM110"]
    assert uris[1] not in client.diagnostics
    assert uris[4] not in client.diagnostics

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]),
        position=types.Position(line=4, character=10)))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**TM104** scaler.step() without scaler.update()")

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]), range=step.range,
        context=types.CodeActionContext(diagnostics=[step])))
    fix = next(a for a in actions or [] if isinstance(a, types.CodeAction) and a.is_preferred)
    assert fix.title.startswith("Fix TM104")
    assert fix.edit is not None
    assert fix.edit.changes is not None
    assert {k: list(v) for k, v in fix.edit.changes.items()} == {uris[2]: [types.TextEdit(
        range=types.Range(start=types.Position(line=5, character=0),
                          end=types.Position(line=5, character=0)),
        new_text="    scaler.update()\n")]}

    source = "".join(json.loads(NOTEBOOK.read_text("utf-8"))["cells"][2]["source"]).split("\n")
    fixed = "\n".join([*source[:5], "    scaler.update()", *source[5:]])
    edit_cell(client, path, uris[2], 2, fixed)
    await eventually(lambda: not client.diagnostics[uris[2]])
    assert [d.code for d in client.diagnostics[uris[3]]] == ["TM110"]

    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=path.as_uri()),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in uris]))
    await eventually(lambda: not client.diagnostics[uris[3]])


@pytest.mark.asyncio
async def test_a_fix_for_a_line_that_ends_a_cell_edits_that_cell(bare_client: LanguageClient,
                                                                 tmp_path: Path) -> None:
    client = bare_client
    await start(client, tmp_path)
    path = tmp_path / "loop.ipynb"
    sources = ["import torch\nscaler = torch.amp.GradScaler('cuda')",
               "for batch in loader:\n    scaler.scale(model(batch)).backward()\n"
               "    scaler.step(optimizer)",
               "print('done')"]
    uris = [cell_uri(path, i) for i in range(3)]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=u)
                   for u in uris]),
        cell_text_documents=[types.TextDocumentItem(uri=u, version=1, text=s,
                                                    language_id="python")
                             for u, s in zip(uris, sources, strict=True)]))
    await eventually(lambda: uris[1] in client.diagnostics)
    (step,) = client.diagnostics[uris[1]]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uris[1]), range=step.range,
        context=types.CodeActionContext(diagnostics=[step])))
    fix = next(a for a in actions or [] if isinstance(a, types.CodeAction) and a.is_preferred)
    assert fix.edit is not None
    assert fix.edit.changes is not None
    assert {k: list(v) for k, v in fix.edit.changes.items()} == {uris[1]: [types.TextEdit(
        range=types.Range(start=types.Position(line=2, character=26),
                          end=types.Position(line=2, character=26)),
        new_text="\n    scaler.update()")]}

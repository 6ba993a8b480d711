"""Notebooks from the command line: `trainmedic check` on the code cells (cell-and-line
locations, fixes written into the cell's source) and `trainmedic diagnose` on the outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from trainmedic.checks.findings import CheckFinding, Position, Range, Severity, TextEdit
from trainmedic.checks.runner import fix_notebook, run_notebook_checks
from trainmedic.checks.sources.notebook import NotebookScript
from trainmedic.cli import EXIT_OK, EXIT_ROOT_CAUSE, main
from trainmedic.logs.formats import notebook as notebook_format

NOTEBOOK = Path(__file__).resolve().parent / "fixtures" / "notebooks" / "finetune.ipynb"


def notebook(*sources: str, outputs: list[dict[str, Any]] | None = None) -> str:
    """An nbformat 4 notebook: a markdown cell, then one code cell per source."""
    cells: list[dict[str, Any]] = [{"cell_type": "markdown", "metadata": {}, "source": ["# Run"]}]
    cells += [{"cell_type": "code", "execution_count": None, "metadata": {},
               "outputs": outputs or [], "source": s.splitlines(keepends=True)} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1) + "\n"


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    target = tmp_path / "finetune.ipynb"
    shutil.copy(NOTEBOOK, target)
    return target


def test_check_reports_cell_and_line(copied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(copied)]) == EXIT_ROOT_CAUSE
    out = capsys.readouterr().out.splitlines()
    # The scaler is made in cell 2 and stepped in cell 3: the cells are one script.
    assert out[0].startswith(f"{copied}:cell 3:5:5: TM104 scaler.step() without scaler.update()")
    assert out[1].startswith(f"{copied}:cell 4:1:9: TM110 torch.load without weights_only")
    assert out[-1] == "2 findings in 1 of 1 file (2 fixable with --fix)."


def test_json_names_the_cell_of_the_finding_and_of_each_edit(
        copied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", str(copied), "--format", "json"])
    first = json.loads(capsys.readouterr().out)["findings"][0]
    assert first["cell"] == 2
    assert first["range"]["start"] == {"line": 4, "character": 4}
    assert first["fix"] == [{"cell": 2, "range": {"start": {"line": 5, "character": 0},
                                                  "end": {"line": 5, "character": 0}},
                             "new_text": "    scaler.update()\n"}]


def test_fix_edits_the_cells_and_keeps_the_rest_of_the_json(
        copied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = json.loads(copied.read_text("utf-8"))
    assert main(["check", str(copied), "--fix"]) == EXIT_OK
    assert "Fixed 2." in capsys.readouterr().out
    after = json.loads(copied.read_text("utf-8"))
    assert "".join(after["cells"][2]["source"]).splitlines()[4:6] == [
        "    scaler.step(optimizer)", "    scaler.update()"]
    assert "weights_only=True" in after["cells"][3]["source"][0]
    for index in (0, 1, 4):  # the markdown, the clean cell, and the failed cell's outputs
        assert after["cells"][index] == before["cells"][index]
    assert {k: v for k, v in after.items() if k != "cells"} == \
        {k: v for k, v in before.items() if k != "cells"}
    assert copied.read_text("utf-8").startswith('{\n "cells": [\n  {\n')  # nbformat's indent


def test_a_line_added_after_a_cells_last_statement_stays_in_that_cell() -> None:
    text = notebook("import torch\nscaler = torch.amp.GradScaler('cuda')",
                    "for batch in loader:\n    scaler.scale(model(batch)).backward()\n"
                    "    scaler.step(optimizer)",
                    "print('done')")
    fixed = json.loads(fix_notebook("nb.ipynb", text))
    assert fixed["cells"][2]["source"] == [
        "for batch in loader:\n", "    scaler.scale(model(batch)).backward()\n",
        "    scaler.step(optimizer)\n", "    scaler.update()"]
    assert fixed["cells"][3]["source"] == ["print('done')"]


def test_ipython_lines_and_broken_cells_do_not_hide_the_others() -> None:
    text = notebook("!nvidia-smi\nfiles = !ls\n%load_ext autoreload",
                    "%%bash\ntorchrun train.py",
                    "def broken(:\n    pass",
                    "import torch\nstate = torch.load('ckpt.pt')")
    (found,) = run_notebook_checks("nb.ipynb", text)
    assert (found.cell, found.finding.code, found.finding.range.start.line) == (4, "TM110", 1)


def test_a_cell_of_pasted_data_is_not_read_and_does_not_hide_the_others() -> None:
    from trainmedic.checks.findings import MAX_CHECKED_CHARS

    pasted = "rows = [\n" + "    (1, 2, 3),\n" * (MAX_CHECKED_CHARS // 14) + "]"
    text = notebook(pasted, "import torch\nstate = torch.load('ckpt.pt')")
    (found,) = run_notebook_checks("nb.ipynb", text)
    assert (found.cell, found.finding.code) == (2, "TM110")


def test_suppression_comment_works_in_a_cell() -> None:
    text = notebook("import torch\nstate = torch.load('ckpt.pt')  # trainmedic: ignore[TM110]")
    assert run_notebook_checks("nb.ipynb", text) == []


def test_an_edit_across_two_cells_is_not_offered() -> None:
    script = NotebookScript.join("nb.ipynb", [(1, "a = 1\nb = 2"), (3, "c = 3")])
    assert script.text == "a = 1\nb = 2\nc = 3"
    where = Range(Position(1, 0), Position(1, 5))
    across = TextEdit(Range(Position(1, 2), Position(2, 2)), "")
    inside = TextEdit(Range(Position(2, 0), Position(2, 1)), "d")
    found = CheckFinding("TM000", "rule", "message", Severity.WARNING, where, (across,))
    assert script.place(found).fix is None
    placed = script.place(CheckFinding("TM000", "rule", "m", Severity.WARNING, where, (inside,)))
    assert placed.cell == 1
    assert placed.fix is not None
    assert [(e.cell, e.edit.range.start.line) for e in placed.fix] == [(3, 0)]


def test_check_refuses_a_json_that_is_not_a_notebook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.ipynb"
    path.write_text('{"rows": []}', "utf-8")
    main(["check", str(path)])
    assert "not a notebook: no list of cells" in capsys.readouterr().err


# --- diagnose: the outputs as a log --------------------------------------------------------------

def test_error_output_becomes_the_traceback_without_colours(
        capsys: pytest.CaptureFixture[str]) -> None:
    main(["diagnose", str(NOTEBOOK), "--format", "json"])
    (root,) = [d for d in json.loads(capsys.readouterr().out)["diagnoses"] if d["role"] == "root"]
    assert root["rule_id"] == "cuda-oom"
    evidence = root["evidence"][0]["text"]
    assert evidence.startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "\x1b" not in evidence


def test_decode_keeps_streams_and_errors_in_cell_order() -> None:
    # torch's message as an IPython error output: ename, evalue and the coloured traceback.
    error = {"output_type": "error", "ename": "RuntimeError",
             "evalue": "NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121",
             "traceback": ["\x1b[0;31mRuntimeError\x1b[0m                 Traceback (most recent "
                           "call last)", "\x1b[0;31mRuntimeError\x1b[0m: NCCL error in: "
                           "../torch/csrc/distributed/c10d/NCCLUtils.hpp:121"]}
    stream = {"output_type": "stream", "name": "stderr", "text": ["[rank1]: warning\n", "done"]}
    text = notebook("x = 1", "y = 2", outputs=[stream, error])
    decoded = notebook_format.decode(text.encode())
    assert decoded is not None
    assert decoded[0].splitlines()[:3] == ["[rank1]: warning", "done",
                                           "\x1b[0;31mRuntimeError\x1b[0m                 "
                                           "Traceback (most recent call last)"]
    assert decoded[0].count("NCCLUtils.hpp:121\n") == 2  # once per code cell


def test_error_output_without_traceback_is_its_name_and_message() -> None:
    error = {"output_type": "error", "ename": "KeyError", "evalue": "'model'", "traceback": []}
    assert notebook_format.error_text(error) == "KeyError: 'model'\n"


def test_a_notebook_that_ran_cleanly_is_an_empty_log_and_other_json_is_not_one() -> None:
    assert notebook_format.decode(notebook("print(1)").encode()) == ("", None)
    assert notebook_format.decode(b'{"cells": "no"}') is None
    assert notebook_format.decode(b"not json") is None


def test_a_fix_that_changes_an_import_cell_and_a_later_cell_edits_both() -> None:
    # torch.cuda.amp imported in one cell and used in the next: one rewrite across the two.
    text = notebook("import torch\nfrom torch.cuda.amp import GradScaler, autocast",
                    "scaler = GradScaler()\nwith autocast():\n    loss = model(x)")
    found = run_notebook_checks("nb.ipynb", text)
    assert {(f.cell, f.finding.code) for f in found} == {(1, "TM101"), (2, "TM101")}
    assert {e.cell for f in found for e in f.fix or ()} == {1, 2}
    cells = json.loads(fix_notebook("nb.ipynb", text))["cells"]
    assert cells[1]["source"] == ["import torch\n", "from torch.amp import GradScaler, autocast"]
    assert cells[2]["source"] == ['scaler = GradScaler("cuda")\n', 'with autocast("cuda"):\n',
                                  "    loss = model(x)"]

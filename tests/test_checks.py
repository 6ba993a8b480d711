"""Script checks: the registry, every check's fixtures, suppression, and applying fixes.

Fixtures live in tests/fixtures/checks/<code>/: `positive-*` files must fire the check (their
findings are pinned in `<name>.findings.txt`, their fixed text in `<stem>.fixed.<ext>`),
`negative-*` files must stay silent. tests/fixtures/checks/clean/ holds correct scripts and
configs on which nothing may fire, except TM101 on the deprecated `torch.cuda.amp` API.
Golden files change only with `pytest --update-golden`. labels.yaml there lists the codes
each fixture must give, and nothing else; the checks are scored against it.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.checks import (
    CHECKS,
    Check,
    CheckError,
    CheckFinding,
    apply_fixes,
    fix_all,
    ignore_edit,
    run_checks,
)
from trainmedic.checks.findings import split_lines
from trainmedic.checks.protocol import SECTIONS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "checks"


def _inputs(pattern: str) -> list[Path]:
    return sorted(p for p in FIXTURES.glob(pattern)
                  if ".fixed." not in p.name and not p.name.endswith(".findings.txt"))


POSITIVES = _inputs("TM*/positive-*")
NEGATIVES = _inputs("TM*/negative-*")
CLEAN = _inputs("clean/*")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _show(findings: list[CheckFinding]) -> str:
    return "".join(
        f"{f.range.start.line + 1}:{f.range.start.character + 1}-"
        f"{f.range.end.line + 1}:{f.range.end.character + 1} {f.code} {f.severity.value} "
        f"{f.message}{' [fix]' if f.fix else ''}\n" for f in findings)


def _golden(path: Path, actual: str | None, update: bool) -> None:
    """Compare with the golden file (None: there must be none), or rewrite it."""
    if update:
        if actual is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(actual, "utf-8", newline="")
        return
    if actual is None:
        assert not path.exists(), f"{path.name} is stale: run pytest --update-golden"
        return
    assert path.exists(), f"{path.name} is missing: run pytest --update-golden"
    assert path.read_text("utf-8") == actual


def _parses(path: Path, text: str) -> None:
    if path.suffix == ".py":
        ast.parse(text)
    elif path.suffix == ".json":
        json.loads(text)
    elif path.suffix in (".yaml", ".yml"):
        list(yaml.safe_load_all(text))
    elif path.suffix == ".sh" and shutil.which("bash"):
        subprocess.run(["bash", "-n"], input=text, text=True, check=True)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


# --- the registry ---------------------------------------------------------------------------

def test_codes_are_distinct_and_well_formed() -> None:
    codes = [check.code for check in CHECKS]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"TM\d{3}", code) for code in codes)
    assert codes == sorted(codes)
    names = [check.name for check in CHECKS]
    assert len(names) == len(set(names))


def test_every_check_links_to_a_catalogue_entry() -> None:
    ids = bundled().by_id
    for check in CHECKS:
        assert check.rule_id in ids, f"{check.code} links to unknown rule {check.rule_id}"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.code)
def test_check_documents_itself_in_fixed_sections(check: Check) -> None:
    sections = check.sections()
    assert tuple(sections) == SECTIONS, f"{check.code}: sections {list(sections)}"
    assert all(sections.values())
    assert check.summary()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.code)
def test_every_check_has_fixtures_that_fire_and_stay_quiet(check: Check) -> None:
    folder = FIXTURES / check.code
    assert any(p.parent == folder for p in POSITIVES), f"no positive fixture in {folder}"
    assert any(p.parent == folder for p in NEGATIVES), f"no negative fixture in {folder}"


# --- fixtures ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", POSITIVES, ids=_id)
def test_positive_fixture(path: Path, update_golden: bool) -> None:
    code = path.parent.name
    text = _read(path)
    findings = run_checks(str(path), text)
    assert code in {f.code for f in findings}
    _golden(path.with_name(f"{path.name}.findings.txt"), _show(findings), update_golden)

    fixed = fix_all(str(path), text)
    golden = path.with_name(f"{path.stem}.fixed{path.suffix}")
    _golden(golden, fixed if fixed != text else None, update_golden)
    if fixed != text:
        _parses(path, fixed)
        assert code not in {f.code for f in run_checks(str(golden), fixed)}


@pytest.mark.parametrize("path", NEGATIVES + CLEAN, ids=_id)
def test_correct_code_stays_silent(path: Path) -> None:
    text = _read(path)
    allowed = {"TM101"} if "torch.cuda.amp" in text else set()
    found = [f for f in run_checks(str(path), text) if f.code not in allowed]
    assert found == []


def test_deprecated_amp_loop_is_clean_after_its_fix() -> None:
    path = FIXTURES / "clean" / "amp-loop-cuda-amp.py"
    fixed = fix_all(str(path), _read(path))
    ast.parse(fixed)
    assert run_checks(str(path), fixed) == []
    assert "torch.cuda.amp." not in fixed
    assert "from torch.cuda.amp " not in fixed


def _labelled() -> dict[str, set[str]]:
    labels = yaml.safe_load((FIXTURES / "labels.yaml").read_text("utf-8"))
    return {name: set(codes) for name, codes in labels.items()}


def test_every_fixture_is_labelled() -> None:
    inputs = {_id(p) for p in _inputs("*/*") if p.suffix in (".py", ".json", ".yaml", ".yml",
                                                             ".sh")}
    assert inputs == set(_labelled())


def test_precision_and_recall_on_the_labelled_fixtures() -> None:
    """Every (file, code) the checks report against the labels: no false positive, no miss."""
    found, expected = set(), set()
    for name, codes in _labelled().items():
        path = FIXTURES / name
        found |= {(name, f.code) for f in run_checks(str(path), _read(path))}
        expected |= {(name, code) for code in codes}
    true = len(found & expected)
    precision = true / len(found) if found else 1.0
    recall = true / len(expected) if expected else 1.0
    assert (sorted(found - expected), sorted(expected - found)) == ([], []), \
        f"precision {precision:.3f}, recall {recall:.3f}"
    assert len(expected) >= 50  # the labels are not emptied to pass


# --- suppression and the ignore edit ------------------------------------------------------------

SCRIPT = """\
import torch
state = torch.load(path)
"""


@pytest.mark.parametrize(("comment", "silenced"), [
    ("  # trainmedic: ignore[TM110]", True),
    ("  # trainmedic: ignore", True),
    ("  # trainmedic:ignore[TM101, TM110]", True),
    ("  # trainmedic: ignore[TM101]", False),
    ("  # noqa", False),
])
def test_inline_suppression(comment: str, silenced: bool) -> None:
    text = SCRIPT.replace("(path)", f"(path){comment}")
    assert (run_checks("train.py", text) == []) is silenced


def test_ignore_edit_suppresses_exactly_that_finding() -> None:
    finding = run_checks("train.py", SCRIPT)[0]
    edit = ignore_edit("train.py", split_lines(SCRIPT), finding)
    assert edit is not None
    ignored = CheckFinding(finding.code, finding.rule_id, "", finding.severity, finding.range,
                           (edit,))
    silenced = apply_fixes(SCRIPT, [ignored])
    assert silenced.splitlines()[1] == "state = torch.load(path)  # trainmedic: ignore[TM110]"
    assert run_checks("train.py", silenced) == []


def test_ignore_edit_extends_an_existing_list() -> None:
    text = "import torch\nx = torch.load(p)  # trainmedic: ignore[TM101]\n"
    finding = run_checks("t.py", text)[0]
    edit = ignore_edit("t.py", split_lines(text), finding)
    assert edit is not None
    assert edit.new_text == ", TM110"


def test_shell_suppression_goes_at_the_end_of_a_continued_command() -> None:
    text = "torchrun pretrain_gpt.py \\\n    --loss-scale 1024 \\\n    --lr 1e-4\n"
    finding = run_checks("run.sh", text)[0]
    edit = ignore_edit("run.sh", split_lines(text), finding)
    assert edit is not None
    assert edit.range.start.line == 2
    assert run_checks("run.sh", text.replace("1e-4\n", "1e-4  # trainmedic: ignore\n")) == []


def test_json_has_no_inline_suppression() -> None:
    text = '{"fp16": {"enabled": true, "loss_scale": 128}}'
    finding = run_checks("ds.json", text)[0]
    assert ignore_edit("ds.json", split_lines(text), finding) is None


# --- reading files ----------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "where"), [
    ("train.py", "def f(:\n    pass\n", 0),
    ("ds.json", '{\n  "fp16": {"enabled": true,}\n}', 1),
    ("acc.yaml", "mixed_precision: [fp16\n", 1),
])
def test_unparsable_input_is_one_clear_error(name: str, text: str, where: int) -> None:
    with pytest.raises(CheckError) as raised:
        run_checks(name, text)
    assert raised.value.line == where
    assert "\n" not in str(raised.value)


def test_other_files_are_not_checked() -> None:
    assert run_checks("notes.txt", "torch.load(x)") == []


def test_positions_count_code_points_and_keep_crlf() -> None:
    text = "import torch\r\nname = 'été'; s = torch.load(p)\r\n"
    finding = run_checks("t.py", text)[0]
    line = text.split("\r\n")[1]
    assert line[finding.range.start.character:finding.range.end.character] == "torch.load"
    fixed = fix_all("t.py", text)
    assert fixed == text.replace("load(p)", "load(p, weights_only=True)")


def test_overlapping_fixes_converge_over_passes() -> None:
    text = "import torch\nwith torch.cuda.amp.autocast():\n    loss = f()\nloss.backward()\n"
    fixed = fix_all("t.py", text)
    assert "torch.autocast(\"cuda\", dtype=torch.bfloat16)" in fixed
    assert run_checks("t.py", fixed) == []


# --- reading what is set elsewhere --------------------------------------------------------------

def test_a_shell_variable_flag_is_reported_where_it_is_written() -> None:
    text = 'DTYPE="fp16"\ntorchrun train.py --${DTYPE} --lr 1e-4  # ${DTYPE} only here\n'
    (finding,) = run_checks("run.sh", text)
    line = text.splitlines()[finding.range.start.line]
    assert line[finding.range.start.character:finding.range.end.character] == "--${DTYPE}"
    assert (finding.code, finding.fix) == ("TM109", None)
    assert run_checks("run.sh", text.replace('"fp16"', '"bf16"')) == []


def test_an_import_inside_a_function_binds_only_that_function() -> None:
    text = ("import torch\n\n\ndef old():\n    from torch.cuda.amp import autocast\n"
            "    with autocast():\n        pass\n\n\ndef new(autocast):\n"
            "    with autocast():\n        pass\n")
    fixed = fix_all("t.py", text)
    assert "from torch.amp import autocast\n    with autocast(\"cuda\"):" in fixed
    assert fixed.endswith("def new(autocast):\n    with autocast():\n        pass\n")

"""`trainmedic check`: formats, --fix and --diff, exit codes, one line for bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainmedic.checks import CHECKS
from trainmedic.cli import EXIT_INPUT, EXIT_OK, EXIT_ROOT_CAUSE, main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "checks"
SCRIPT = FIXTURES / "TM104" / "positive-accumulation.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small repository: a script with findings, a clean config, a non-config JSON."""
    shutil.copy(SCRIPT, tmp_path / "train.py")
    shutil.copy(FIXTURES / "clean" / "deepspeed-bf16.json", tmp_path / "ds_config.json")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "skipped.py").write_text("torch.load(x)\n", "utf-8")
    (tmp_path / "package.json").write_text('{"name": "ui"}\n', "utf-8")
    (tmp_path / "notes.txt").write_text("not checked\n", "utf-8")
    return tmp_path


def test_text_output_and_exit_code(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(project)]) == EXIT_ROOT_CAUSE
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"{project / 'train.py'}:15:17: TM104 scaler.step() without "
                      "scaler.update() in the loop: the loss scale never moves, so overflows "
                      "keep skipping steps and small gradients keep underflowing "
                      "[amp-loss-scale] (fixable with --fix)")
    assert out[-1] == "1 finding in 1 of 3 files (1 fixable with --fix)."


def test_clean_files_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURES / "clean" / "amp-loop-torch-amp.py")]) == EXIT_OK
    assert capsys.readouterr().out == "No findings in 1 file.\n"


def test_json_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(project / "train.py"), "--format", "json"]) == EXIT_ROOT_CAUSE
    result = json.loads(capsys.readouterr().out)
    assert result["files"] == 1
    (finding,) = result["findings"]
    assert finding["code"] == "TM104"
    assert finding["rule_id"] == "amp-loss-scale"
    assert finding["severity"] == "warning"
    assert finding["url"] == "https://trainmedic.dev/rules/amp-loss-scale"
    assert finding["range"] == {"start": {"line": 14, "character": 16},
                                "end": {"line": 14, "character": 38}}
    assert finding["fix"] == [{"range": {"start": {"line": 15, "character": 0},
                                         "end": {"line": 15, "character": 0}},
                               "new_text": "                scaler.update()\n"}]


def test_sarif_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(project / "train.py"), "--format", "sarif"]) == EXIT_ROOT_CAUSE
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [c.code for c in CHECKS]
    assert all(r["helpUri"].startswith("https://trainmedic.dev/rules/") for r in rules)
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "TM104"
    assert result["level"] == "warning"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 15, "startColumn": 17, "endLine": 15, "endColumn": 39}
    change = result["fixes"][0]["artifactChanges"][0]
    assert change["replacements"][0]["insertedContent"]["text"] == \
        "                scaler.update()\n"


def test_diff_changes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (project / "train.py").read_text("utf-8")
    assert main(["check", str(project / "train.py"), "--diff"]) == EXIT_ROOT_CAUSE
    captured = capsys.readouterr()
    assert "+                scaler.update()\n" in captured.out
    assert captured.err == "trainmedic: 1 file would change; 0 findings would remain\n"
    assert (project / "train.py").read_text("utf-8") == before


def test_fix_writes_the_golden_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(project / "train.py"), "--fix"]) == EXIT_OK
    golden = SCRIPT.with_name("positive-accumulation.fixed.py")
    assert (project / "train.py").read_text("utf-8") == golden.read_text("utf-8")
    assert capsys.readouterr().out == "Fixed 1. No findings in 1 file.\n"


def test_fix_keeps_crlf_newlines(tmp_path: Path) -> None:
    script = tmp_path / "load.py"
    script.write_bytes(b"import torch\r\nstate = torch.load(path)\r\n")
    assert main(["check", str(script), "--fix"]) == EXIT_OK
    assert script.read_bytes() == \
        b"import torch\r\nstate = torch.load(path, weights_only=True)\r\n"


def test_unfixable_findings_remain_after_fix(tmp_path: Path) -> None:
    script = tmp_path / "ddp.py"
    shutil.copy(FIXTURES / "TM111" / "positive-ddp.py", script)
    assert main(["check", str(script), "--fix"]) == EXIT_ROOT_CAUSE


@pytest.mark.parametrize(("args", "message"), [
    (["missing.py"], "missing.py: no such file or directory"),
    (["notes.txt"], "notes.txt: not a file trainmedic checks"),
    (["broken.py"], "broken.py: cannot check: invalid syntax (line 1)"),
    (["binary.py"], "binary.py: cannot check: binary file, not a script or config"),
    (["empty"], "empty: no training scripts or configs in this directory"),
])
def test_bad_input_is_one_line_and_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n", "utf-8")
    (tmp_path / "broken.py").write_text("def f(:\n", "utf-8")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01torch")
    (tmp_path / "empty").mkdir()
    assert main(["check", *args]) == EXIT_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_a_walked_file_that_does_not_parse_is_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "template.py").write_text("def {{ name }}():\n", "utf-8")
    shutil.copy(FIXTURES / "clean" / "bf16-no-scaler.py", tmp_path / "train.py")
    assert main(["check", str(tmp_path)]) == EXIT_OK
    captured = capsys.readouterr()
    assert "template.py: skipped (" in captured.err
    assert captured.out == "No findings in 1 file.\n"


def test_the_pre_commit_hook_hands_over_exactly_the_files_check_reads() -> None:
    import re

    import yaml

    from trainmedic.checks.runner import SUFFIXES

    hooks = yaml.safe_load((FIXTURES.parents[2] / ".pre-commit-hooks.yaml").read_text("utf-8"))
    hook = next(h for h in hooks if h["id"] == "trainmedic-check")
    assert (hook["entry"], hook["language"]) == ("trainmedic check", "python")
    assert set(hook["types_or"]) == {"python", "jupyter", "json", "yaml", "shell"}
    files = re.compile(hook["files"])
    assert all(files.search(f"src/train{suffix}") for suffix in SUFFIXES)
    assert not any(files.search(name) for name in ("run", "notes.txt", "stubs.pyi", "a.py.bak"))


def test_generated_code_is_not_checked_at_length(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A module of 40,000 lines (a protobuf module, a dumped table) would take seconds and
    hundreds of MB to check; named it is one line and exit 3, walked it is skipped, at once."""
    from trainmedic.checks.findings import MAX_CHECKED_CHARS

    lines = ["import torch", "scaler = torch.cuda.amp.GradScaler()"]  # TM101, were it read
    lines += [f"TABLE_{i} = torch.zeros({i})" for i in range(MAX_CHECKED_CHARS // 25)]
    generated = tmp_path / "table_pb2.py"
    generated.write_text("\n".join(lines) + "\n", "utf-8")
    shutil.copy(FIXTURES / "clean" / "bf16-no-scaler.py", tmp_path / "train.py")
    assert main(["check", str(generated)]) == EXIT_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "table_pb2.py: cannot check: 1.3 MiB of text, longer than the 1 MiB checked" in err
    assert main(["check", str(tmp_path)]) == EXIT_OK
    captured = capsys.readouterr()
    assert "table_pb2.py: skipped (1.3 MiB of text" in captured.err
    assert captured.out == "No findings in 1 file.\n"


def test_a_file_too_large_for_any_kind_checked_is_not_read_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trainmedic.checks.command import MAX_READ_BYTES

    huge = tmp_path / "train.py"
    with huge.open("wb") as out:
        out.truncate(MAX_READ_BYTES + 1)  # sparse: no disk is written
    assert main(["check", str(huge)]) == EXIT_INPUT
    assert capsys.readouterr().err.endswith(
        "train.py: cannot check: larger than 64 MiB, not a script, config or notebook\n")

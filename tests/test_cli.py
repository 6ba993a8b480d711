"""The command line: the JSON contract, text for people, and one clear line for bad input."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trainmedic.cli import EXIT_INPUT, EXIT_ROOT_CAUSE, EXIT_RULES, EXIT_USAGE, main, script
from trainmedic.logs import inputs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fp16-loss-scale-4ranks.log"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainmedic", *args], input=stdin.decode() if stdin else None,
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


def test_diagnose_runs_without_the_cyclic_collector_and_gives_it_back(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from trainmedic import cli

    seen = []
    real = cli.cmd_diagnose
    monkeypatch.setattr(cli, "cmd_diagnose", lambda args: seen.append(gc.isenabled()) or real(args))
    assert gc.isenabled()
    assert main(["diagnose", str(EXAMPLE)]) == 0
    assert seen == [False]
    assert gc.isenabled()
    capsys.readouterr()


def test_the_answer_is_the_same_in_every_process() -> None:
    """Logs of several files, where some lines have a time and some do not: each process
    hashes None differently (its address), and the evidence order was that of a set."""
    answers = {run("diagnose", "tests/fixtures/launchers", "--format", "json").stdout
               for _ in range(4)}
    assert len(answers) == 1


def test_json_is_indented_on_a_terminal_and_one_line_when_piped(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["diagnose", str(EXAMPLE), "--format", "json"]) == 0
    piped = capsys.readouterr().out
    assert piped.count("\n") == 1
    assert piped.endswith("}\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["diagnose", str(EXAMPLE), "--format", "json"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith('{\n  "initiating_rank": 2,\n')
    assert json.loads(shown) == json.loads(piped)


def test_json_contract_on_the_bundled_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(EXAMPLE), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"initiating_rank", "initiating_basis", "initiating_reason",
                           "diagnoses", "ranks"}
    assert result["initiating_rank"] == 2
    assert result["initiating_basis"] == "first-root-cause"
    first = result["diagnoses"][0]
    assert set(first) >= {"rule_id", "title", "role", "confidence", "rank", "evidence", "fix",
                          "verify"}
    assert (first["rule_id"], first["role"], first["rank"]) == ("amp-loss-scale", "root", 2)
    assert 0 < first["confidence"] <= 1
    assert first["verify"] == "trainmedic probe amp"
    lines = EXAMPLE.read_text("utf-8").splitlines()
    for evidence in first["evidence"]:
        assert set(evidence) == {"path", "line", "rank", "text"}
        assert evidence["path"] == str(EXAMPLE)
        assert f"[rank{evidence['rank']}]" in evidence["text"]  # the rank that printed it
        assert lines[evidence["line"] - 1] == evidence["text"]
    texts = [e["text"] for e in first["evidence"]]
    assert "[rank2] step 9 loss=" in texts[0]  # the scale collapsing below 128
    assert "loss_scale=128" in texts[0]
    assert any("Minimum loss scale reached" in text for text in texts)
    assert result["ranks"]["2"] == {"status": "failed-first", "first_failure_line":
                                    {"path": str(EXAMPLE), "line": first["evidence"][0]["line"]}}
    assert [a["detector"] for a in result["series"]["loss_scale"]["anomalies"]][:1] == \
        ["scale-collapse"]
    roles = [d["role"] for d in result["diagnoses"]]
    assert roles == sorted(roles, key=lambda r: r != "root")


def test_text_output_names_cause_rank_fix_and_verification(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "Root cause: Mixed precision loss scale" in out
    assert "Initiating rank: 2 (its root-cause error came before any other rank's)" in out
    assert "Fix:" in out
    assert "GradScaler" in out
    assert "Verify:  trainmedic probe amp" in out
    assert f"{EXAMPLE}:137:" in out
    assert "loss_scale █" in out


def test_stdin_and_exit_code_flag() -> None:
    done = run("diagnose", "-", "--exit-code", stdin=EXAMPLE.read_bytes())
    assert done.returncode == EXIT_ROOT_CAUSE, done.stderr
    assert "Initiating rank: 2" in done.stdout
    healthy = run("diagnose", "-", "--exit-code", "--format", "json",
                  stdin=b"step 1 loss 2.0\nstep 2 loss 1.9\n")
    assert healthy.returncode == 0
    assert json.loads(healthy.stdout) == {
        "initiating_rank": None, "initiating_basis": "undetermined", "initiating_host": None,
        "initiating_reason": "", "diagnoses": [], "unexplained": [], "ranks": {},
        "series": {"loss": {"rank": None, "points": [[1.0, 2.0], [2.0, 1.9]], "anomalies": [],
                            "other_ranks": {}}}}


def test_directory_of_logs_is_read_recursively(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "attempt_0" / "2").mkdir(parents=True)
    (tmp_path / "attempt_0" / "2" / "stderr.log").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "model.bin").write_bytes(b"\0\1\2")
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnoses"][0]["rule_id"] == "amp-loss-scale"


def _diagnosed_json(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, Any]:
    assert main(["diagnose", *map(str, paths), "--format", "json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_compressed_log_is_read_as_the_text_it_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    import bz2
    import gzip
    import lzma

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    def answer(*paths: Path) -> tuple[object, ...]:
        result = _diagnosed_json(capsys, *paths)
        return (result["initiating_rank"], sorted(result["ranks"]),
                [(d["rule_id"], d["confidence"]) for d in result["diagnoses"]])

    (tmp_path / "attempt_0" / "2").mkdir(parents=True)
    packed = tmp_path / "attempt_0" / "2" / f"stderr.log{suffix}"
    packed.write_bytes(compress(EXAMPLE.read_bytes()))
    assert answer(packed) == answer(EXAMPLE)
    assert answer(tmp_path) == answer(EXAMPLE)  # found in a folder, its rank read from its path


def test_a_compressed_log_cut_short_is_read_up_to_the_cut_with_a_warning(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "job.log.gz"
    whole = gzip.compress(EXAMPLE.read_bytes())
    path.write_bytes(whole[: len(whole) * 3 // 4])
    done = run("diagnose", str(path), "--format", "json")
    assert done.returncode == 0
    assert "job.log.gz: the gzip data stops early" in done.stderr
    assert json.loads(done.stdout)["diagnoses"][0]["rule_id"] == "amp-loss-scale"


def test_a_compressed_binary_is_refused_and_skipped_in_a_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    (tmp_path / "weights.log.gz").write_bytes(gzip.compress(b"\0\1\2" * 100))
    one_line_error(run("diagnose", str(tmp_path / "weights.log.gz")), EXIT_INPUT,
                   "weights.log.gz: binary file, not a log")
    (tmp_path / "run.log.gz").write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    assert _diagnosed_json(capsys, tmp_path)["diagnoses"][0]["rule_id"] == "amp-loss-scale"


def one_line_error(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert done.returncode == code
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("trainmedic: ")
    assert text in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_file(tmp_path: Path) -> None:
    one_line_error(run("diagnose", str(tmp_path / "nope.log")), EXIT_INPUT,
                   "nope.log: no such file or directory")


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    path.write_bytes(b"PK\x03\x04\0\0binary")
    one_line_error(run("diagnose", str(path)), EXIT_INPUT, "weights.pt: binary file, not a log")


def test_directory_without_logs(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"\x89PNG")
    one_line_error(run("diagnose", str(tmp_path)), EXIT_INPUT, "no log files in this directory")


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    # Root reads files whatever their mode, so the refusal is simulated at os.open() (logs
    # are opened without blocking, so that a pipe named like a log is refused, not waited on).
    path = tmp_path / "secret.log"
    path.write_text("x")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(inputs.os, "open", refuse)
    assert main(["diagnose", str(path)]) == EXIT_INPUT
    assert capsys.readouterr().err == f"trainmedic: {path}: permission denied\n"


def test_unreadable_directory_entry_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "loop.log").symlink_to(tmp_path / "loop.log")
    (tmp_path / "ok.log").write_bytes(EXAMPLE.read_bytes())
    done = run("diagnose", str(tmp_path))
    assert done.returncode == 0
    assert "loop.log: skipped" in done.stderr
    assert "Traceback" not in done.stderr


def test_malformed_rule_pack(tmp_path: Path) -> None:
    folder = tmp_path / "pack" / "site"
    folder.mkdir(parents=True)
    (folder / "broken.yaml").write_text("id: broken\ntitle: x\n")
    one_line_error(run("diagnose", str(EXAMPLE), "--rules", str(tmp_path / "pack")),
                   EXIT_RULES, "broken.yaml:1: ")


def test_usage_error_exit_code() -> None:
    done = run("diagnose")
    assert done.returncode == EXIT_USAGE
    assert "the following arguments are required: PATH" in done.stderr


@pytest.mark.parametrize("command", [
    ["diagnose", str(EXAMPLE)], ["rules", "list"], ["check", "train.py"]])
def test_an_unknown_option_points_to_its_commands_help(command: list[str]) -> None:
    done = run(*command, "--bogus")
    assert done.returncode == EXIT_USAGE
    prog = " ".join(["trainmedic", *command[:2 if command[0] == "rules" else 1]])
    assert done.stderr == f"{prog}: error: unrecognized arguments: --bogus (see {prog} --help)\n"


def test_help_documents_exit_codes() -> None:
    done = run("diagnose", "--help")
    assert done.returncode == 0
    assert "exit codes:" in done.stdout
    assert "--format" in done.stdout


def test_rules_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "list", "--format", "json"]) == 0
    ids = {row["id"] for row in json.loads(capsys.readouterr().out)}
    assert {"amp-loss-scale", "amp-bf16-vs-fp16"} <= ids
    assert main(["rules", "show", "amp-bf16-vs-fp16"]) == 0
    shown = capsys.readouterr().out
    assert "Verify: trainmedic probe amp" in shown
    assert "Root causes:" in shown
    assert main(["rules", "show", "amp-loss"]) == EXIT_USAGE
    assert "did you mean: amp-loss-scale" in capsys.readouterr().err
    assert main(["rules", "test"]) == 0
    assert "PASS  amp-loss-scale" in capsys.readouterr().out


def test_the_command_leaves_what_it_made_to_the_exit_not_the_collector(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["trainmedic", "diagnose", str(EXAMPLE), "--exit-code"])
    frozen_before = gc.get_freeze_count()
    try:
        assert script() == EXIT_ROOT_CAUSE  # main's answer, passed on
        assert gc.get_freeze_count() > frozen_before
    finally:
        gc.unfreeze()
    assert "amp-loss-scale" in capsys.readouterr().out


def test_the_entry_point_freezes_the_command_it_imports_and_keeps_the_collector() -> None:
    code = ("import gc, sys; sys.argv = ['trainmedic', 'rules', 'list']; "
            "from trainmedic.__main__ import run; assert 'trainmedic.cli' not in sys.modules; "
            "code = run(); print(code, gc.isenabled(), gc.get_freeze_count() > 1000)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines()[-1] == "0 True True"


def test_diagnose_path_does_not_import_the_language_server() -> None:
    code = ("import sys; from trainmedic.cli import main; "
            f"main(['diagnose', {str(EXAMPLE)!r}]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().endswith("[]")


def _imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    listing = "import sys; print(); print(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", f"{code}\n{listing}"], capture_output=True,
                          text=True, check=True)
    return set(done.stdout.splitlines()[-1].split())


# What only some commands need: each loads when its command runs, not at every start.
NOT_FOR_DIAGNOSE = ("trainmedic.checks", "trainmedic.probes", "trainmedic.lsp",
                    "trainmedic.agents", "trainmedic.diagnosis.selftest",
                    "trainmedic.diagnosis.watch", "trainmedic.render.markdown", "yaml",
                    "fastjsonschema")


@pytest.mark.parametrize("code", [
    "import trainmedic.cli",
    "import contextlib\nfrom trainmedic.cli import main\n"
    "with contextlib.suppress(SystemExit): main(['--help'])"])
def test_the_command_line_and_its_help_load_no_command(code: str) -> None:
    loaded = _imported_after(code)
    assert {m for m in loaded if m.startswith("trainmedic.")} == {"trainmedic.cli"}
    assert "json" not in loaded


def test_diagnose_loads_only_what_diagnosing_needs() -> None:
    loaded = _imported_after(
        f"from trainmedic.cli import main; main(['diagnose', {str(EXAMPLE)!r}])")
    assert "trainmedic.diagnosis.engine" in loaded  # it did diagnose
    assert sorted(m for m in loaded if m.startswith(NOT_FOR_DIAGNOSE)) == []


def test_doctor_reports_the_backend_the_processes_and_the_catalogue(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    done = run("doctor")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("trainmedic ")
    assert any(line.startswith("catalogue: ") and " rules, " in line for line in lines)
    backend = next(line for line in lines if line.startswith("matcher backend: "))
    assert "hyperscan" in backend or "python-re" in backend
    assert any(line.startswith(f"cache: {tmp_path}") for line in lines)
    assert any(line.startswith("processes: ") for line in lines)
    loops = next(line for line in lines if line.startswith("scan loops: "))
    try:
        import trainmedic_native  # noqa: F401
    except ImportError:
        assert loops.startswith("scan loops: Python")
    else:
        assert loops.startswith("scan loops: C")


def test_text_output_says_how_the_rank_was_chosen(capsys: pytest.CaptureFixture[str]) -> None:
    # torch.multiprocessing.spawn's report of a child killed by SIGKILL
    path = ROOT / "tests" / "fixtures" / "launchers" / "spawn-kill.log"
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Initiating rank: 2 (the launcher saw it end by itself and then stopped the others)" \
        in out
    assert "torch.multiprocessing.spawn saw rank 2 end by itself (signal 9" in out


def test_text_output_says_why_no_rank_is_blamed(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    # three ranks raising the same error at once (the shape error of the torchrun fixtures)
    log = tmp_path / "alike.log"
    log.write_text("".join(
        f"[rank{r}]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x7 and 8x1)\n"
        for r in range(3)), "utf-8")
    assert main(["diagnose", str(log)]) == 0
    out = capsys.readouterr().out
    assert "Initiating rank: not determined (every rank failed alike, so no single rank " \
           "started it)" in out

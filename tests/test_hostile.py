"""Hostile input: absurd option values, pipes and devices named like logs, unreadable paths.

Each case ends in bounded time with one line on stderr and a documented exit code.
"""

from __future__ import annotations

import codecs
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainmedic.cli import EXIT_INPUT, EXIT_RULES, EXIT_USAGE, main
from trainmedic.events.parallel import cores

ROOT = Path(__file__).resolve().parents[1]
CUDA_LINE = b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def cli(*args: str, stdin: bytes | None = None, as_nobody: bool = False,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, killed after 30 s: a hang fails the test instead of the run."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] \
        if as_nobody and os.geteuid() == 0 else []
    done = subprocess.run([*prefix, sys.executable, "-m", "trainmedic", *args], input=stdin,
                          capture_output=True, timeout=30, check=False, cwd=cwd or ROOT)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode("utf-8", "replace"))


def one_line(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert done.returncode == code, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert text in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "text"), [
    (["diagnose", "x.log", "--max-bytes", "1e400"], "argument --max-bytes: not a size"),
    (["diagnose", "x.log", "--max-bytes", "-1"], "argument --max-bytes: not a size"),
    (["diagnose", "x.log", "--max-bytes", "nan"], "argument --max-bytes: not a size"),
    (["diagnose", "x.log", "--jobs", "99999999999999999999"], "argument --jobs/-j: not a proc"),
    (["diagnose", "x.log", "--jobs", "0"], "argument --jobs/-j: not a process count"),
    *([["watch", "x.log", option, value], f"argument {option}: not a number of seconds"]
      for option in ("--interval", "--timeout") for value in ("-1", "nan", "inf", "1e308")),
])
def test_absurd_numbers_are_usage_errors_in_one_line(
        args: list[str], text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert text in err


def test_more_jobs_than_cores_are_capped_and_said_only_when_verbose(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(CUDA_LINE)
    assert main(["diagnose", str(log), "--jobs", "500"]) == 0
    assert "capped" not in capsys.readouterr().err
    assert main(["diagnose", str(log), "--jobs", "500", "--verbose"]) == 0
    assert f"--jobs 500 capped at the {cores()} cores here" in capsys.readouterr().err


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the unprivileged user can enter (pytest's own is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="trainmedic-hostile-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_watch_on_an_unreadable_file_exits_3(shared_dir: Path) -> None:
    log = shared_dir / "run.log"
    log.write_bytes(CUDA_LINE)
    log.chmod(0o000)
    one_line(cli("watch", str(log), "--timeout", "5", as_nobody=True), EXIT_INPUT,
             f"trainmedic: {log}: permission denied")


def test_an_unreadable_rule_pack_says_permission_denied(shared_dir: Path) -> None:
    pack = shared_dir / "pack"
    pack.mkdir()
    pack.chmod(0o000)
    done = cli("rules", "list", "--rules", str(pack), as_nobody=True)
    one_line(done, EXIT_RULES, "permission denied")
    assert "no *.yaml rule files" not in done.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "live.log"
    os.mkfifo(path)
    return path


def test_a_fifo_named_as_a_log_is_refused_without_waiting_for_a_writer(fifo: Path) -> None:
    one_line(cli("diagnose", str(fifo)), EXIT_INPUT,
             f"trainmedic: {fifo}: a named pipe, not a regular file")


def test_a_socket_named_as_a_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.log"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        one_line(cli("diagnose", str(path)), EXIT_INPUT, "a socket, not a regular file")


def test_a_device_is_refused() -> None:
    one_line(cli("diagnose", "/dev/null"), EXIT_INPUT,
             "/dev/null: a character device, not a regular file")


def test_a_fifo_inside_a_folder_is_skipped_with_a_warning(fifo: Path) -> None:
    (fifo.parent / "rank1.log").write_bytes(CUDA_LINE)
    done = cli("diagnose", str(fifo.parent), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert f"warning: {fifo}: skipped (a named pipe, not a regular file)" in done.stderr
    assert json.loads(done.stdout)["initiating_rank"] == 1


def test_check_and_watch_refuse_a_fifo(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    os.mkfifo(script)
    one_line(cli("check", str(script), "--format", "json"), EXIT_INPUT,
             "a named pipe, not a regular file")
    log = tmp_path / "run.log"
    os.mkfifo(log)
    one_line(cli("watch", str(log), "--timeout", "5"), EXIT_INPUT,
             "a named pipe, not a regular file")


def test_a_fifo_in_a_watched_folder_is_not_opened(fifo: Path) -> None:
    (fifo.parent / "rank1.log").write_bytes(CUDA_LINE)
    done = cli("watch", str(fifo.parent), "--timeout", "20", "--format", "json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["initiating_rank"] == 1


def test_binary_standard_input_is_refused() -> None:
    one_line(cli("diagnose", "-", stdin=b"\x7fELF\x02\x01\x01\0\0\0" + bytes(5000)),
             EXIT_INPUT, "trainmedic: <stdin>: binary file, not a log")


def test_standard_input_is_bounded_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainmedic.logs import inputs

    monkeypatch.setattr(inputs, "STDIN_MAX_BYTES", 1000)
    stream = __import__("io").BytesIO(b"step 1 loss=1.0\n" * 200)
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stream})())
    with inputs.opened(["-"]) as streams:
        read = b"".join(s.read() for _name, s in streams)
    assert len(read) == 1000
    assert streams.warnings == ["<stdin>: read only the first 1000 bytes (the default for "
                                "standard input; --max-bytes changes it)"]


def test_help_documents_the_standard_input_bound() -> None:
    assert "4 GiB of standard input" in " ".join(cli("diagnose", "--help").stdout.split())


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_wide_log_with_a_byte_order_mark_is_decoded(tmp_path: Path, encoding: str) -> None:
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
           "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}[encoding]
    log = tmp_path / "run.log"
    text = "step 1 loss=1.0\r\n" * 3000 + CUDA_LINE.decode()
    log.write_bytes(bom + text.encode(encoding))
    done = cli("diagnose", str(log), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["initiating_rank"] == 1
    assert result["diagnoses"][0]["evidence"][0]["line"] == 3001


# --- YAML limits ----------------------------------------------------------------------------

LAUGHS = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in
                 zip("abcdefg", "bcdefgh", strict=True))
# under 400 bytes, expanding to 9**8 strings for whoever walks it
ALIAS_BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + LAUGHS
DEEP = "x: " + "[" * 50_000 + "]" * 50_000 + "\n"


@pytest.mark.parametrize(("text", "problem"), [
    (ALIAS_BOMB, ":2: (yaml): aliases are not allowed (*a)"),
    (DEEP, ":1: (yaml): nested deeper than 64 levels"),
    ("# padding\n" * 120_000, ": (yaml): larger than 1 MiB, not a rule or config"),
])
def test_a_hostile_rule_pack_is_one_line_in_bounded_time(
        tmp_path: Path, text: str, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    rule = tmp_path / "pack" / "numerics" / "hostile.yaml"
    rule.parent.mkdir(parents=True)
    rule.write_text(text)
    start = time.monotonic()
    assert main(["rules", "validate", str(tmp_path / "pack")]) == EXIT_RULES
    assert time.monotonic() - start < 5  # about 0.05 s; unbounded, it ran for minutes
    err = capsys.readouterr().err
    assert err == f"trainmedic: invalid rule: {rule}{problem}\n"


@pytest.mark.parametrize(("text", "problem"), [
    ("mixed_precision: fp16\n" + LAUGHS.replace("*a", '"lol"', 9),
     "invalid YAML: aliases are not allowed (*b) (line 3)"),
    ("mixed_precision: fp16\n" + DEEP, "invalid YAML: nested deeper than 64 levels (line 2)"),
    ("mixed_precision: fp16\n" + "# padding\n" * 120_000,
     "1.1 MiB of text, longer than the 1 MiB checked: generated code or data, not a "
     "training script or config"),
])
def test_a_hostile_accelerate_config_is_one_line_in_bounded_time(
        tmp_path: Path, text: str, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    config = tmp_path / "accelerate.yaml"
    config.write_text(text)
    start = time.monotonic()
    assert main(["check", str(config)]) == EXIT_INPUT
    assert time.monotonic() - start < 5  # about 0.05 s; unbounded, it ran for minutes
    assert f"trainmedic: {config}: cannot check: {problem}\n" in capsys.readouterr().err


def test_a_real_accelerate_config_still_parses() -> None:
    from trainmedic.checks.sources.config import parse_yaml

    # the shape `accelerate config` writes (accelerate 1.x, commands/config/cluster.py)
    text = ("compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n"
            "  gradient_accumulation_steps: 1\n  offload_optimizer_device: none\n"
            "  zero_stage: 2\ndistributed_type: DEEPSPEED\n"
            "mixed_precision: fp16\nnum_processes: 8\n")
    document = parse_yaml("accelerate.yaml", text)
    root = document.roots[0]
    deepspeed = root.get("deepspeed_config")
    assert deepspeed is not None
    assert deepspeed.get("zero_stage") is not None


# --- log globs ------------------------------------------------------------------------------

def test_nine_double_stars_against_a_deep_path_are_matched_in_bounded_time() -> None:
    import time

    from trainmedic.lsp.log_globs import is_log

    glob = "**/" * 9 + "*.log"
    deep = "/ws/" + "/".join(f"d{n}" for n in range(25))
    start = time.monotonic()
    assert not is_log(deep + "/notes.txt", [glob], ["/ws"])
    assert is_log(deep + "/run.log", [glob], ["/ws"])
    assert not is_log(deep + "/run.log.gz", ["**/a*a*a*a*a*a*a*a*a*b/**/*.log"], [])
    assert time.monotonic() - start < 2  # milliseconds; the backtracking glob took 29 s


@pytest.mark.parametrize(("glob", "path", "expected"), [
    ("**/*.log", "/ws/a/b/run.log", True),
    ("**/*.log", "/ws/run.log.txt", False),
    ("logs/**/rank-?.out", "/ws/logs/rank-1.out", True),
    ("logs/**/rank-?.out", "/ws/logs/a/b/rank-12.out", False),
    ("**.log", "/ws/a/b.log", True),
    ("{a,b{c,d}}/x.log", "/ws/bd/x.log", True),
    ("{a,b{c,d}}/x.log", "/ws/b/x.log", False),
    ("[!x]*.out", "/ws/xno.out", False),
    ("[a-c]*.out", "/ws/bob.out", True),
])
def test_glob_semantics(glob: str, path: str, expected: bool) -> None:
    from trainmedic.lsp.log_globs import is_log

    assert is_log(path, [glob], ["/ws"]) is expected


def test_an_invalid_glob_is_reported_and_skipped_and_the_others_kept() -> None:
    from trainmedic.lsp.log_globs import is_log
    from trainmedic.lsp.settings import Settings

    settings, problems = Settings().updated({"logGlobs": ["[z-a].log", "**/*.out"]})
    assert settings.log_globs == ("**/*.out",)
    assert len(problems) == 1
    assert problems[0].startswith("trainmedic.logGlobs: '[z-a].log' is not a valid glob (")
    assert "it is skipped" in problems[0]
    assert is_log("/ws/a.out", ["[z-a].log", "**/*.out"], ["/ws"])  # and matching copes too
    assert not is_log("/ws/a.log", ["[z-a].log"], ["/ws"])


def test_log_globs_wait_for_workspace_trust() -> None:
    manifest = json.loads((ROOT / "extension" / "package.json").read_text("utf-8"))
    restricted = manifest["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert "trainmedic.logGlobs" in restricted


# --- redaction ------------------------------------------------------------------------------

# (line as a log prints it, the secret that must not be shown)
LEAKS = [
    ('{"headers": {"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}}',
     "eyJhbGciOiJIUzI1NiJ9"),
    ("+ wandb login 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789"),
    ("+ python train.py --push_to_hub --hub_token hfx0Secret4Hub", "hfx0Secret4Hub"),
    ("+ accelerate launch train.py --hub-token=hfx0Other9Hub", "hfx0Other9Hub"),
    ('  password: "correct horse"', "correct horse"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("creds AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("SLACK_WEBHOOK xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "AbCdEfGhIjKlMnOpQrStUvWx"),
    (r'"key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98Zx\n'
     r'-----END RSA PRIVATE KEY-----"', "MIIEowIBAAKCAQEA7bq98Zx"),
]


def test_secrets_on_evidence_lines_are_redacted_in_text_and_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text("".join(
        f"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered {line}\n"
        for line, _secret in LEAKS))
    assert main(["diagnose", str(log), "--format", "json"]) == 0
    shown = capsys.readouterr().out
    evidence = " ".join(e["text"] for d in json.loads(shown)["diagnoses"] for e in d["evidence"])
    assert main(["diagnose", str(log)]) == 0
    text = capsys.readouterr().out
    for line, secret in LEAKS:
        assert secret not in shown, line
        assert secret not in text, line
    assert evidence.count("[REDACTED]") >= 3  # the evidence lines were there, masked
    assert main(["diagnose", str(log), "--format", "json", "--no-redact"]) == 0
    assert LEAKS[0][1] in capsys.readouterr().out


@pytest.mark.parametrize(("line", "secret"), LEAKS)
def test_each_secret_is_masked(line: str, secret: str) -> None:
    from trainmedic.render.redact import MASK, redact

    masked = redact(line)
    assert secret not in masked
    assert MASK in masked


# One line for each kind of secret the pattern knows, some in odd case: the quick test that
# lets most lines through unread must not let any of these through.
KINDS = [
    "HF_TOKEN set: hf_abcdefghijklmnopqrstuvwxyzABCDEF1234",
    "cloning with ghp_abcdefghijklmnopqrstuvwxyzABCDEF123456",
    "pushing with github_pat_11AAAAAAA0_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",  # no "gh" in it
    "OPENAI_APIKEY=abcdefXY12345678 and api-key: abcdefXY12345678",
    "git remote add origin https://oauth2:glpat-AbCdEfGhIjKlMnOpQrSt12@gitlab.example.com/x",
    "gcs client key AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;"
    "ACCOUNTKEY=Zm9vYmFyYmF6cXV4Zm9vYmFy==;EndpointSuffix=core.windows.net",
    "client = OpenAI(key=sk-proj-abcdefghijklmnopqrstuv)",
    "fetching git+https://trainer:s3cretpass@git.example.com/repo.git",
    "PASSWORD=hunter2hunter2",
    "Api_Key: abcdefXY12345678",
    "OPENA\u0130_AP\u0131_KEY=abcdefXY12345678",  # dotted and dotless I, which `re` takes for "i"
    "\u212aey ok; TO\u212aEN=abcdefXY12345678",  # KELVIN SIGN, which `re` takes for "k"
    *(line for line, _secret in LEAKS),
]


@pytest.mark.parametrize("line", KINDS)
def test_every_kind_of_secret_reaches_the_pattern(line: str) -> None:
    from trainmedic.render.redact import _mask, _secret_pattern, redact

    assert _secret_pattern().sub(_mask, line) != line  # the example holds a secret
    assert redact(line) == _secret_pattern().sub(_mask, line) or "AKIA" in line


# Lines with no secret that once reached the pattern: torchelastic names its `api.py` on every
# line it prints, and its errors end with a docs URL.
CLEAN = [
    "W1129 18:18:59.404000 26220 torch/distributed/elastic/multiprocessing/api.py:1028] "
    "Sending process 26229 closing signal SIGTERM",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
]


@pytest.mark.parametrize("line", CLEAN)
def test_lines_without_a_secret_are_shown_without_running_the_pattern(line: str) -> None:
    from trainmedic.render.redact import _may_hold_secret, _secret_pattern

    assert _secret_pattern().search(line) is None
    assert not _may_hold_secret(line)


@pytest.mark.parametrize("line", [
    "commit 0123456789abcdef0123456789abcdef01234567 step 3 loss=1.0",
    "--tokens 512 --max_length 2048",
    "password_hint: see the wiki",
    "Authorization failed: retrying",
])
def test_look_alikes_are_left_alone(line: str) -> None:
    from trainmedic.render.redact import redact

    assert redact(line) == line


def test_redaction_is_linear_on_hostile_lines() -> None:
    import time

    from trainmedic.render.redact import redact

    start = time.monotonic()
    for piece in ("-----BEGIN PRIVATE KEY-----", "password: '", "wandb login ", "--hub_token ",
                  "AKIAIOSFODNN7EXAMPLE ", "Authorization: ", "xoxb-", "a" * 39 + "/"):
        redact(piece * (200_000 // len(piece)))
    assert time.monotonic() - start < 2  # about 0.2 s: linear, where backtracking takes minutes


# A private key printed as stored (the body is made up): one evidence line per log line.
PEM_LINES = [
    "[rank0]: loading the service key:",
    "[rank0]: -----BEGIN PRIVATE KEY-----",
    "[rank0]: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "[rank0]: MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "[rank0]: -----END PRIVATE KEY----- loaded",
    "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
]
PEM_BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3S")


def test_a_private_key_across_evidence_lines_is_masked_in_text_and_json() -> None:
    from trainmedic.catalogue.load import bundled
    from trainmedic.model import Finding, Line, Role
    from trainmedic.render.json import finding_dict
    from trainmedic.render.text import _evidence_lines

    lines = tuple(Line("run.log", number, text, rank=0)
                  for number, text in enumerate(PEM_LINES, 1))
    finding = Finding("cuda-illegal-memory-access", Role.ROOT, 0, 0.9, lines)
    rule = bundled().get("cuda-illegal-memory-access")
    assert rule is not None
    shown = [e["text"] for e in finding_dict(finding, rule)["evidence"]]
    text = "\n".join(_evidence_lines(lines, secrets=False, limit=len(lines)))
    for body in PEM_BODY:
        assert body not in " ".join(shown)
        assert body not in text
    assert shown[0] == PEM_LINES[0]  # before the key and after it, lines are as they were
    assert shown[-1] == PEM_LINES[-1]
    assert shown[2] == shown[3] == "[REDACTED]"
    assert shown[4] == "[REDACTED]-----END PRIVATE KEY----- loaded"
    assert any(body in e["text"] for e in finding_dict(finding, rule, secrets=True)["evidence"]
               for body in PEM_BODY)


def test_a_public_key_or_certificate_across_lines_is_left_alone() -> None:
    from trainmedic.render.redact import redact_lines

    lines = ["-----BEGIN CERTIFICATE-----",
             "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQG",
             "-----END CERTIFICATE-----", "step 3 loss=1.0"]
    assert redact_lines(lines) == lines


def test_lines_redacted_together_are_redacted_as_each_alone() -> None:
    """`redact_lines` looks for the words of secrets once in all the lines joined; each line
    holding one, wherever it sits among clean ones, is masked as `redact` masks it alone."""
    from trainmedic.render.redact import redact, redact_lines

    clean = [*CLEAN, "[rank3]: step 7 loss=2.31 tokens/s=9430", "", "no secret \u212a here"]
    lines = [line for kind in KINDS for line in (*clean, kind)] + clean
    assert redact_lines(lines) == [redact(line) for line in lines]
    assert redact_lines(KINDS) == [redact(line) for line in KINDS]
    assert redact_lines(clean) == clean
    assert redact_lines([]) == []

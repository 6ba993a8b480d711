"""Bad input never crashes or hangs; secrets stay hidden; nothing touches the network."""

from __future__ import annotations

import io
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainmedic.catalogue.load import bundled
from trainmedic.catalogue.regex_safety import check_pattern
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.prefixes import parse_rank
from trainmedic.logs.reader import read_lines
from trainmedic.logs.timestamps import Clock, read_stamp
from trainmedic.metrics.samples import METRIC_GROUPS, parse_sample
from trainmedic.render.redact import _may_hold_secret, redact

CATALOGUE = bundled()
PROPERTY = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


LOG_LINES = st.sampled_from([
    "[rank3]: Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
    "RuntimeError: CUDA error: device-side assert triggered",
    "The above exception was the direct cause of the following exception:",
    "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=880, OpType=BROADCAST, Timeout(ms)=1800000)",
    "{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05}", "step 3 loss=0.0 loss_scale=0.5",
    "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 123)",
    "2026-01-01 00:00:00,000 INFO [rank0] x", "E0101 00:00:00.000000 1 api.py:1] x",
])
NOISY_BYTES = st.lists(
    st.one_of(st.binary(max_size=200), LOG_LINES.map(str.encode),
              st.sampled_from([b"\r", b"\r\n", b"\n", b"\0", b"\x1b[31m", b"\xff\xfe"])),
    max_size=60).map(b"".join)


@PROPERTY
@given(NOISY_BYTES)
def test_reader_numbers_every_line_and_never_raises(data: bytes) -> None:
    lines = list(read_lines(io.BytesIO(data), "x"))
    assert [ln.number for ln in lines] == list(range(1, len(lines) + 1))
    assert len(lines) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert all("\n" not in ln.text and "\r" not in ln.text for ln in lines)


@PROPERTY
@given(st.text(max_size=300))
def test_parsers_never_raise(text: str) -> None:
    rank, body = parse_rank(text)
    assert rank is None or rank >= 0
    assert text.endswith(body)
    stamp = Clock().date(read_stamp(text))
    assert stamp is None or isinstance(stamp, float)
    sample = parse_sample(text)
    if sample is not None:
        assert {name for name, _ in sample.values} <= METRIC_GROUPS
        assert all(isinstance(value, float) for _, value in sample.values)
        assert sample.step is None or sample.step >= 0


@PROPERTY
@given(st.lists(st.tuples(NOISY_BYTES, st.sampled_from(["a.log", "attempt_0/3/stderr.log",
                                                          "error.json", "slurm-9-2.out"])),
                min_size=1, max_size=3))
def test_engine_never_raises(inputs: list[tuple[bytes, str]]) -> None:
    diagnosis = diagnose([(f"{i}/{name}", io.BytesIO(data))
                          for i, (data, name) in enumerate(inputs)], CATALOGUE)
    assert diagnosis.initiating_rank is None or diagnosis.initiating_rank in diagnosis.ranks


EXTREME_SHAPES = {  # name: (bytes, the first finding's rule, or None)
    "a 1 MB line of word characters": (b"a" * (1 << 20) + b"\n", None),
    "a 1 MB line of repeated message starts": (b"Watchdog caught " * 65536 + b"\n", None),
    "a CR-only file": (b"progress\r" * 100_000, None),
    "NUL bytes": (b"\0" * 100_000 + b"\nRuntimeError: CUDA error: out of memory\n", "cuda-oom"),
    "deeply chained tracebacks": ((
        b"Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: x\n"
        b"During handling of the above exception, another exception occurred:\n") * 3000, None),
    "100,000 ranks": (b"".join(b"[rank%d]: RuntimeError: [../gloo/transport/tcp/"
                               b"unbound_buffer.cc:81] Connection closed by peer\n" % r
                               for r in range(100_000)), "peer-connection-lost"),
    "timestamps going backwards": (b"".join(
        b"2026-01-01 00:00:%02d,000 INFO [rank%d] RuntimeError: CUDA error: an illegal "
        b"memory access was encountered\n" % (59 - s, s % 7) for s in range(60)),
        "cuda-illegal-memory-access"),
}
SHAPE_SECONDS = 60  # far above what any shape takes; a hang, not slowness, fails the test


def _first_rule(data: bytes, answer: multiprocessing.SimpleQueue[str | None]) -> None:
    findings = diagnose([("shape.log", io.BytesIO(data))], CATALOGUE).findings
    answer.put(findings[0].rule_id if findings else None)


@pytest.mark.parametrize("name", EXTREME_SHAPES)
def test_extreme_shapes_finish_with_the_right_answer(name: str) -> None:
    data, expected = EXTREME_SHAPES[name]
    context = multiprocessing.get_context("fork")
    answer: multiprocessing.SimpleQueue[str | None] = context.SimpleQueue()
    worker = context.Process(target=_first_rule, args=(data, answer))
    worker.start()
    worker.join(SHAPE_SECONDS)
    if worker.is_alive():
        worker.kill()
        pytest.fail(f"{name}: no answer within {SHAPE_SECONDS} s")
    assert worker.exitcode == 0
    assert answer.get() == expected


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)*x", r"(a|aa)+b", r"(x)\1", r"\w+x"])
def test_catastrophic_patterns_are_refused(pattern: str) -> None:
    assert check_pattern(pattern) is not None


def test_every_bundled_pattern_is_in_the_linear_subset() -> None:
    for rule in CATALOGUE.rules:
        for fp in rule.fingerprints:
            assert check_pattern(fp.pattern) is None, (rule.id, fp.name)


def cli(*args: str, stdin: bytes | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "trainmedic", *args], input=stdin,
                          capture_output=True, timeout=timeout, check=False)


def test_a_stream_is_read_to_its_end_from_standard_input() -> None:
    # a named pipe is refused (tests/test_hostile.py): streams come in through `-`
    done = cli("diagnose", "-", "--format", "json",
               stdin=b"[rank1]: RuntimeError: CUDA error: an illegal memory access was "
                     b"encountered\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["initiating_rank"] == 1


def test_dev_zero_is_refused_as_a_device_and_stdin_bounded_by_max_bytes() -> None:
    done = cli("diagnose", "/dev/zero")
    assert done.returncode == 3
    assert done.stderr.decode() == ("trainmedic: /dev/zero: a character device, not a regular "
                                    "file (pipe a stream into `-` instead)\n")
    endless = cli("diagnose", "-", "--max-bytes", "1M", stdin=b"step 1 loss=1.0\n" * 200_000)
    assert endless.returncode == 0
    assert b"read only the first 1048576 bytes (--max-bytes)" in endless.stderr


def test_directory_of_ten_thousand_files(tmp_path: Path) -> None:
    for index in range(10_000):
        (tmp_path / f"worker-{index}.log").write_text(f"[rank {index}] step 1 loss=1.0\n")
    (tmp_path / "worker-4242.log").write_text(
        "[rank 4242] RuntimeError: CUDA error: an illegal memory access was encountered\n")
    done = cli("diagnose", str(tmp_path), "--format", "json", timeout=600)
    assert done.returncode == 0, done.stderr[-500:]
    result = json.loads(done.stdout)
    assert result["initiating_rank"] == 4242
    assert len(result["ranks"]) == 10_000


def test_symlink_loop_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    done = cli("diagnose", str(loop))
    assert done.returncode == 3
    assert done.stderr.decode().count("\n") == 1
    assert b"Too many levels of symbolic links" in done.stderr


SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "wandb": "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "bearer": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "url": "https://trainer:hunter2hunter2@registry.example.com/models",
}


def test_evidence_is_redacted_unless_asked(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("".join(
        f"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered ({s})\n"
        for s in SECRETS.values()))
    shown = cli("diagnose", str(log), "--format", "json").stdout.decode()
    text = cli("diagnose", str(log)).stdout.decode()
    for name, secret in SECRETS.items():
        value = secret.split("=")[-1].split("Bearer ")[-1].split(":")[-1].split("@")[0]
        assert value not in shown, name
        assert value not in text, name
    assert "[REDACTED]" in shown
    raw = cli("diagnose", str(log), "--format", "json", "--no-redact").stdout.decode()
    assert SECRETS["hf"] in raw


@pytest.mark.parametrize("kind", ["ghp", "gho", "ghu", "ghs", "ghr"])
def test_every_kind_of_github_token_is_redacted(kind: str) -> None:
    token = f"{kind}_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    assert redact(f"cloning with {token} failed") == "cloning with [REDACTED] failed"


def test_a_throughput_line_is_not_read_for_secrets() -> None:
    line = ("[rank3]: iteration 100/1000 | throughput per GPU (TFLOP/s/GPU): 161.5 | "
            "tokens per second per GPU: 4123.1 | lm loss: 2.1E+00 |")  # "token": in any case
    assert not _may_hold_secret(line.replace("tokens", "samples"))


NO_NETWORK = """
import socket, sys
def guard(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                 "socket.gethostbyaddr", "socket.sendto"):
        raise RuntimeError(f"network access: {event} {args!r}")
sys.addaudithook(guard)
from trainmedic.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_cli_never_touches_the_network(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "fp16-loss-scale-4ranks.log"
    for args in (["diagnose", str(example), "--format", "json"], ["rules", "test"],
                 ["rules", "show", "nccl-timeout"]):
        done = subprocess.run([sys.executable, "-c", NO_NETWORK, *args], capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "network access" not in done.stderr


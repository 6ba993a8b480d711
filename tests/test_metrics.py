"""Metric extraction from the shapes people print, and the detectors over real runs."""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shared_files import CORPUS, MISSING, case_id, healthy_logs, need

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.logs.reader import Chunk, LineCounter
from trainmedic.matching import hyperscan as fast
from trainmedic.matching.hyperscan import HyperscanMatcher
from trainmedic.matching.python import Matcher
from trainmedic.metrics import samples
from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.detectors.registry import DETECTORS, detector_params
from trainmedic.metrics.samples import SHORT_CHUNK_BYTES, Sample, parse_sample, scan_metrics
from trainmedic.model import Line

CATALOGUE = bundled()


@pytest.mark.parametrize(
    ("text", "values", "step"),
    [
        ("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2.5e-05, 'epoch': 0.05}",
         {"loss": 0.0, "grad_norm": math.nan, "lr": 2.5e-05}, None),
        (" iteration      100/  500000 | consumed samples:        51200 | lm loss: 7.512E+00 | "
         "loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 |",
         {"loss": 7.512, "loss_scale": 65536.0, "grad_norm": 1.234}, 100),
        ("[2023-02-28 20:08:24,113] [INFO] [stage_1_and_2.py:1769:step] [deepspeed] OVERFLOW! "
         "Rank 0 Skipping step. Attempted loss scale: 128.0, reducing to 64.0",
         {"loss_scale": 64.0}, None),
        ("Epoch 0:  12%|█▏        | 120/1000 [00:10<01:20, 11.0it/s, loss=nan, v_num=0]",
         {"loss": math.nan}, None),
        ("iter 100: loss 4.2350, time 12.31ms, mfu 3.20%", {"loss": 4.235}, 100),
        ("[rank 0] step 19 loss=13159763968.0000 scale=0.125",
         {"loss": 13159763968.0, "loss_scale": 0.125}, 19),
        ("[default1]:2026-11-29 18:30:52,793 INFO [rank1] train: step 1/20 loss=1.4599 "
         "avg_loss=1.4720", {"loss": 1.4599}, 1),
        ("2023-06-15 04:03:40,870 - mmdet - INFO - Epoch [1][50/3862]\tlr: 4.915e-05, "
         "task0.loss_heatmap: nan, loss: nan, grad_norm: nan",
         {"lr": 4.915e-05, "loss": math.nan, "grad_norm": math.nan}, None),
    ],
)
def test_extraction(text: str, values: dict[str, float], step: int | None) -> None:
    sample = parse_sample(text)
    assert sample is not None
    got = dict(sample.values)
    assert got.keys() == values.keys()
    for key, expected in values.items():
        assert got[key] == pytest.approx(expected, nan_ok=True)
    assert sample.step == step


@pytest.mark.parametrize("text", [
    "    loss.backward()",
    "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.",
    "[INFO] [config.py:1001:print]   loss_scale ................... 0",
])
def test_lines_without_metrics(text: str) -> None:
    assert parse_sample(text) is None


def run_detector(name: str, samples: list[Sample], **params: float) -> list[int]:
    """The line where the detector's evidence starts, once it has read every sample."""
    detector = DETECTORS[name](detector_params(name, params))
    for index, sample in enumerate(samples, start=1):
        detector.feed(sample, Line("x", index, ""))
    return [line.number for line, _ in detector.evidence()[:1]]


def values(name: str, series: list[float], overflow: bool = False) -> list[Sample]:
    return [Sample(((name, v),), step=i, overflow=overflow) for i, v in enumerate(series)]


def test_each_detector_declares_itself() -> None:
    for name, detector in DETECTORS.items():
        assert name == detector.NAME
        assert detector.DEFAULTS, name
        for key in detector.DEFAULTS:
            assert f"`{key}`" in detector.MEANS, (name, key)
        assert {"loss", "loss_scale", "grad_norm", "lr", "skipped"} >= detector.READS, name
        assert detector.METRIC in ("loss", "loss_scale", "grad_norm", "lr"), name


def state(detector: Detector) -> dict[str, object]:
    return copy.deepcopy({k: v for k, v in vars(detector).items() if k != "x"})


def test_a_sample_without_what_a_detector_reads_leaves_it_as_it_was() -> None:
    """Why a series may skip feeding a detector a sample without any value it READS."""
    every = ("loss", "loss_scale", "grad_norm", "lr")
    for name, kind in DETECTORS.items():
        reads, detector = kind.READS, kind()
        for step in range(30):  # history for the windowed detectors, a run of zeros at the end
            value = 1.0 + step if step < 25 else 0.0
            detector.feed(Sample(tuple((m, value) for m in every), step), Line("x", step, ""))
        before = state(detector)
        for value in (1e9, math.nan):  # what would move it, were it read
            others = tuple((m, value) for m in every if m not in reads)
            detector.feed(Sample(others, 99, overflow=True), Line("x", 99, ""))
        assert state(detector) == before, name


def test_a_rank_has_only_the_detectors_its_samples_were_read_by() -> None:
    """A job of thousands of ranks prints a few samples per rank: each rank's detectors are
    made when first fed, and one never fed is what it would be unmade (see the test above)."""
    from trainmedic.diagnosis.engine import metric_series

    series = metric_series(bundled())
    for rank in range(1000):
        series.feed(Sample((("loss", 2.0),), 1), Line("x", rank + 1, "", rank))
    made = {type(d).NAME for detectors in series.detectors_of.values() for d in detectors
            if d is not None}
    assert made == {name for name, kind in DETECTORS.items() if "loss" in kind.READS
                    and any(key[0] == name for key in series.keys)}
    assert all(len(detectors) == len(series.keys) for detectors in series.detectors_of.values())


def test_detectors_on_numbers() -> None:
    assert run_detector("zero-loss-run", values("loss", [0.0] * 25)) == [20]
    assert run_detector("zero-loss-run", values("loss", [0.0] * 19 + [0.1] + [0.0] * 5)) == []
    assert run_detector("non-finite-loss", values("loss", [1.0, math.nan, 1.0, math.inf])) == [4]
    halving = [2.0 ** (16 - i) for i in range(20)]
    assert run_detector("scale-collapse", values("loss_scale", halving)) == [10]
    start = [2.0 ** (32 - i) for i in range(16)]  # a healthy start calibrating from 2**32
    assert run_detector("scale-collapse", values("loss_scale", start)) == []
    stuck = [Sample((("loss", math.inf), ("loss_scale", 65536.0)), i) for i in range(5)]
    assert run_detector("scale-stuck", stuck) == [3]
    assert run_detector("scale-stuck", values("loss_scale", [1.0] * 5000)) == []
    assert run_detector("overflow-rate", values("loss_scale", [1024.0] * 30, True)) == [20]
    growth = [3.8e12 * 1.5**i for i in range(10)]
    assert run_detector("grad-norm-growth", values("grad_norm", growth)) == [7]
    flat = [1.0 + 0.01 * (i % 5) for i in range(60)]
    assert run_detector("grad-norm-spike", values("grad_norm", [*flat, 50.0])) == [61]
    assert run_detector("grad-norm-spike", values("grad_norm", flat)) == []
    assert run_detector("loss-divergence", values("loss", [*flat, 9.0, 9.5, 10.0])) == [63]


def test_scale_floor_sees_a_collapsed_scale_wherever_it_started() -> None:
    # fairseq's loss_scale column, pasted without the fall from 2**7 (numerics corpus, fairseq)
    assert run_detector("scale-floor", values("loss_scale", [0.062, 0.062, 0.031, 0.004])) \
        == [2]
    assert run_detector("scale-floor", values("loss_scale", [8.0, 0.0, 0.0])) == [3]  # underflowed
    # 0 alone is how a configuration asks for dynamic scaling (`"loss_scale": 0`)
    assert run_detector("scale-floor", values("loss_scale", [0.0, 0.0])) == []
    # DeepSpeed pinned at its min_loss_scale of 1: "Attempted loss scale: 1, reducing to 1"
    assert run_detector("scale-floor", values("loss_scale", [1.0, 1.0, 1.0], True)) == [2]
    # a healthy start calibrating from 2**16 never gets near the floor
    assert run_detector("scale-floor", values("loss_scale", [2.0 ** (16 - i) for i in range(8)])) \
        == []
    # one misread value is not a pattern
    assert run_detector("scale-floor", values("loss_scale", [65536.0, 0.5, 65536.0])) == []


def test_grad_norm_breaks_only_when_it_never_recovers() -> None:
    nan = math.nan
    assert run_detector("grad-norm-breaks", values("grad_norm", [2.0, 1.9, 2.1, 2.0, nan])) == [5]
    assert run_detector("grad-norm-breaks",
                        values("grad_norm", [2.0, 1.9, 2.1, 2.0, nan, nan])) == [5]
    # one skipped fp16 step, then finite again: a healthy run
    assert run_detector("grad-norm-breaks",
                        values("grad_norm", [2.0, 1.9, 2.1, 2.0, nan, 1.8])) == []
    # a dynamic scale calibrating: non-finite before any finite history
    assert run_detector("grad-norm-breaks", values("grad_norm", [nan, nan, 2.0, 1.9])) == []


def test_scale_floor_leaves_the_constant_scale_of_bf16_runs_alone() -> None:
    # Megatron-LM prints "loss scale: 1.0" on every iteration of a bf16 (or fp32) run
    line = (" iteration      {}/  500000 | consumed samples:        51200 | lm loss: 7.512E+00 | "
            "loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 |")
    samples = [parse_sample(line.format(step)) for step in range(100, 3100, 100)]
    assert run_detector("scale-floor", [s for s in samples if s is not None]) == []
    assert fired("\n".join(line.format(step) for step in range(100, 3100, 100))) == set()
    # the same scale after it fell from 2**16 is a collapse
    fell = [2.0 ** (16 - i) for i in range(17)] + [1.0] * 3
    assert run_detector("scale-floor", values("loss_scale", fell)) == [18]


def real_run(script: str, tmp_path: Path) -> str:
    pytest.importorskip("torch")
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(script), "utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout + done.stderr


LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
for step in range(1, STEPS + 1):
    x, y = torch.randn(8, 16), torch.randn(8, 1) * TARGET
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    scaler.step(optimizer)
    UPDATE
    print(f"step {step} loss={loss.item():.6g} grad_norm={norm.item():.6g} "
          f"loss_scale={scaler.get_scale():g}", flush=True)
"""


def fired(text: str) -> set[str]:
    series = diagnose_text(text, CATALOGUE, "run.log").series
    return {a.detector for plot in series for a in plot.anomalies}


def test_real_fp16_overflow_halves_the_scale_every_step(tmp_path: Path) -> None:
    log = real_run(LOOP.replace("STEPS", "30").replace("TARGET", "1e6")
                   .replace("UPDATE", "scaler.update()"), tmp_path)
    assert "scale-collapse" in fired(log)
    diagnosis = diagnose_text(log, CATALOGUE, "run.log")
    assert diagnosis.findings[0].rule_id == "amp-loss-scale"


def test_real_scaler_whose_update_is_never_called(tmp_path: Path) -> None:
    # torch 2.x refuses the second step() without update(): the fingerprint catches it.
    script = LOOP.replace("STEPS", "5").replace("TARGET", "1.0").replace(
        "UPDATE", "pass  # scaler.update() forgotten")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        real_run(script, tmp_path)
    log = failed.value.stdout + failed.value.stderr
    assert "unscale_() is being called after step()" in log
    assert diagnose_text(log, CATALOGUE, "run.log").findings[0].rule_id == "amp-loss-scale"


STATIC = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(16, 1).half()
STATIC_SCALE = 1024.0  # a hand-rolled static loss scale: never adapts to overflow
for step in range(1, 13):
    x, y = torch.randn(8, 16).half(), torch.randn(8, 1).half() * 300
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x).float(), y.float())
    (loss * STATIC_SCALE).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    print(f"step {step} loss={loss.item():.6g} grad_norm={norm.item():.6g} "
          f"loss_scale={STATIC_SCALE:g}", flush=True)
"""


def test_real_static_scale_that_overflows_is_stuck(tmp_path: Path) -> None:
    log = real_run(STATIC, tmp_path)
    assert "grad_norm=inf" in log
    assert {"scale-stuck", "non-finite-grad-norm"} <= fired(log)
    assert diagnose_text(log, CATALOGUE, "run.log").findings[0].rule_id == "amp-loss-scale"


def test_real_healthy_fp16_run_fires_nothing(tmp_path: Path) -> None:
    log = real_run(LOOP.replace("STEPS", "200").replace("TARGET", "1.0")
                   .replace("UPDATE", "scaler.update()"), tmp_path)
    assert fired(log) == set()
    assert diagnose_text(log, CATALOGUE, "run.log").root_causes == ()


@pytest.mark.parametrize("path", healthy_logs() or [MISSING], ids=case_id)
def test_healthy_corpus_fires_no_detector(path: Path | None) -> None:
    text = need(path).read_text("utf-8")
    assert fired(text) == set()
    diagnosis = diagnose_text(text, CATALOGUE, path.name if path else "")
    assert (diagnosis.root_causes, diagnosis.unexplained_anomalies) == ((), ())


def test_a_rule_pack_can_teach_a_new_metric_format(tmp_path: Path) -> None:
    from trainmedic.catalogue.load import load

    rule = (Path(__file__).resolve().parents[1] / "rules" / "training-stability"
            / "amp-loss-scale.yaml").read_text("utf-8")
    pack = tmp_path / "pack" / "training-stability"
    pack.mkdir(parents=True)
    (pack / "amp-loss-scale.yaml").write_text(rule.replace(
        "detectors:\n", "metrics:\n  - pattern: 'it=(?P<step>\\d{1,9}) \\| L=(?P<loss>[\\d.]{1,20})"
        " \\| S=(?P<loss_scale>[\\d.]{1,20})'\ndetectors:\n", 1), "utf-8")
    log = "".join(f"[trainer] it={i} | L=0.000 | S=65536\n" for i in range(1, 31))
    assert fired(log) == set()  # the built-in formats do not know this one
    diagnosis = diagnose_text(log, load([tmp_path / "pack"]), "run.log")
    assert diagnosis.findings[0].rule_id == "amp-loss-scale"
    loss = next(plot for plot in diagnosis.series if plot.metric == "loss")
    assert loss.points[:2] == ((1.0, 0.0), (2.0, 0.0))
    assert {a.detector for a in loss.anomalies} == {"zero-loss-run"}


DETECTOR_RUNS = """
import sys, torch
torch.manual_seed(0)
case = sys.argv[1]
model = torch.nn.Linear(16, 1)
if case == "zero":      # fp16 underflow: a tiny loss computed in half precision is exactly 0
    for step in range(1, 31):
        out = model(torch.randn(8, 16)).half() * 1e-5
        loss = (out * out).mean()
        print(f"step {step} loss={loss.item():.6g}")
elif case == "diverge": # learning rate far too high: the loss grows, then becomes inf/nan
    opt = torch.optim.SGD(model.parameters(), lr=3.0)
    for step in range(1, 41):
        x = torch.randn(32, 16); y = x.sum(dim=1, keepdim=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        print(f"step {step} loss={loss.item():.6g} grad_norm={norm.item():.6g}")
elif case == "spike":   # one corrupt batch in a steady run
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(1, 61):
        x = torch.randn(32, 16) * (1000.0 if step == 50 else 1.0)
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(f"step {step} loss={loss.item():.6g} grad_norm={norm.item():.6g}")
elif case == "overflow":  # every third batch overflows fp16 gradients under a dynamic GradScaler
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(1, 41):
        x = torch.randn(8, 16); y = torch.randn(8, 1) * (1e6 if step % 3 == 0 else 1.0)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        print(f"step {step} loss={loss.item():.6g} loss_scale={scaler.get_scale():g}")
"""


@pytest.mark.parametrize(("case", "detectors", "first"), [
    ("zero", {"zero-loss-run"}, "amp-loss-scale"),
    ("diverge", {"loss-divergence", "non-finite-loss", "grad-norm-growth", "grad-norm-huge",
                 "non-finite-grad-norm"}, "gradient-explosion"),
    ("spike", {"grad-norm-spike"}, None),
    ("overflow", {"overflow-rate"}, "amp-loss-scale"),
])
def test_detectors_fire_on_real_runs(case: str, detectors: set[str], first: str | None,
                                     tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "runs.py"
    script.write_text(DETECTOR_RUNS, "utf-8")
    log = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    assert detectors <= fired(log)
    roots = diagnose_text(log, CATALOGUE, "run.log").root_causes
    assert (roots[0].rule_id if roots else None) == first


def test_real_exploding_grad_norm_from_the_corpus() -> None:
    path = need(CORPUS / "real-b" / "041.log")
    assert {"grad-norm-growth", "grad-norm-huge"} <= fired(path.read_text("utf-8"))


# Megatron-LM's step line (training.py, training_log); "number of nan iterations" is a count.
MEGATRON = ("[rank{rank}]: iteration {step:8d}/  500000 | consumed samples: {samples:12d} | "
            "lm loss: {loss} | loss scale: {scale} | grad norm: 0.753 | number of skipped "
            "iterations: {skipped:3d} | number of nan iterations: {skipped:3d} |")


def _megatron(steps: range, scale: str = "65536.0", loss: str = "2.667779E+00",
              ranks: int = 8) -> str:
    return "".join(MEGATRON.format(rank=step % ranks, step=step, samples=step * 1024,
                                   loss=loss, scale=scale, skipped=0) + "\n" for step in steps)


def _samples(text: str) -> list[Sample]:
    matcher = Matcher(CATALOGUE)
    data = text.encode()
    chunk = Chunk("x.log", data, 0, len(data))
    return [sample for sample, *_ in scan_metrics(chunk, matcher.signals(text),
                                                  LineCounter(data))]


def test_a_count_of_nan_iterations_is_no_nan_but_a_printed_nan_loss_is() -> None:
    quiet = _megatron(range(1, 3))
    assert "non-finite" not in Matcher(CATALOGUE).signals(quiet)
    assert "non-finite" in Matcher(CATALOGUE).signals(_megatron(range(1, 3), loss="nan"))
    assert "non-finite" in Matcher(CATALOGUE).signals("{'loss': 1.2, 'grad_norm': inf}\n")
    assert "non-finite" in Matcher(CATALOGUE).signals("step 4 loss nan\n")
    assert "non-finite" not in Matcher(CATALOGUE).signals("Loss is NaN at step 5\n"
                                                          "nan iterations: 0\n")


def test_a_long_chunk_reads_the_scale_where_it_changes_and_counts_the_rest() -> None:
    steps = range(1, 3001)  # well past SHORT_CHUNK_BYTES: sampled, not read line by line
    text = _megatron(steps[:1500]) + _megatron(steps[1500:], scale="32768.0")
    assert len(text) > SHORT_CHUNK_BYTES
    samples = _samples(text)
    assert len(samples) < len(steps) // 10
    scales = [s for s in samples if s.get("loss_scale") is not None]
    assert [s.get("loss_scale") for s in scales if s.repeats][:1] == [65536.0]
    assert sum(1 + s.repeats for s in samples if s.repeats or s.step in (1, 1501)) >= 2999
    assert 32768.0 in {s.get("loss_scale") for s in scales}
    # overflow-rate sees every step line it was not fed as a step that did not overflow
    overflow = DETECTORS["overflow-rate"]({})
    for sample in samples:
        overflow.feed(sample, Line("x.log", 0, ""))
    assert overflow.evidence() == []
    assert overflow.samples == len(steps)  # type: ignore[attr-defined]


def test_lines_ending_in_the_same_scale_say_the_same_whichever_rank_comes_next() -> None:
    """A step line ending in its scale is followed by another rank's prefix: what it says is
    its own line's end, so eight ranks printing one scale are read once, not once each."""
    text = "".join(f"[default{rank}]:step {step} loss=2.4 scale={65536.0 if step <= 200 else 0.5}\n"
                   for step in range(1, 401) for rank in range(8))
    data = text.encode()
    kept = samples._scale_lines(data, False, set())
    assert sorted(kept.values()) == [1599, 1599]  # the first line, and where the scale fell
    assert sum(1 + count for count in kept.values()) == text.count("\n")


def test_a_short_chunk_reads_every_scale_line() -> None:
    text = _megatron(range(1, 41))
    assert len(text) < SHORT_CHUNK_BYTES
    assert [s.step for s in _samples(text)] == list(range(1, 41))
    assert all(s.repeats == 0 for s in _samples(text))


def test_the_chart_shows_the_initiating_rank_and_keeps_the_others() -> None:
    # Two ranks log their loss; rank 1 then raises (torch's message for a wrong batch shape).
    text = "".join(f"[rank{r}]: step {s} loss {2.0 - s / 10 + r}\n"
                   for s in range(5) for r in (0, 1))
    text += ("[rank1]: Traceback (most recent call last):\n"
             '[rank1]:   File "train.py", line 9, in <module>\n'
             "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x7 and 8x1)\n")
    diagnosis = diagnose_text(text, bundled())
    assert diagnosis.initiating_rank == 1
    (loss,) = diagnosis.series
    assert loss.rank == 1
    assert loss.points[0] == (0.0, 3.0)
    assert [rank for rank, _ in loss.other_ranks] == [0]
    assert loss.other_ranks[0][1][0] == (0.0, 2.0)


def test_metric_lines_of_a_per_rank_file_are_that_ranks() -> None:
    # rank0.log … rank3.log without prefixes (tests/fixtures/per-rank-files): the loss lines of
    # each file are its rank's series, not one series of interleaved ranks.
    from trainmedic.diagnosis.engine import diagnose
    from trainmedic.logs.inputs import expand, opened

    folder = Path(__file__).parent / "fixtures" / "per-rank-files"
    files, _ = expand([str(folder)])
    with opened(files) as streams:
        diagnosis = diagnose(streams, bundled())
    (loss,) = diagnosis.series
    assert (loss.rank, [rank for rank, _ in loss.other_ranks]) == (1, [0, 2, 3])
    words = (folder / "rank3.log").read_text().split()
    logged = [float(words[i + 1]) for i, word in enumerate(words) if word == "loss"]
    assert [value for _, value in dict(loss.other_ranks)[3]] == logged


def test_scale_lines_are_each_change_with_the_count_of_lines_that_said_the_same() -> None:
    """The sampler keeps a scale line where it says something new (a skipped step, an
    overflow, a new scale) and counts the lines after it that said the same."""
    hysteresis = MEGATRON.format(rank=0, step=1200, samples=1, loss="2.5", scale="65536.0",
                                 skipped=1)  # a skipped step whose scale is kept (hysteresis)
    overflow = ("[rank3]: [2024-05-12 13:46:03,477] [INFO] [fused_optimizer.py:394:_update_"
                "scale] [deepspeed] OVERFLOW! Rank 3 Skipping step. Attempted loss scale: "
                "65536, reducing to 32768")  # DeepSpeed's own words
    text = (_megatron(range(1, 1200)) + hysteresis + "\n" + _megatron(range(1201, 1500))
            + overflow + "\n" + "[rank3]: Skipping step, loss scaler 0 reducing loss scale\n"
            + _megatron(range(1500, 3000), scale="32768.0"))
    data = text.encode()
    words = samples._scale_lines(data, False, set())
    kept = {data[start:data.find(b"\n", start)].decode(): count for start, count in words.items()}
    assert sum(1 + count for count in kept.values()) == text.count("\n")  # each line once
    assert hysteresis in kept  # a skipped step
    assert overflow in kept
    assert any("scale: 32768.0" in line for line in kept)  # the new scale
    assert len(kept) < 12


def test_non_finite_lines_from_the_matchers_match_ends_are_those_it_finds_itself() -> None:
    """The native matcher hands the sampler where the non-finite values it saw end; the lines
    read around them are those of the sampler's own search around the words."""
    text = ("[rank2]: step 1 loss=nan grad_norm=-inf\n"  # two on a line, at the chunk's start
            + _megatron(range(2, 400))
            + MEGATRON.format(rank=5, step=400, samples=1, loss="nan", scale="1.0", skipped=1)
            + "\n" + _megatron(range(401, 900))
            + "[rank1]: {'loss': NaN, 'grad_norm': 1.0}\n"
            + "[rank1]: loss\tinf at step 901, loss:\nnan\n"  # split over lines: no value
            + _megatron(range(902, 1500)))
    data = text.encode()
    chunk = Chunk("x.log", data, 0, len(data))
    signals = frozenset({"non-finite"})
    own = samples._notable_lines(data, signals, None)
    assert [data[start:data.find(b"\n", start)].split(b"]")[0] for start in own] == [
        b"[rank2", b"[rank5", b"[rank1", b"[rank1"]
    if fast.available():
        found = HyperscanMatcher(CATALOGUE).find_chunk(chunk)
        assert found.positioned is not None
        assert samples._notable_lines(data, signals, found.positioned) == own
        read = [samples.scan_metrics(chunk, found.signals, LineCounter(data), (), (),
                                     positioned) for positioned in (found.positioned, None)]
        assert repr(list(read[0])) == repr(list(read[1]))  # reprs: NaN is not NaN


@given(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 1e-3, 7.25]) | st.floats(0, 10),
                max_size=200),
       st.integers(1, 60), st.integers(1, 60))
def test_running_median_is_the_median_of_the_window_before(values: list[float], window: int,
                                                           min_history: int) -> None:
    import statistics

    from trainmedic.metrics.detectors.base import RunningMedian

    running = RunningMedian(window, min_history)
    for index, value in enumerate(values):
        seen = values[max(0, index - window):index]
        assert running.before(value) == (
            statistics.median(seen) if len(seen) >= min_history else None)


_CASELESS_LETTERS = {"s": "sS\u017f", "i": "iI\u0130\u0131", "l": "lL"}


def test_the_quick_plain_patterns_match_as_their_caseless_spelling() -> None:
    """The metric words' and the plain step, loss and bare scale patterns open with a letter
    class (quicker for `re` to look for); they match exactly where the patterns spelled out
    in any case do, for every spelling of their words, the letters a caseless match takes for
    `s` and `i` included."""
    import itertools

    spelled = {
        samples._PLAIN_STEP: r"(?i)\b(?:step|iter|iteration)\s{1,8}(\d{1,12})\b",
        samples._PLAIN_LOSS: r"(?i)\bloss\s{1,3}(" + samples._NUMBER + r")(?![\w.])",
        samples._BARE_SCALE:
            r"(?<![\w.])scale\s{0,3}[:=]\s{0,3}(" + samples._NUMBER + r")(?![\w.])",
    }
    texts = []
    for word in ("step", "iter", "iteration", "loss", "scale", "ste", "grad_norm", "grad norm"):
        for letters in itertools.product(*[_CASELESS_LETTERS.get(c, c + c.upper()) for c in word]):
            for before, after in zip(["", "x", " ", "_", ".", "é", "a "],
                                     [" 5", "  12 ", ": 5", "=nan", " NAN.", "\t-inf", "5"],
                                     strict=True):
                texts.append(before + "".join(letters) + after)
    text = "\n".join(texts)
    for quick, pattern in spelled.items():
        assert [(m.span(), m.groups()) for m in quick.finditer(text)] == \
            [(m.span(), m.groups()) for m in re.finditer(pattern, text)]
    data = text.encode()
    assert [m.span() for m in samples._TRIGGER_BYTES.finditer(data)] == \
        [m.span() for m in re.finditer(rb"(?i:loss|grad[_ ]norm)", data)]


@pytest.mark.parametrize("gap", [0, 3, samples.TRIGGER_WINDOW - 9, samples.TRIGGER_WINDOW - 4,
                                 samples.TRIGGER_WINDOW + 7, 5 * samples.TRIGGER_WINDOW])
def test_metric_words_far_apart_are_found_where_re_finds_them(gap: int) -> None:
    """Past TRIGGER_WINDOW bytes the words are looked for in a lowered copy: every case, and
    a word across the window's end, is found where `re` finds it, from every offset."""
    filler = b"[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout\n"
    words = [b"LoSs", b"GRAD norm", b"grad_Norm", b"loss", b"gradnorm", b"Grad_NORMloss"]
    data = b"".join(filler * (gap // len(filler) + 1) + b"x" * (gap % 7) + word
                    for word in words) + filler
    expected = re.compile(rb"(?i:loss|grad[_ ]norm)")
    found = samples._MetricWords(data)
    across = [match.start() - samples.TRIGGER_WINDOW + k for match in expected.finditer(data)
              for k in range(-1, 10)]  # the window ends inside the word
    for position in [*range(0, len(data), 97), *(p for p in across if p >= 0), len(data)]:
        for end in (None, position + gap + 20, len(data) + 5):
            match = expected.search(data, position, len(data) if end is None else end)
            assert found.next(position, end) == (match.start() if match else -1)

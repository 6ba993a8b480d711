"""Scoring and its output: which parts of a rule matched, the fix of that cause, the order of the
findings, and metric anomalies that no rule explains."""

from __future__ import annotations

import json

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import NEAR_CERTAIN, diagnose_text
from trainmedic.model import Diagnosis
from trainmedic.render.json import render_json
from trainmedic.render.markdown import diagnosis_markdown
from trainmedic.render.text import render_text

CATALOGUE = bundled()

# torch 2.13.0 on the CPU: GradScaler("cpu").unscale_() on the optimizer of a model.half()
UNSCALE_FP16 = """\
  File "/usr/lib/python3/site-packages/torch/amp/grad_scaler.py", line 275, in _unscale_grads_
    raise ValueError("Attempting to unscale FP16 gradients.")
ValueError: Attempting to unscale FP16 gradients.
"""
# DeepSpeed's dynamic scaler (ymcui/Chinese-LLaMA-Alpaca#534), then the unscale error
OVERFLOWS = """\
[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 \
Skipping step. Attempted loss scale: 64, reducing to 32
[2023-06-07 22:18:11,762] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 \
Skipping step. Attempted loss scale: 32, reducing to 16
"""
AT_MINIMUM = ("Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
              "Exiting run.\n")  # DeepSpeed (fe1ixxu/ALMA#33)
# pytorch v2.1 aten/src/ATen/native/cuda/Loss.cu, binary_cross_entropy's kernel assert
BCE_ASSERT = """\
../aten/src/ATen/native/cuda/Loss.cu:92: operator(): block: [79,0,0], thread: [118,0,0] \
Assertion `input_val >= zero && input_val <= one` failed.
RuntimeError: CUDA error: device-side assert triggered
"""
# milesial/Pytorch-UNet#375: a class label out of range
LABEL_ASSERT = """\
../aten/src/ATen/native/cuda/NLLLoss2d.cu:103: nll_loss2d_forward_kernel: block: [5,0,0], \
thread: [996,0,0] Assertion `t >= 0 && t < n_classes` failed.
RuntimeError: CUDA error: device-side assert triggered
"""
# pytorch/pytorch#152135: 250 MiB requested, 3.87 GiB reserved but unallocated
FRAGMENTED_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total "
    "capacity of 79.26 GiB of which 104.75 MiB is free. Process 1007710 has 79.14 GiB memory in "
    "use. Of the allocated memory 74.77 GiB is allocated by PyTorch, and 3.87 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    "\n")
# fairseq's DynamicLossScaler giving up, and the NaN stop of DETR/MAE-style training loops
EXPLODING_FP16 = """\
FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try \
lowering the learning rate, using gradient clipping or increasing the batch size.
Loss is nan, stopping training
"""
# fairseq --fp16 (facebookresearch/fairseq#515): the loss_scale column far below any start value
FAIRSEQ_SCALE = """\
| epoch 001:    200 / 1374 loss=14.351, ppl=20899.56, wps=49604, ups=0, wpb=277035.016, \
bsz=8563.074, num_updates=190, lr=4.84525e-06, gnorm=3.901, clip=0.000, oom=0.000, \
loss_scale=0.062, wall=1061, train_wall=945
| epoch 001:    300 / 1374 loss=13.689, ppl=13208.82, wps=51846, ups=0, wpb=277242.090, \
bsz=8636.772, num_updates=290, lr=7.34275e-06, gnorm=3.057, clip=0.000, oom=0.000, \
loss_scale=0.062, wall=1551, train_wall=1413
"""


def spike_log() -> str:
    """A steady run with one corrupt batch at step 50: a gradient-norm spike and nothing else."""
    return "".join(f"step {step} loss={2.0 - step * 0.01:.3f} "
                   f"grad_norm={50.0 if step == 50 else 1.0 + 0.01 * (step % 5):g}\n"
                   for step in range(1, 61))


def diagnosis(text: str) -> Diagnosis:
    return diagnose_text(text, CATALOGUE, "run.log")


def first_json(text: str) -> dict[str, object]:
    result = json.loads(render_json(diagnosis(text), CATALOGUE))
    first: dict[str, object] = result["diagnoses"][0]
    return first


def test_a_finding_names_the_parts_that_counted_in_evidence_order() -> None:
    finding = diagnosis(OVERFLOWS + UNSCALE_FP16).findings[0]
    assert finding.rule_id == "amp-loss-scale"
    assert finding.matched == ("overflow-skip-low-scale", "unscale-fp16-gradients")
    numeric = diagnosis(FAIRSEQ_SCALE).findings[0]
    assert (numeric.rule_id, numeric.matched) == ("amp-loss-scale", ("scale-floor",))


def test_the_fix_of_the_cause_that_matched_is_shown_everywhere() -> None:
    rule = CATALOGUE.by_id["amp-loss-scale"]
    own = rule.advice(("unscale-fp16-gradients",))
    assert own.fix != rule.fix
    assert "no .half()" in own.fix
    assert "fp32" in own.fix
    for text in (UNSCALE_FP16, OVERFLOWS + UNSCALE_FP16):  # the first part with a fix wins
        first = first_json(text)
        assert (first["rule_id"], first["fix"], first["verify"]) == \
            ("amp-loss-scale", own.fix, "trainmedic check train.py")
    shown = render_text(diagnosis(UNSCALE_FP16), CATALOGUE)
    assert "no .half()" in shown
    assert "Verify:  trainmedic check train.py" in shown
    assert "Use dynamic loss scaling" not in shown
    panel = diagnosis_markdown(diagnosis(UNSCALE_FP16), CATALOGUE)
    assert "no .half()" in panel
    assert "`trainmedic check train.py`" in panel


def test_a_cause_without_its_own_fix_shows_the_rule_fix() -> None:
    rule = CATALOGUE.by_id["amp-loss-scale"]
    first = first_json(OVERFLOWS + AT_MINIMUM)
    assert (first["fix"], first["verify"]) == (rule.fix, rule.verify_command)


def test_a_bce_range_assert_gets_bce_advice_not_label_advice() -> None:
    bce = first_json(BCE_ASSERT)
    assert bce["rule_id"] == "cuda-device-assert"
    assert "BCEWithLogitsLoss" in str(bce["fix"])
    assert "num_classes" not in str(bce["fix"])
    label = first_json(LABEL_ASSERT)
    assert label["rule_id"] == "cuda-device-assert"
    assert label["fix"] == CATALOGUE.by_id["cuda-device-assert"].fix
    assert "num_classes" in str(label["fix"])


def test_a_near_certain_generic_finding_stays_above_a_weak_specific_one() -> None:
    findings = diagnosis(FRAGMENTED_OOM).findings
    assert [f.rule_id for f in findings] == ["cuda-oom", "cuda-oom-fragmentation"]
    assert findings[0].confidence >= NEAR_CERTAIN > findings[1].confidence
    # both rules' advice agree on when the cache is fragmented rather than full
    for rule_id in ("cuda-oom", "cuda-oom-fragmentation"):
        fix = CATALOGUE.by_id[rule_id].fix
        assert "1 GiB" in fix, rule_id
        assert "expandable_segments:True" in fix, rule_id


def test_a_specific_rule_with_strong_evidence_still_outranks() -> None:
    findings = diagnosis(EXPLODING_FP16).findings
    assert [f.rule_id for f in findings][:2] == ["amp-loss-scale", "nan-loss"]
    assert findings[1].confidence >= NEAR_CERTAIN


def test_an_anomaly_no_rule_explains_is_the_headline() -> None:
    found = diagnosis(spike_log())
    assert found.root_causes == ()
    assert [a.detector for a in found.unexplained_anomalies] == ["grad-norm-spike"]
    shown = render_text(found, CATALOGUE)
    assert shown.splitlines()[0] == (
        "No known root cause; unexplained metric anomaly: the gradient norm exceeds 10 times "
        "the median of the previous 50 samples (after 10) (run.log:50)")
    assert "^ grad-norm-spike at run.log:50  (no rule explains it)" in shown
    result = json.loads(render_json(found, CATALOGUE))
    assert [a["detector"] for a in result["series"]["grad_norm"]["anomalies"]] == \
        ["grad-norm-spike"]
    assert diagnosis_markdown(found, CATALOGUE).startswith(
        "No known root cause; unexplained metric anomaly: the gradient norm exceeds")


def test_an_anomaly_a_finding_counted_is_not_unexplained() -> None:
    found = diagnosis(FAIRSEQ_SCALE)
    assert found.unexplained_anomalies == ()
    shown = render_text(found, CATALOGUE)
    assert shown.startswith("Root cause: Mixed precision loss scale")
    assert "^ scale-floor at run.log:2" in shown
    assert "no rule explains it" not in shown

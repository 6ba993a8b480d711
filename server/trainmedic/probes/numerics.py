"""NaN losses and exploding gradients: how to find the first non-finite value, on a tiny model.

Every check is a real PyTorch run on the CPU: anomaly mode naming the backward op that produced
NaN and its forward line, forward hooks naming the first module whose output is non-finite,
clip_grad_norm_(error_if_nonfinite=True) stopping on an inf gradient, and a learning rate that is
too high making the gradient norm explode while clipping plus a lower rate stays finite.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "NaN loss / exploding gradients: anomaly mode, first non-finite module, clipping"
STEPS = 60
HUGE = 1e6
HIGH_LR = 0.05  # diverges on this problem within a few steps
LOW_LR = 0.02


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _anomaly_check(torch: Any, report: Report) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    x = torch.randn(8, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly():
                loss = torch.sqrt(model(x) - 100.0).mean()  # sqrt of a negative number: NaN
                loss.backward()
            report.check(False, "anomaly mode did not stop on a NaN gradient")
            return
        except RuntimeError as error:
            message = _first_line(error)
    forward = ""
    for warning in caught:
        text = str(warning.message)
        if "Traceback of forward call" in text:
            code = [ln.strip() for ln in text.splitlines() if ln.startswith("    ")]
            forward = code[-1] if code else ""
    report.check("returned nan values" in message,
                 f"torch.autograd.set_detect_anomaly(True) stops at the op: {message}")
    if forward:
        report.info(f"its warning prints the forward line that created it: {forward}")


def _first_nonfinite_module(torch: Any, report: Report) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    batch = torch.randn(6, 4)
    batch[2, 1] = float("inf")  # one bad sample
    found: list[str] = []

    def hook(name: str) -> Any:
        def check(module: Any, inputs: Any, output: Any) -> None:
            if not found and not torch.isfinite(output).all():
                found.append(f"{name} ({type(module).__name__})")
        return check

    handles = [module.register_forward_hook(hook(name))
               for name, module in model.named_modules() if name]
    try:
        loss = model(batch).mean()
    finally:
        for handle in handles:
            handle.remove()
    bad_rows = (~torch.isfinite(batch).all(dim=1)).nonzero().flatten().tolist()
    report.check(bool(found) and not bool(torch.isfinite(loss)),
                 f"forward hooks find the first module with a non-finite output: "
                 f"{found[0] if found else 'none'}; the batch's non-finite rows: {bad_rows}")


def _clip_checks(torch: Any, report: Report) -> None:
    model = torch.nn.Linear(4, 2)
    for param in model.parameters():
        param.grad = torch.ones_like(param)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    report.check(bool(torch.isfinite(norm)),
                 f"clip_grad_norm_(max_norm=1.0, error_if_nonfinite=True) on finite gradients: "
                 f"total norm {float(norm):.3g}, clipped to 1.0")
    model.weight.grad[0, 0] = float("inf")
    try:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        report.check(False, "clip_grad_norm_ accepted an inf gradient")
    except RuntimeError as error:
        report.check("non-finite" in str(error),
                     f"an inf gradient makes it raise instead of stepping: {_first_line(error)}")


def _train(torch: Any, lr: float, clip: float | None) -> tuple[list[float], dict[str, float]]:
    """Grad norms of a small regression trained with SGD, and per-parameter norms of the first
    huge step."""
    torch.manual_seed(0)
    inputs = torch.randn(64, 8) * 3
    targets = inputs @ torch.randn(8, 1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    norms: list[float] = []
    first_huge: dict[str, float] = {}
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip or math.inf))
        norms.append(norm)
        if not first_huge and not (math.isfinite(norm) and norm < HUGE):
            first_huge = {name: float(p.grad.norm()) for name, p in model.named_parameters()}
        if not math.isfinite(norm):
            break
        optimizer.step()
    return norms, first_huge


def _divergence_checks(torch: Any, report: Report) -> None:
    norms, first_huge = _train(torch, lr=HIGH_LR, clip=None)
    exploded = next((i for i, n in enumerate(norms) if not (math.isfinite(n) and n < HUGE)), None)
    shown = " -> ".join(f"{n:.2g}" for n in norms[:12])
    report.check(exploded is not None,
                 f"lr={HIGH_LR} without clipping: grad norm {shown} (>= {HUGE:.0e} at step "
                 f"{exploded}; this is what 'grad_norm' looks like in a diverging run's log)")
    if first_huge:
        worst = max(first_huge, key=lambda name: first_huge[name])
        report.info(f"per-parameter grad norms at that step name the largest: {worst} "
                    f"({first_huge[worst]:.3g})")
    norms, _ = _train(torch, lr=LOW_LR, clip=1.0)
    report.check(all(math.isfinite(n) for n in norms) and norms[-1] < norms[0],
                 f"lr={LOW_LR} with clip_grad_norm_(max_norm=1.0): finite for {len(norms)} steps, "
                 f"grad norm {norms[0]:.3g} -> {norms[-1]:.3g}")


def run() -> int:
    torch = import_torch("NaN losses and gradient norms")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    report.info(f"torch {torch.__version__} on the CPU (the numerics are the same on a GPU)")
    _anomaly_check(torch, report)
    _first_nonfinite_module(torch, report)
    _clip_checks(torch, report)
    _divergence_checks(torch, report)
    report.info("in training: check torch.isfinite(loss) every step and keep the batch ids; "
                "turn on anomaly mode only to debug (it is slow)")
    return report.code

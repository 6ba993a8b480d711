"""Numeric symptoms in metric series: shapes a regex cannot see, as evidence like any other.

Each detector watches one rank's samples in order and records the lines where its condition
holds. Thresholds are named parameters with documented defaults; a rule names a detector in its
YAML (`detectors: [{name: scale-collapse, weight: 0.8, params: {min_decreases: 6}}]`).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from trainmedic.metrics.samples import Sample
from trainmedic.model import Line

EVIDENCE_KEPT = 6

# name -> (what it means, default parameters)
DETECTORS: dict[str, tuple[str, dict[str, float]]] = {
    "non-finite-loss": ("the loss is NaN or inf on `min_count` samples", {"min_count": 2}),
    "non-finite-grad-norm": ("the gradient norm is NaN or inf on `min_run` samples in a row "
                             "(a dynamic loss scale calibrating overflows a few in a row)",
                             {"min_run": 8}),
    "zero-loss-run": ("the loss is exactly 0 for `min_run` consecutive samples",
                      {"min_run": 20}),
    "scale-collapse": ("the loss scale falls `min_decreases` times in a row to at most "
                       "`max_scale`", {"min_decreases": 5, "max_scale": 128}),
    "scale-stuck": ("the loss scale (not 1.0) stays constant while `min_overflows` samples "
                    "overflow, or for `min_steps` steps", {"min_overflows": 3, "min_steps": 2500}),
    "overflow-rate": ("at least `min_rate` of `min_samples` or more samples are overflow steps "
                      "(skipped, or the loss scale backed off)",
                      {"min_rate": 0.2, "min_samples": 20}),
    "grad-norm-huge": ("the gradient norm is at least `min_value` on `min_count` samples",
                       {"min_value": 1e6, "min_count": 3}),
    "grad-norm-spike": ("the gradient norm exceeds `factor` times the median of the previous "
                        "`window` samples (after `min_history`)",
                        {"factor": 10, "window": 50, "min_history": 10}),
    "grad-norm-growth": ("the gradient norm rises `min_increases` times in a row and by "
                         "`min_ratio` overall", {"min_increases": 6, "min_ratio": 10}),
    "loss-divergence": ("the loss exceeds `factor` times its running median for "
                        "`min_consecutive` samples (median of `window`, after `min_history`)",
                        {"factor": 5, "window": 50, "min_history": 10, "min_consecutive": 3}),
}


# The sample values each detector reads: a sample with none of them leaves it as it was.
READS: dict[str, frozenset[str]] = {
    "non-finite-loss": frozenset({"loss"}),
    "zero-loss-run": frozenset({"loss"}),
    "loss-divergence": frozenset({"loss"}),
    "non-finite-grad-norm": frozenset({"grad_norm"}),
    "grad-norm-huge": frozenset({"grad_norm"}),
    "grad-norm-spike": frozenset({"grad_norm"}),
    "grad-norm-growth": frozenset({"grad_norm"}),
    "scale-collapse": frozenset({"loss_scale"}),
    "scale-stuck": frozenset({"loss_scale"}),
    "overflow-rate": frozenset({"loss_scale", "skipped"}),
}


@dataclass
class Detector:
    """One detector with its parameters, run over one rank's samples."""

    name: str
    params: Mapping[str, float]
    lines: list[Line] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)  # the x of each kept line
    fired: bool = False
    _x: float = 0.0
    _count: int = 0
    _run: int = 0
    _last: float | None = None
    _run_start: float | None = None
    _samples: int = 0
    _first_step: int | None = None
    _history: deque[float] = field(default_factory=deque)
    _check: Callable[[Sample, Line], None] = field(init=False, repr=False)

    def _hit(self, line: Line) -> None:
        self.fired = True
        if len(self.lines) < EVIDENCE_KEPT and line not in self.lines:
            self.lines.append(line)
            self.steps.append(self._x)

    def feed(self, sample: Sample, line: Line) -> None:
        """One sample in order; its x (step, else line number) marks the anomaly on a plot."""
        self._x = float(sample.step) if sample.step is not None else float(line.number)
        self._check(sample, line)

    def __post_init__(self) -> None:
        self._check = getattr(self, "_" + self.name.replace("-", "_"))

    def _non_finite_loss(self, sample: Sample, line: Line) -> None:
        value = sample.get("loss")
        if value is not None and not math.isfinite(value):
            self._count += 1
            if self._count >= self.params["min_count"]:
                self._hit(line)

    def _non_finite_grad_norm(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None:
            return
        self._run = 0 if math.isfinite(value) else self._run + 1
        if self._run >= self.params["min_run"]:
            self._hit(line)

    def _zero_loss_run(self, sample: Sample, line: Line) -> None:
        loss = sample.get("loss")
        if loss is None:
            return
        self._run = self._run + 1 if loss == 0.0 else 0
        if self._run >= self.params["min_run"]:
            self._hit(line)

    def _scale_collapse(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None:
            return
        self._run = self._run + 1 if self._last is not None and scale < self._last else 0
        self._last = scale
        if self._run >= self.params["min_decreases"] and scale <= self.params["max_scale"]:
            self._hit(line)

    def _scale_stuck(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None or scale == 1.0:
            return
        step = sample.step if sample.step is not None else self._samples
        self._samples += 1
        if scale != self._last:
            self._last, self._count, self._first_step = scale, 0, step
        overflowed = sample.overflow or any(
            value is not None and not math.isfinite(value)
            for value in (sample.get("loss"), sample.get("grad_norm")))
        self._count += overflowed
        span = step - (self._first_step if self._first_step is not None else step)
        if self._count >= self.params["min_overflows"] or span >= self.params["min_steps"]:
            self._hit(line)

    def _overflow_rate(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None and not sample.skipped:
            return
        backed_off = scale is not None and self._last is not None and scale < self._last
        self._last = scale if scale is not None else self._last
        overflowed = sample.overflow or sample.skipped > 0 or backed_off
        self._samples += 1
        self._count += overflowed
        if overflowed and self._samples >= self.params["min_samples"] and \
                self._count / self._samples >= self.params["min_rate"]:
            self._hit(line)

    def _grad_norm_huge(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is not None and math.isfinite(value) and value >= self.params["min_value"]:
            self._count += 1
            if self._count >= self.params["min_count"]:
                self._hit(line)

    def _windowed(self, value: float | None) -> tuple[float, bool] | None:
        """The running median before `value`, and whether there is enough history."""
        if value is None or not math.isfinite(value):
            return None
        ready = len(self._history) >= self.params["min_history"]
        median = statistics.median(self._history) if ready else 0.0
        self._history.append(value)
        if len(self._history) > self.params["window"]:
            self._history.popleft()
        return median, ready

    def _grad_norm_spike(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        window = self._windowed(value)
        if window and window[1] and value is not None and window[0] > 0 and \
                value > self.params["factor"] * window[0]:
            self._hit(line)

    def _grad_norm_growth(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None or not math.isfinite(value):
            return
        if self._last is not None and value > self._last:
            self._run += 1
        else:
            self._run, self._run_start = 0, value
        self._last = value
        if self._run >= self.params["min_increases"] and self._run_start and \
                value / self._run_start >= self.params["min_ratio"]:
            self._hit(line)

    def _loss_divergence(self, sample: Sample, line: Line) -> None:
        value = sample.get("loss")
        window = self._windowed(value)
        if not window:
            return
        above = window[1] and window[0] > 0 and value is not None and \
            value > self.params["factor"] * window[0]
        self._run = self._run + 1 if above else 0
        if self._run >= self.params["min_consecutive"]:
            self._hit(line)


def detector_params(name: str, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """The detector's defaults with a rule's overrides applied."""
    return {**DETECTORS[name][1], **(overrides or {})}

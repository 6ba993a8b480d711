"""The gradient norm jumps far above its recent median."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector, RunningMedian
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class GradNormSpike(Detector):
    NAME = "grad-norm-spike"
    MEANS = ("the gradient norm exceeds `factor` times the median of the previous `window` "
             "samples (after `min_history`)")
    READS = frozenset({"grad_norm"})
    METRIC = "grad_norm"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"factor": 10, "window": 50, "min_history": 10}

    def __init__(self, params: dict[str, float] | None = None) -> None:
        super().__init__(params)
        self.median = RunningMedian(self.params["window"], self.params["min_history"])

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None or not math.isfinite(value):
            return
        median = self.median.before(value)
        if median and value > self.params["factor"] * median:
            self.hit(line)

"""The gradient norm rises step after step by orders of magnitude."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class GradNormGrowth(Detector):
    NAME = "grad-norm-growth"
    MEANS = "the gradient norm rises `min_increases` times in a row and by `min_ratio` overall"
    READS = frozenset({"grad_norm"})
    METRIC = "grad_norm"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_increases": 6, "min_ratio": 10}
    run = 0
    last: float | None = None
    run_start: float | None = None

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None or not math.isfinite(value):
            return
        if self.last is not None and value > self.last:
            self.run += 1
        else:
            self.run, self.run_start = 0, value
        self.last = value
        if self.run >= self.params["min_increases"] and self.run_start and \
                value / self.run_start >= self.params["min_ratio"]:
            self.hit(line)

"""The gradient norm stays NaN or inf for longer than a dynamic loss scale's calibration."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class NonFiniteGradNorm(Detector):
    NAME = "non-finite-grad-norm"
    MEANS = ("the gradient norm is NaN or inf on `min_run` samples in a row "
             "(a dynamic loss scale calibrating overflows a few in a row)")
    READS = frozenset({"grad_norm"})
    METRIC = "grad_norm"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_run": 8}
    run = 0

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None:
            return
        self.run = 0 if math.isfinite(value) else self.run + 1
        if self.run >= self.params["min_run"]:
            self.hit(line)

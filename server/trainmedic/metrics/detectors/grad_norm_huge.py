"""The gradient norm is enormous in absolute terms."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class GradNormHuge(Detector):
    NAME = "grad-norm-huge"
    MEANS = "the gradient norm is at least `min_value` on `min_count` samples"
    READS = frozenset({"grad_norm"})
    METRIC = "grad_norm"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_value": 1e6, "min_count": 3}
    count = 0

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is not None and math.isfinite(value) and value >= self.params["min_value"]:
            self.count += 1
            if self.count >= self.params["min_count"]:
                self.hit(line)

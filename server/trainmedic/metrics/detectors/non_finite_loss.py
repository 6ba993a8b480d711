"""The loss is NaN or inf."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class NonFiniteLoss(Detector):
    NAME = "non-finite-loss"
    MEANS = "the loss is NaN or inf on `min_count` samples"
    READS = frozenset({"loss"})
    METRIC = "loss"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_count": 2}
    count = 0

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("loss")
        if value is not None and not math.isfinite(value):
            self.count += 1
            if self.count >= self.params["min_count"]:
                self.hit(line)

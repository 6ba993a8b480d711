"""The loss scale does not move while steps overflow, or for a very long time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class ScaleStuck(Detector):
    NAME = "scale-stuck"
    MEANS = ("the loss scale (not 1.0) stays constant while `min_overflows` samples overflow, "
             "or for `min_steps` steps")
    READS = frozenset({"loss_scale"})
    METRIC = "loss_scale"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_overflows": 3, "min_steps": 2500}
    samples = 0
    overflows = 0
    last: float | None = None
    first_step: int | None = None

    def check(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None or scale == 1.0:
            return
        step = sample.step if sample.step is not None else self.samples
        self.samples += 1
        if scale != self.last:
            self.last, self.overflows, self.first_step = scale, 0, step
        overflowed = sample.overflow or any(
            value is not None and not math.isfinite(value)
            for value in (sample.get("loss"), sample.get("grad_norm")))
        self.overflows += overflowed
        span = step - (self.first_step if self.first_step is not None else step)
        if self.overflows >= self.params["min_overflows"] or span >= self.params["min_steps"]:
            self.hit(line)

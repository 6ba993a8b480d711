"""The gradient norm, finite for a while, turns NaN or inf and stays so to the end of the log.

A dynamic loss scale calibrating overflows in the first steps, and a healthy fp16 run skips an
overflowing step now and then, after which the norm is finite again; a norm that breaks after a
finite history and never recovers is the run's parameters or gradients gone non-finite. Only the
end of the log can tell the two apart, so the hit is held until a finite norm undoes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class GradNormBreaks(Detector):
    NAME = "grad-norm-breaks"
    MEANS = ("the gradient norm, finite on `min_history` samples, is NaN or inf from one sample "
             "to the end of the log")
    READS = frozenset({"grad_norm"})
    METRIC = "grad_norm"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_history": 4}
    finite = 0

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("grad_norm")
        if value is None:
            return
        if math.isfinite(value):
            self.finite += 1
            self.release()
        elif self.finite >= self.params["min_history"]:
            self.hold(line)

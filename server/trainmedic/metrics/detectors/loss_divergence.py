"""The loss stays far above its recent median: the run is diverging."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector, RunningMedian
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class LossDivergence(Detector):
    NAME = "loss-divergence"
    MEANS = ("the loss exceeds `factor` times its running median for `min_consecutive` samples "
             "(median of `window`, after `min_history`)")
    READS = frozenset({"loss"})
    METRIC = "loss"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"factor": 5, "window": 50, "min_history": 10,
                                               "min_consecutive": 3}
    run = 0

    def __init__(self, params: dict[str, float] | None = None) -> None:
        super().__init__(params)
        self.median = RunningMedian(self.params["window"], self.params["min_history"])

    def check(self, sample: Sample, line: Line) -> None:
        value = sample.get("loss")
        if value is None or not math.isfinite(value):
            return
        median = self.median.before(value)
        above = median is not None and median > 0 and value > self.params["factor"] * median
        self.run = self.run + 1 if above else 0
        if self.run >= self.params["min_consecutive"]:
            self.hit(line)

"""The dynamic loss scale keeps falling to a small value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class ScaleCollapse(Detector):
    NAME = "scale-collapse"
    MEANS = "the loss scale falls `min_decreases` times in a row to at most `max_scale`"
    READS = frozenset({"loss_scale"})
    METRIC = "loss_scale"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_decreases": 5, "max_scale": 128}
    run = 0
    last: float | None = None

    def check(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None:
            return
        self.run = self.run + 1 if self.last is not None and scale < self.last else 0
        self.last = scale
        if self.run >= self.params["min_decreases"] and scale <= self.params["max_scale"]:
            self.hit(line)

"""The loss is exactly zero for a long run of samples: nothing is being learned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class ZeroLossRun(Detector):
    NAME = "zero-loss-run"
    MEANS = "the loss is exactly 0 for `min_run` consecutive samples"
    READS = frozenset({"loss"})
    METRIC = "loss"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_run": 20}
    run = 0

    def check(self, sample: Sample, line: Line) -> None:
        loss = sample.get("loss")
        if loss is None:
            return
        self.run = self.run + 1 if loss == 0.0 else 0
        if self.run >= self.params["min_run"]:
            self.hit(line)

"""A large share of the steps overflow: skipped, or the loss scale backing off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class OverflowRate(Detector):
    NAME = "overflow-rate"
    MEANS = ("at least `min_rate` of `min_samples` or more samples are overflow steps "
             "(skipped, or the loss scale backed off)")
    READS = frozenset({"loss_scale", "skipped"})
    METRIC = "loss_scale"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"min_rate": 0.2, "min_samples": 20}
    samples = 0
    overflows = 0
    last: float | None = None

    def check(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None and not sample.skipped:
            return
        backed_off = scale is not None and self.last is not None and scale < self.last
        self.last = scale if scale is not None else self.last
        overflowed = sample.overflow or sample.skipped > 0 or backed_off
        self.samples += 1 + sample.repeats  # the unread lines that said the same: no overflow
        self.overflows += overflowed
        if overflowed and self.samples >= self.params["min_samples"] and \
                self.overflows / self.samples >= self.params["min_rate"]:
            self.hit(line)

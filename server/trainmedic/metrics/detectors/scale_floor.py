"""The loss scale sits at the bottom: a dynamic scale that collapsed, wherever it started.

Every dynamic scaler starts far above a few units (fairseq at 2**7, GradScaler, Apex and
DeepSpeed at 2**16, Megatron-LM at 2**32) and only gets down there by overflowing again and
again, so a scale at or below `max_scale` means fp16 overflows at almost any scale, even where
the log shows none of the fall (a pasted tail, a scale printed once per epoch). A scale that
has only ever been 1.0 is the constant that bf16 and fp32 runs print (Megatron-LM's
"loss scale: 1.0"), and one that has only ever been 0 is how a configuration asks for dynamic
scaling (DeepSpeed's `"loss_scale": 0`, `--loss-scale 0` in an argument dump): neither is a
collapse, so the floor counts once the scale has moved or a step overflowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.samples import Sample
from trainmedic.model import Line


class ScaleFloor(Detector):
    NAME = "scale-floor"
    MEANS = ("the loss scale is at most `max_scale` (0 included) on `min_count` samples, "
             "a scale that has only ever been 1.0 or 0 aside")
    READS = frozenset({"loss_scale"})
    METRIC = "loss_scale"
    DEFAULTS: ClassVar[Mapping[str, float]] = {"max_scale": 1, "min_count": 2}
    count = 0
    dynamic = False

    def check(self, sample: Sample, line: Line) -> None:
        scale = sample.get("loss_scale")
        if scale is None:
            return
        self.dynamic = self.dynamic or scale not in (0.0, 1.0) or sample.overflow
        if self.dynamic and scale <= self.params["max_scale"]:
            self.count += 1
            if self.count >= self.params["min_count"]:
                self.hit(line)

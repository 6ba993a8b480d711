"""TM116: NVIDIA Apex's `amp` (`amp.initialize`, `amp.scale_loss`)."""

from __future__ import annotations

from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource

APEX_AMP = frozenset({"apex.amp.initialize", "apex.amp.frontend.initialize"})


class ApexAmp(Check):
    """Mixed precision through Apex's `amp.initialize`.

    ## What it does
    Finds calls to `apex.amp.initialize(...)` (after `from apex import amp`), outside
    compatibility code that falls back to it when native AMP is missing.

    ## Why is this bad?
    Apex's `initialize` warned "apex.amp is deprecated and will be removed by the end of
    February 2023. Use [PyTorch AMP](https://pytorch.org/docs/stable/amp.html)"
    (apex/amp/frontend.py), and Apex removed `amp` altogether in 2025 ("remove old
    features: amp, ddp, and rnn"), so `from apex import amp` fails on a current Apex build.
    Its O2/O3 levels also keep fp16 model weights, with the update-rounding problems that
    native AMP avoids by keeping float32 weights.

    ## Example
    ```python
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    No automatic fix: the loop changes in several places (the autocast region, the scaler
    around backward and step, checkpointing `amp.state_dict()`).
    """

    code = "TM116"
    rule_id = "amp-loss-scale"
    name = "apex-amp"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        for call in src.calls_to(APEX_AMP):
            if not src.in_fallback(call):
                yield self.finding(src.range(call.func),
                                   "apex.amp is deprecated and removed from current Apex: "
                                   "use torch.autocast with torch.amp.GradScaler(\"cuda\")")

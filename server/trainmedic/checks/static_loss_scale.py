"""TM107: a loss scale that cannot move (GradScaler settings, DeepSpeed, Megatron-LM)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from trainmedic.checks.amp import amp_facts, scaler_argument, scaler_enabled
from trainmedic.checks.findings import CheckFinding, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.config import ConfigDocument, bf16_in_fp16_block, is_true
from trainmedic.checks.sources.python import PythonSource, keyword, literal
from trainmedic.checks.sources.shell import ShellScript

HUGE_INTERVAL = 1_000_000
_MEGATRON = re.compile(r"(?<![\w-])--loss-scale(?:=|[ \t]+)([0-9][0-9.eE+-]*)(?![\w.-])")


_STATIC: tuple[tuple[str, Callable[[float], bool], str], ...] = (
    ("growth_factor", lambda v: v == 1, "never grows the scale back after it shrinks, so "
     "small gradients underflow for the rest of the run"),
    ("backoff_factor", lambda v: v == 1, "never lowers the scale after an overflow, so "
     "every following step is skipped"),
    ("growth_interval", lambda v: v >= HUGE_INTERVAL, "practically never grows the scale, "
     "so small gradients underflow"),
)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


class StaticLossScale(Check):
    """A static loss scale where a dynamic one is needed.

    ## What it does
    Finds loss scales that cannot adapt: a `GradScaler` with `growth_factor=1.0` (never
    grows), `backoff_factor=1.0` (never backs off) or a `growth_interval` of a million steps
    or more; a DeepSpeed config with fp16 enabled and `"loss_scale"` above 0 (not a GPT-NeoX
    fp16 block with `"type": "bfloat16"`, which trains in bf16 without a loss scale); a
    Megatron-LM launch command with `--loss-scale N`.

    ## Why is this bad?
    The right scale depends on the model and drifts during training. A scale fixed too high
    overflows and skips steps (DeepSpeed and Megatron then stop with "Current loss scale
    already at minimum"); fixed too low, small gradients underflow to zero and the loss
    stalls, with nothing in the log to say so.

    ## Example
    ```json
    "fp16": {"enabled": true, "loss_scale": 1024}
    ```

    ## Use instead
    ```json
    "fp16": {"enabled": true, "loss_scale": 0}
    ```
    (0 selects DeepSpeed's dynamic scaler; for `GradScaler`, keep the default growth and
    backoff; for Megatron-LM, drop `--loss-scale`.)

    ## Fix safety
    Changes training dynamics on purpose: the fix restores the library's dynamic defaults
    (drops the GradScaler argument, sets `"loss_scale": 0`, removes `--loss-scale N`). A
    static scale chosen deliberately for a known-stable model can be kept with
    `# trainmedic: ignore[TM107]`.
    """

    code = "TM107"
    rule_id = "amp-loss-scale"
    name = "static-loss-scale"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        for call in amp_facts(src).scalers:
            if scaler_enabled(src, call) is False:
                continue
            for name, static, why in _STATIC:
                node = scaler_argument(src, call, name)
                value = _number(literal(node))
                if node is None or value is None or not static(value):
                    continue
                kw = keyword(call, name)
                fix = [src.delete_keyword(kw)] if kw is not None else None
                yield self.finding(src.range(kw if kw is not None else node),
                                   f"GradScaler {name}={src.segment(node)} {why}; keep "
                                   "the dynamic default", fix)

    def config(self, doc: ConfigDocument) -> Iterator[CheckFinding]:
        for root in doc.roots:
            for node in root.walk():
                fp16 = node.get("fp16") if node.is_mapping else None
                if fp16 is None or not fp16.is_mapping or bf16_in_fp16_block(fp16):
                    continue
                enabled = fp16.get("enabled")
                scale = fp16.get("loss_scale")
                value = _number(scale.value) if scale is not None else None
                if scale is None or value is None or value <= 0 or not (
                        is_true(enabled) or (enabled is not None and enabled.value == "auto")):
                    continue
                yield self.finding(scale.range,
                                   f"static fp16 loss scale {scale.value}: set \"loss_scale\": "
                                   "0 for DeepSpeed's dynamic loss scaling",
                                   [TextEdit(scale.range, "0")])

    def shell(self, script: ShellScript) -> Iterator[CheckFinding]:
        for line, match in script.matches(_MEGATRON):
            try:
                value = float(match.group(1))
            except ValueError:
                continue
            if value <= 0:
                continue
            yield self.finding(script.span(line, match),
                               f"static loss scale --loss-scale {match.group(1)}: drop it "
                               "so Megatron-LM scales the loss dynamically",
                               [script.delete_words(line, match.start(), match.end())])


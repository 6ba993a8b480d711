"""Metric samples read out of log lines: loss, loss scale, grad norm, learning rate, skips.

People print metrics in a handful of shapes: Hugging Face dict lines (`{'loss': 0.0, ...}`),
Megatron-LM iteration lines (`lm loss: ... | loss scale: ... | grad norm: ...`), DeepSpeed and
Apex overflow lines, progress-bar postfixes (`loss=nan`) and plain `step 10 loss 2.31`. Each
becomes a `Sample`; only lines with a metric word are parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from trainmedic.model import Line
from trainmedic.ranks import parse_rank
from trainmedic.reader import MAX_LINE_CHARS, Chunk

METRICS = ("loss", "loss_scale", "grad_norm", "lr")

# Only lines with one of these words are parsed.
_TRIGGER = re.compile(r"(?i:loss|grad[_ ]norm)")
# Text that makes a chunk worth reading in full: a non-finite or a zero loss.
_NOTABLE_WORDS = ("nan", "NaN", "inf", "Inf")
# Lines always read, wherever they are: loss-scale changes and skipped steps are rare and exact.
_SCALE_LINE = re.compile(r"scale|Skipping step")
_ZERO_LOSS = re.compile(r"loss['\"]?\s{0,3}[:=]\s{0,3}0(?:\.0*)?(?![\w.])")
SAMPLES_PER_QUIET_CHUNK = 128

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf)"
_PAIR = re.compile(
    r"(?<![\w.])['\"]?(?P<key>lm loss|loss scale|grad norm|learning rate|"
    r"number of skipped iterations|[A-Za-z_][\w/]{0,40})['\"]?\s{0,3}[:=]\s{0,3}"
    r"(?P<value>" + _NUMBER + r")(?![\w.])"
)
_PLAIN_STEP = re.compile(r"(?i)\b(?:step|iter|iteration)\s{1,8}(\d{1,12})\b")
_BARE_SCALE = re.compile(r"(?<![\w.])scale\s{0,3}[:=]\s{0,3}(" + _NUMBER + r")(?![\w.])")
_PLAIN_LOSS = re.compile(r"(?i)\bloss\s{1,3}(" + _NUMBER + r")(?![\w.])")
_OVERFLOW = re.compile(
    r"(?:Attempted loss scale: [0-9.eE+-]{1,30}, reducing to|reducing loss scale to) "
    r"(?P<scale>[0-9.eE+-]{1,30})"
)
_KEYS = {
    "loss": "loss", "lm loss": "loss", "train_loss": "loss", "train/loss": "loss",
    "loss scale": "loss_scale", "loss_scale": "loss_scale", "lossscale": "loss_scale",
    "cur_scale": "loss_scale",
    "grad_norm": "grad_norm", "grad norm": "grad_norm", "gradnorm": "grad_norm",
    "train/grad_norm": "grad_norm",
    "learning_rate": "lr", "learning rate": "lr", "lr": "lr", "train/learning_rate": "lr",
    "step": "step", "iter": "step", "iteration": "step", "global_step": "step",
    "number of skipped iterations": "skipped",
}


@dataclass(frozen=True)
class Sample:
    """One line's metric values; `overflow` marks a step skipped for inf/NaN gradients."""

    values: tuple[tuple[str, float], ...]
    step: int | None = None
    overflow: bool = False
    skipped: int = 0

    def get(self, name: str) -> float | None:
        return dict(self.values).get(name)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_sample(body: str, extra: Sequence[re.Pattern[str]] = ()) -> Sample | None:
    """The metrics printed on one line, or None when it carries none.

    `extra` are rules' own metric patterns, tried first, for formats this module does not know.
    """
    values = _extra_values(body, extra) if extra else {}
    extra_step, extra_skipped = values.pop("step", math.nan), values.pop("skipped", 0.0)
    step = int(extra_step) if math.isfinite(extra_step) else None
    skipped = int(extra_skipped) if math.isfinite(extra_skipped) else 0
    for match in _PAIR.finditer(body):
        name = _KEYS.get(match.group("key").lower())
        value = _float(match.group("value"))
        if name is None or value is None:
            continue
        if name == "step":
            if math.isfinite(value) and step is None:
                step = int(value)
        elif name == "skipped":
            skipped = int(value) if math.isfinite(value) else 0
        else:
            values.setdefault(name, value)
    if "loss" in values and "loss_scale" not in values and (
            bare := _BARE_SCALE.search(body)) is not None:
        scale = _float(bare.group(1))
        if scale is not None:
            values["loss_scale"] = scale  # `scale=` printed beside a loss is the loss scale
    overflow = _OVERFLOW.search(body)
    if overflow:
        scale = _float(overflow.group("scale"))
        if scale is not None:
            values["loss_scale"] = scale
    if "loss" not in values and (plain := _PLAIN_LOSS.search(body)):
        loss = _float(plain.group(1))
        if loss is not None:
            values["loss"] = loss
    if step is None and (plain_step := _PLAIN_STEP.search(body)):
        step = int(plain_step.group(1))
    if not values and not skipped:
        return None
    return Sample(tuple(sorted(values.items())), step, overflow is not None, skipped)


METRIC_GROUPS = frozenset({*METRICS, "step", "skipped"})


def _extra_values(body: str, extra: Sequence[re.Pattern[str]]) -> dict[str, float]:
    """What a rule's own metric patterns read from a line (named groups are metric names)."""
    values: dict[str, float] = {}
    for pattern in extra:
        match = pattern.search(body)
        if match:
            for name, text in match.groupdict().items():
                number = _float(text) if text is not None else None
                if number is not None:
                    values.setdefault(name, number)
    return values


def scan_metrics(chunk: Chunk,
                 extra: Sequence[re.Pattern[str]] = ()) -> Iterator[tuple[Sample, Line]]:
    """The samples of one chunk, with their lines (rank set, no timestamp).

    A chunk with a notable value (a non-finite or zero loss) is read in full. In a quiet chunk
    only the first SAMPLES_PER_QUIET_CHUNK metric lines are read, plus every line that reports a
    loss scale or a skipped step: plenty for the plotted series and the trend detectors, exact
    for the scale detectors, and a log of a billion steps does not cost a parse per line.
    """
    text = chunk.text
    notable = any(word in text for word in _NOTABLE_WORDS) or _ZERO_LOSS.search(text)
    triggers = [m.start() for m in _TRIGGER.finditer(text)]
    if not notable:
        triggers = triggers[:SAMPLES_PER_QUIET_CHUNK]
        if "cale" in text or "Skipping" in text:
            triggers = sorted({*triggers, *(m.start() for m in _SCALE_LINE.finditer(text))})
    if extra:
        triggers = sorted({*triggers, *(m.start() for p in extra for m in p.finditer(text))})
    offset, number, end = 0, chunk.first_line, -1
    for position in triggers:
        if position <= end:
            continue  # another metric word on a line already read
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        number += text.count("\n", offset, start)
        offset = start
        rank, body = parse_rank(text[start:end])
        sample = parse_sample(body, extra)
        if sample is None:
            continue
        yield sample, Line(chunk.path, number, text[start:end][:MAX_LINE_CHARS], rank)

"""TM109: fp16 chosen in Trainer, Accelerate and Lightning settings where bf16 would do."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, Position, Range, Severity, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.config import ConfigDocument, is_true
from trainmedic.checks.sources.python import PythonSource, keyword, literal
from trainmedic.checks.sources.shell import ShellScript

LIGHTNING_TRAINERS = frozenset({"lightning.Trainer", "lightning.pytorch.Trainer",
                                "pytorch_lightning.Trainer"})
FP16_FLAG = re.compile(r"(?<![\w-])--fp16(?![\w-])(?:(?:=|[ \t]+)(\w+))?")
BF16_FLAG = re.compile(r"(?<![\w-])--bf16(?![\w-])")
_MIXED_FLAG = re.compile(r"(?<![\w-])--mixed[_-]precision(?:=|[ \t]+)([\"']?)(fp16)\1(?!\w)")
FALSE_WORDS = {"false", "False", "0", "no"}
MESSAGE = ("fp16 mixed precision: on Ampere (A100, RTX 30xx) and newer GPUs bf16 is as fast, "
           "has float32's range and needs no loss scaling")


def hf_arguments(qualname: str | None) -> bool:
    """`TrainingArguments` and its subclasses in transformers and TRL."""
    if not qualname:
        return False
    root, last = qualname.partition(".")[0], qualname.rsplit(".", 1)[-1]
    return (root == "transformers" and last.endswith("TrainingArguments")) or \
        (root == "trl" and last.endswith("Config"))


class PreferBf16(Check):
    """fp16 mixed precision in framework settings, on hardware that may have bf16.

    ## What it does
    Finds fp16 chosen through a framework: `TrainingArguments(fp16=True)` (and TRL configs),
    `Accelerator(mixed_precision="fp16")`, Lightning's `Trainer(precision="16-mixed")`,
    `mixed_precision: fp16` in an Accelerate config, `fp16: true` in Transformers arguments
    kept as YAML or JSON, and `--fp16` or `--mixed_precision fp16` on a launch command line.

    ## Why is this bad?
    fp16's range ends at 65504, so activations overflow and the run depends on a loss scaler
    to keep gradients from underflowing; many "loss is NaN" and "loss scale at minimum"
    failures are fp16 failures. On Ampere and newer GPUs bf16 costs the same and has
    float32's range. This is information, not an error: V100 and T4 GPUs have no bf16.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", fp16=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", bf16=True)
    ```
    ```yaml
    mixed_precision: bf16
    ```
    ```json
    "bf16": true
    ```
    ```bash
    accelerate launch --mixed_precision bf16 train.py
    ```

    ## Fix safety
    Depends on the GPU: the fix selects bf16, which pre-Ampere GPUs cannot run (the
    framework raises, or emulates it slowly). Apply it where the job runs on A100, H100,
    RTX 30xx/40xx or newer.
    """

    code = "TM109"
    rule_id = "amp-bf16-vs-fp16"
    name = "prefer-bf16"
    severity = Severity.INFORMATION

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        for call in src.calls:
            qualname = src.qualname(call.func)
            if hf_arguments(qualname):
                fp16, bf16 = keyword(call, "fp16"), keyword(call, "bf16")
                if fp16 is None or literal(fp16.value) is not True or (
                        bf16 is not None and literal(bf16.value) is True):
                    continue
                start = src.start(fp16)
                rename = TextEdit(Range(start, Position(start.line, start.character + 4)),
                                  "bf16")
                fix = [rename] if bf16 is None else \
                    [TextEdit(src.range(fp16.value), "False"),
                     TextEdit(src.range(bf16.value), "True")]
                yield self.finding(src.range(fp16), MESSAGE, fix)
            elif qualname == "accelerate.Accelerator":
                found = keyword(call, "mixed_precision")
                if found is not None and literal(found.value) == "fp16":
                    yield self.finding(src.range(found), MESSAGE,
                                       [_in_string(src, found.value, "fp16", "bf16")])
            elif qualname in LIGHTNING_TRAINERS:
                found = keyword(call, "precision")
                if found is not None and literal(found.value) in (16, "16", "16-mixed"):
                    yield self.finding(src.range(found), MESSAGE,
                                       [TextEdit(src.range(found.value), '"bf16-mixed"')])

    def config(self, doc: ConfigDocument) -> Iterator[CheckFinding]:
        for root in doc.roots:
            if not root.is_mapping:
                continue
            found = root.get("mixed_precision")
            edit = doc.replace_word(found.range, "fp16", "bf16") \
                if found is not None and found.value == "fp16" else None
            if found is not None and edit is not None:
                yield self.finding(found.range, MESSAGE, [edit])
            fp16, bf16 = root.entry("fp16"), root.get("bf16")
            if fp16 is None or not is_true(fp16[1]) or is_true(bf16):
                continue
            key, value = fp16
            rename = doc.replace_word(key, "fp16", "bf16")
            fix = [TextEdit(value.range, "false"), TextEdit(bf16.range, "true")] \
                if bf16 is not None else [rename] if rename else None
            yield self.finding(Range(key.start, value.range.end), MESSAGE, fix)

    def shell(self, script: ShellScript) -> Iterator[CheckFinding]:
        if any(True for _ in script.matches(BF16_FLAG)):
            return
        for line, match in script.matches(FP16_FLAG):
            if match.group(1) in FALSE_WORDS:
                continue
            flag = Range(Position(line, match.start()), Position(line, match.start() + 6))
            yield self.finding(flag, MESSAGE, [TextEdit(flag, "--bf16")])
        for line, match in script.matches(_MIXED_FLAG):
            yield self.finding(script.span(line, match), MESSAGE,
                               [TextEdit(script.span(line, match, 2), "bf16")])


def _in_string(src: PythonSource, node: ast.expr, old: str, new: str) -> TextEdit:
    """Swap `old` for `new` inside a string literal, keeping its quotes and prefix."""
    start = src.start(node)
    at = src.segment(node).find(old)
    return TextEdit(Range(Position(start.line, start.character + at),
                          Position(start.line, start.character + at + len(old))), new)

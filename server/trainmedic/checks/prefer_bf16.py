"""TM109: fp16 chosen in Trainer, Accelerate and Lightning settings where bf16 would do."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator

from trainmedic.checks.findings import CheckFinding, Position, Range, Severity, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.config import ConfigDocument, is_true
from trainmedic.checks.sources.python import PythonSource, keyword, literal
from trainmedic.checks.sources.shell import ShellScript
from trainmedic.checks.values import default_values

LIGHTNING_TRAINERS = frozenset({"lightning.Trainer", "lightning.pytorch.Trainer",
                                "pytorch_lightning.Trainer"})
LIGHTNING_FP16 = (16, "16", "16-mixed")
ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
FP16_FLAG = re.compile(r"(?<![\w-])--fp16(?![\w-])(?:(?:=|[ \t]+)(\w+))?")
BF16_FLAG = re.compile(r"(?<![\w-])--bf16(?![\w-])")
_MIXED_FLAG = re.compile(r"(?<![\w-])--mixed[_-]precision(?:=|[ \t]+)([\"']?)(fp16)\1(?!\w)")
FALSE_WORDS = {"false", "False", "0", "no"}
MESSAGE = ("fp16 mixed precision: on Ampere (A100, RTX 30xx) and newer GPUs bf16 is as fast, "
           "has float32's range and needs no loss scaling")


def _by_default(src: PythonSource, node: ast.expr, fp16: Collection[object]) -> bool:
    """The expression is fp16 when the script runs without options (a parameter's or an
    option's default, through conditional expressions)."""
    return any(v in fp16 for v in default_values(src).evaluate(node).items
               if isinstance(v, str | int | bool))


def argument_classes(src: PythonSource) -> dict[str, ast.AnnAssign | None]:
    """This module's subclasses of `TrainingArguments` (`class Args(TrainingArguments)`),
    by name, with the `fp16: bool = True` field that turns fp16 on (None without one)."""
    found: dict[str, ast.AnnAssign | None] = {}
    for node in src.tree.body:
        if not isinstance(node, ast.ClassDef) or not any(
                hf_arguments(src.qualname(b)) or (isinstance(b, ast.Name) and b.id in found)
                for b in node.bases):
            continue
        fields = {s.target.id: s for s in node.body if isinstance(s, ast.AnnAssign) and
                  isinstance(s.target, ast.Name) and s.value is not None}
        fp16, bf16 = fields.get("fp16"), fields.get("bf16")
        on = fp16 is not None and _field_default(fp16) is True and (
            bf16 is None or _field_default(bf16) is not True)
        found[node.name] = fp16 if on else None
    return found


def _field_default(stmt: ast.AnnAssign) -> object:
    """`True` for `fp16: bool = True` and `fp16: bool = field(default=True)`."""
    value = stmt.value
    if isinstance(value, ast.Call):
        given = keyword(value, "default")
        return literal(given.value) if given is not None else ...
    return literal(value)


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
    Finds fp16 chosen through a framework: `TrainingArguments(fp16=True)` (and TRL configs,
    and this module's own subclasses, also through a `fp16: bool = True` field),
    `Accelerator(mixed_precision="fp16")`, Lightning's `Trainer(precision="16-mixed")`,
    `mixed_precision: fp16` in an Accelerate config, `fp16: true` in Transformers arguments
    kept as YAML or JSON, and `--fp16` or `--mixed_precision fp16` on a launch command line,
    also through a shell variable (`--${DTYPE}` after `DTYPE="fp16"`). A value that is fp16
    when the script runs with its defaults (a parameter or option default, a conditional
    expression) counts; one the user has to ask for (`fp16=args.fp16`) does not.

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
    RTX 30xx/40xx or newer. Values that come through a variable get no fix: the place to
    change is where the variable is set.
    """

    code = "TM109"
    rule_id = "amp-bf16-vs-fp16"
    name = "prefer-bf16"
    severity = Severity.INFORMATION

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        local = argument_classes(src)
        for call in src.calls:
            qualname = src.qualname(call.func)
            if hf_arguments(qualname) or (isinstance(call.func, ast.Name) and
                                          call.func.id in local):
                yield from self._arguments(src, call)
            elif qualname in ACCELERATORS:
                found = keyword(call, "mixed_precision")
                if found is not None and literal(found.value) == "fp16":
                    yield self.finding(src.range(found), MESSAGE,
                                       [_in_string(src, found.value, "fp16", "bf16")])
                elif found is not None and _by_default(src, found.value, {"fp16"}):
                    yield self.finding(src.range(found), f"{MESSAGE} (fp16 by default here)")
            elif qualname in LIGHTNING_TRAINERS:
                found = keyword(call, "precision")
                if found is not None and literal(found.value) in LIGHTNING_FP16:
                    yield self.finding(src.range(found), MESSAGE,
                                       [TextEdit(src.range(found.value), '"bf16-mixed"')])
                elif found is not None and _by_default(src, found.value, LIGHTNING_FP16):
                    yield self.finding(src.range(found), f"{MESSAGE} (fp16 by default here)")
        for fp16 in filter(None, local.values()):
            start = src.start(fp16.target)
            yield self.finding(src.range(fp16), MESSAGE, [
                TextEdit(Range(start, Position(start.line, start.character + 4)), "bf16")])

    def _arguments(self, src: PythonSource, call: ast.Call) -> Iterator[CheckFinding]:
        fp16, bf16 = keyword(call, "fp16"), keyword(call, "bf16")
        if fp16 is None or (bf16 is not None and literal(bf16.value) is True):
            return
        if literal(fp16.value) is True:
            start = src.start(fp16)
            rename = TextEdit(Range(start, Position(start.line, start.character + 4)), "bf16")
            fix = [rename] if bf16 is None else \
                [TextEdit(src.range(fp16.value), "False"),
                 TextEdit(src.range(bf16.value), "True")]
            yield self.finding(src.range(fp16), MESSAGE, fix)
        elif literal(fp16.value) is ... and _by_default(src, fp16.value, {True}):
            yield self.finding(src.range(fp16), f"{MESSAGE} (fp16 by default here)")

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
        if any(True for _ in script.matches(BF16_FLAG)) or \
                any(True for _ in script.expanded_matches(BF16_FLAG)):
            return
        for line, match in script.matches(FP16_FLAG):
            if match.group(1) in FALSE_WORDS:
                continue
            flag = Range(Position(line, match.start()), Position(line, match.start() + 6))
            yield self.finding(flag, MESSAGE, [TextEdit(flag, "--bf16")])
        for line, match in script.matches(_MIXED_FLAG):
            yield self.finding(script.span(line, match), MESSAGE,
                               [TextEdit(script.span(line, match, 2), "bf16")])
        for pattern in (FP16_FLAG, _MIXED_FLAG):
            for line, match, expanded in script.expanded_matches(pattern):
                if pattern is FP16_FLAG and match.group(1) in FALSE_WORDS:
                    continue
                start, end = expanded.span(*match.span())
                names = ", ".join(f"${name}" for name in expanded.names)
                yield self.finding(Range(Position(line, start), Position(line, end)),
                                   f"{MESSAGE} (fp16 through {names}: change it where it "
                                   "is set)")


def _in_string(src: PythonSource, node: ast.expr, old: str, new: str) -> TextEdit:
    """Swap `old` for `new` inside a string literal, keeping its quotes and prefix."""
    start = src.start(node)
    at = src.segment(node).find(old)
    return TextEdit(Range(Position(start.line, start.character + at),
                          Position(start.line, start.character + at + len(old))), new)

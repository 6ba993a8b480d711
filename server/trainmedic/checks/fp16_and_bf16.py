"""TM113: fp16 and bf16 both enabled in one configuration."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, Position, Range, TextEdit
from trainmedic.checks.prefer_bf16 import (
    BF16_FLAG,
    FALSE_WORDS,
    FP16_FLAG,
    argument_classes,
    hf_arguments,
)
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.config import ConfigDocument, Node, bf16_in_fp16_block, is_true
from trainmedic.checks.sources.python import PythonSource, keyword, literal
from trainmedic.checks.sources.shell import ShellScript

MESSAGE = "fp16 and bf16 are both enabled: the run gets one of them (or refuses to start); " \
    "keep bf16 on Ampere and newer GPUs, fp16 with dynamic loss scaling on older ones"


def _claims(doc: ConfigDocument) -> tuple[list[tuple[Range, TextEdit | None]], bool]:
    """Where the config turns fp16 on (with the edit that turns it off), and whether it also
    turns bf16 on."""
    fp16: list[tuple[Range, TextEdit | None]] = []
    bf16 = False
    for root in doc.roots:
        precision = root.get("mixed_precision") if root.is_mapping else None
        if precision is not None and precision.value == "fp16":
            fp16.append((precision.range, doc.replace_word(precision.range, "fp16", "bf16")))
        bf16 |= precision is not None and precision.value == "bf16"
        for node in root.walk():
            if not node.is_mapping:
                continue
            block = node.get("fp16")
            enabled = _enabled(block)
            if enabled is not None and not bf16_in_fp16_block(block):
                fp16.append((enabled.range, TextEdit(enabled.range, "false")))
            bf16 |= any(_enabled(node.get(k)) is not None for k in ("bf16", "bfloat16"))
            bf16 |= enabled is not None and bf16_in_fp16_block(block)
    return fp16, bf16


def _enabled(block: Node | None) -> Node | None:
    """The `true` that turns a precision on: a DeepSpeed block's `enabled`, or the value of a
    plain `fp16: true` (Transformers arguments kept as YAML)."""
    if block is not None and block.is_mapping:
        block = block.get("enabled")
    return block if is_true(block) else None


class Fp16AndBf16(Check):
    """fp16 and bf16 enabled together.

    ## What it does
    Finds configurations that turn on both: a DeepSpeed config (JSON, or embedded in YAML)
    with `"fp16": {"enabled": true}` and `"bf16": {"enabled": true}`, a YAML config whose
    `mixed_precision: fp16` disagrees with a bf16 block it carries, Transformers arguments
    with `fp16: true` and `bf16: true` (in YAML or as `TrainingArguments(...)`), and a
    command line with `--fp16` and `--bf16`.

    ## Why is this bad?
    A run has one compute precision. DeepSpeed refuses to start ("bfloat16 and fp16 modes
    cannot be simultaneously enabled"), Transformers raises at argument parsing, and where
    a layer silently picks one, the loss scaling and the logs describe the other.

    ## Example
    ```json
    "fp16": {"enabled": true},
    "bf16": {"enabled": true}
    ```

    ## Use instead
    ```json
    "fp16": {"enabled": false},
    "bf16": {"enabled": true}
    ```

    ## Fix safety
    Keeps bf16 and turns fp16 off, which needs an Ampere or newer GPU; on V100 or T4 turn
    bf16 off instead.
    """

    code = "TM113"
    rule_id = "amp-bf16-vs-fp16"
    name = "fp16-and-bf16"

    def config(self, doc: ConfigDocument) -> Iterator[CheckFinding]:
        fp16, bf16 = _claims(doc)
        if bf16:
            for where, edit in fp16:
                yield self.finding(where, MESSAGE, [edit] if edit else None)

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        local = argument_classes(src)
        for call in src.calls:
            if not hf_arguments(src.qualname(call.func)) and not (
                    isinstance(call.func, ast.Name) and call.func.id in local):
                continue
            fp16, bf16 = keyword(call, "fp16"), keyword(call, "bf16")
            if fp16 is not None and bf16 is not None and literal(fp16.value) is True and \
                    literal(bf16.value) is True:
                yield self.finding(src.range(fp16), MESSAGE,
                                   [TextEdit(src.range(fp16.value), "False")])

    def shell(self, script: ShellScript) -> Iterator[CheckFinding]:
        if not any(True for _ in script.matches(BF16_FLAG)) and \
                not any(True for _ in script.expanded_matches(BF16_FLAG)):
            return
        for line, match in script.matches(FP16_FLAG):
            if match.group(1) not in FALSE_WORDS:
                yield self.finding(script.span(line, match), MESSAGE,
                                   [script.delete_words(line, match.start(), match.end())])
        for line, match, expanded in script.expanded_matches(FP16_FLAG):
            if match.group(1) not in FALSE_WORDS:
                start, end = expanded.span(*match.span())
                yield self.finding(Range(Position(line, start), Position(line, end)), MESSAGE)

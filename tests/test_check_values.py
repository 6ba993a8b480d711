"""The value analysis of a module: what a dtype, a flag or a backend name can hold."""

from __future__ import annotations

import ast

import pytest

from trainmedic.checks.sources.python import PythonSource
from trainmedic.checks.values import TorchDtype, Values, module_values

PRELUDE = """\
import argparse
import torch
parser = argparse.ArgumentParser()
"""


def _values(body: str, expression: str, world: dict[str, object] | None = None) -> Values:
    src = PythonSource.parse("t.py", PRELUDE + body + f"\n__probe__ = {expression}\n")
    probe = next(n for n in ast.walk(src.tree) if isinstance(n, ast.Assign) and
                 ast.unparse(n.targets[0]) == "__probe__")
    return module_values(src).evaluate(probe.value, world)


F16, BF16, F32 = TorchDtype("float16"), TorchDtype("bfloat16"), TorchDtype("float32")


@pytest.mark.parametrize(("body", "expression", "items", "complete"), [
    ("", "torch.float16", {F16}, True),
    ("dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'", "dtype",
     {"bfloat16", "float16"}, True),
    ("dtype = 'float16'\npt = {'float16': torch.float16, 'bfloat16': torch.bfloat16}[dtype]",
     "pt", {F16}, True),
    ("parser.add_argument('--dtype', choices=['fp16', 'bf16'], default='bf16')\n"
     "args = parser.parse_args()", "args.dtype", {"fp16", "bf16"}, True),
    ("parser.add_argument('--amp-dtype', default='bf16')\nargs = parser.parse_args()",
     "args.amp_dtype", {"bf16"}, False),
    ("parser.add_argument('--fp16', action='store_true')\nargs = parser.parse_args()",
     "args.fp16", {True, False}, True),
    ("def main(precision='fp16'):\n    return precision", "precision", {"fp16"}, False),
    ("name = 'bfloat16'", "getattr(torch, name)", {BF16}, True),
    ("x = 1\nx += 1", "x", {1}, False),
    ("a = b\nb = a", "a", set(), False),
])
def test_values_of_an_expression(body: str, expression: str, items: set[object],
                                 complete: bool) -> None:
    found = _values(body, expression)
    assert (set(found.items), found.complete) == (items, complete)


def test_a_world_fixes_one_choice_for_every_expression_that_reads_it() -> None:
    body = ("parser.add_argument('--dtype', choices=['float16', 'bfloat16'])\n"
            "args = parser.parse_args()\n"
            "pt = torch.float16 if args.dtype == 'float16' else torch.bfloat16")
    assert _values(body, "pt", {"args.dtype": "float16"}).items == {F16}
    assert _values(body, "args.dtype == 'float16'", {"args.dtype": "bfloat16"}).only(False)


def test_choices_try_each_value_of_the_options_then_no_choice() -> None:
    src = PythonSource.parse("t.py", PRELUDE + (
        "parser.add_argument('--dtype', choices=('fp16', 'bf16'), default='bf16')\n"
        "args = parser.parse_args()\n"
        "amp = {'fp16': torch.float16, 'bf16': torch.bfloat16}[args.dtype]\n"))
    amp = next(n.value for n in ast.walk(src.tree) if isinstance(n, ast.Assign) and
               ast.unparse(n.targets[0]) == "amp")
    worlds = list(module_values(src).choices(amp))
    assert worlds[:2] == [{"args.dtype": "bf16"}, {"args.dtype": "fp16"}]
    assert worlds[-1] == {}


def test_large_value_sets_are_unknown() -> None:
    body = "\n".join(f"x = {n}" for n in range(100))
    assert _values(body, "x") == Values(too_many=True)

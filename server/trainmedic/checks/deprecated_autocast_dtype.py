"""TM115: the deprecated per-device autocast getters (`torch.get_autocast_gpu_dtype()`)."""

from __future__ import annotations

from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, TextEdit
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource

# old name → (new name, device); each emits "torch.<old>() is deprecated. Please use
# torch.<new>('<device>') instead." (torch/csrc/autograd/init.cpp, torch 2.4 and newer)
REPLACED = {
    "torch.get_autocast_gpu_dtype": ("get_autocast_dtype", "cuda"),
    "torch.get_autocast_cpu_dtype": ("get_autocast_dtype", "cpu"),
    "torch.is_autocast_cpu_enabled": ("is_autocast_enabled", "cpu"),
}


class DeprecatedAutocastGetter(Check):
    """`torch.get_autocast_gpu_dtype()` and the other per-device autocast getters.

    ## What it does
    Finds calls to `torch.get_autocast_gpu_dtype()`, `torch.get_autocast_cpu_dtype()` and
    `torch.is_autocast_cpu_enabled()` outside compatibility code (a `try` that catches
    AttributeError, an `if hasattr(...)` or version test).

    ## Why is this bad?
    Since torch 2.4 each call warns "torch.get_autocast_gpu_dtype() is deprecated. Please
    use torch.get_autocast_dtype('cuda') instead.", like the `torch.cuda.amp` API they
    belong with, and they are kept only until removal. Inside a model's forward the warning
    repeats on every step.

    ## Example
    ```python
    dtype = torch.get_autocast_gpu_dtype()
    ```

    ## Use instead
    ```python
    dtype = torch.get_autocast_dtype("cuda")
    ```

    ## Fix safety
    Safe on torch 2.4 and newer, which added the device-generic getters; on older torch
    the new names do not exist, so code that must run there keeps the old call behind a
    `hasattr(torch, "get_autocast_dtype")` test (which this check leaves alone).
    """

    code = "TM115"
    rule_id = "amp-loss-scale"
    name = "deprecated-autocast-getter"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        torch = src.alias_of("torch")
        for call in src.calls_to(REPLACED):
            if src.in_fallback(call):
                continue
            old = src.qualname(call.func) or ""
            new, device = REPLACED[old]
            fix = [TextEdit(src.range(call.func), f"{torch}.{new}"),
                   src.insert_first_argument(call, f'"{device}"')] \
                if torch and not call.args and not call.keywords else None
            yield self.finding(src.range(call.func),
                               f"{old}() is deprecated since torch 2.4: use "
                               f"torch.{new}(\"{device}\")", fix)

"""TM110: `torch.load` without an explicit `weights_only`."""

from __future__ import annotations

from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, has_star_kwargs, keyword


class TorchLoadWeightsOnly(Check):
    """`torch.load(...)` without `weights_only`.

    ## What it does
    Finds `torch.load` calls that do not pass `weights_only` (and no `**kwargs` that might).

    ## Why is this bad?
    Before torch 2.6 `torch.load` unpickles the whole file, and unpickling runs any code a
    crafted checkpoint carries. Since 2.6 the default is `weights_only=True`, so the same line
    now refuses checkpoints that hold other Python objects (an argparse `Namespace`, a custom
    class) with "Weights only load failed". Saying which one you mean makes the line behave
    the same on every version.

    ## Example
    ```python
    state = torch.load(args.resume, map_location="cpu")
    ```

    ## Use instead
    ```python
    state = torch.load(args.resume, map_location="cpu", weights_only=True)
    ```

    ## Fix safety
    Safe on torch 2.6 and newer, where it is the default. On older versions it refuses
    checkpoints that pickle arbitrary objects; for a file you trust that needs them, pass
    `weights_only=False` instead, or allow the classes with
    `torch.serialization.add_safe_globals`.
    """

    code = "TM110"
    rule_id = "torch-load-weights-only"
    name = "torch-load-without-weights-only"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        for call in src.calls_to({"torch.load", "torch.serialization.load"}):
            if keyword(call, "weights_only") is None and not has_star_kwargs(call):
                yield self.finding(src.range(call.func),
                                   "torch.load without weights_only: unpickling can run code "
                                   "from the file, and torch 2.6 changed the default to "
                                   "True; pass weights_only=True",
                                   [src.append_argument(call, "weights_only=True")])

"""TM111: `init_process_group` without a `timeout`."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, Severity
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, argument, has_star_kwargs
from trainmedic.checks.values import ModuleValues, module_values

INIT = {"torch.distributed.init_process_group",
        "torch.distributed.distributed_c10d.init_process_group"}
# Backends that only simulate ranks in one process (torch.testing._internal.distributed:
# fake_pg.py registers Backend.FAKE, multi_threaded_pg.py "threaded"): no watchdog, no waits.
SIMULATED = frozenset({"fake", "threaded"})


class ProcessGroupTimeout(Check):
    """`init_process_group(...)` without an explicit `timeout`.

    ## What it does
    Finds `torch.distributed.init_process_group` calls that leave `timeout` to its default.
    Simulated backends (`"fake"`, `"threaded"`), which run every rank in one process and
    never wait on another, are left alone.

    ## Why is this bad?
    The timeout decides how long a collective may wait for the slowest rank before the NCCL
    watchdog tears the job down (10 minutes by default for NCCL). Rank 0 saving a large
    checkpoint, a slow first batch or dataset preprocessing on one rank then kills a healthy
    job with "Watchdog caught collective operation timeout"; a real hang waits the whole
    default before anyone sees it. Setting it states how long this job's slowest step is
    allowed to take.

    ## Example
    ```python
    dist.init_process_group(backend="nccl")
    ```

    ## Use instead
    ```python
    dist.init_process_group(backend="nccl", timeout=datetime.timedelta(minutes=30))
    ```

    ## Fix safety
    No automatic fix: the right value depends on the job's slowest legitimate step.
    """

    code = "TM111"
    rule_id = "nccl-timeout"
    name = "process-group-without-timeout"
    severity = Severity.INFORMATION

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        for call in src.calls_to(INIT):
            if _simulated(src, module_values(src), argument(call, "backend", 0)):
                continue
            if argument(call, "timeout", 2) is None and not has_star_kwargs(call):
                yield self.finding(src.range(call.func),
                                   "init_process_group without timeout: the default decides "
                                   "when a slow rank kills the job; pass "
                                   "timeout=datetime.timedelta(...)")


def _simulated(src: PythonSource, values: ModuleValues, backend: ast.expr | None) -> bool:
    """`"fake"`, `dist.Backend.FAKE`, or a name that holds nothing but those."""
    if backend is None:
        return False
    name = src.qualname(backend) or ""
    if name.startswith("torch.distributed.") and name.rsplit(".", 1)[-1].lower() in SIMULATED:
        return True
    return values.evaluate(backend).only(*SIMULATED)

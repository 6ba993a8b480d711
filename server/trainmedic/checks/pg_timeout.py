"""TM111: `init_process_group` without a `timeout`."""

from __future__ import annotations

from collections.abc import Iterator

from trainmedic.checks.findings import CheckFinding, Severity
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, argument, has_star_kwargs

INIT = {"torch.distributed.init_process_group",
        "torch.distributed.distributed_c10d.init_process_group"}


class ProcessGroupTimeout(Check):
    """`init_process_group(...)` without an explicit `timeout`.

    ## What it does
    Finds `torch.distributed.init_process_group` calls that leave `timeout` to its default.

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
            if argument(call, "timeout", 2) is None and not has_star_kwargs(call):
                yield self.finding(src.range(call.func),
                                   "init_process_group without timeout: the default decides "
                                   "when a slow rank kills the job; pass "
                                   "timeout=datetime.timedelta(...)")

"""TM114: FSDP mixed precision in float16 without a ShardedGradScaler."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from trainmedic.checks.amp import SHARDED_SCALERS, amp_facts
from trainmedic.checks.findings import CheckFinding
from trainmedic.checks.protocol import Check
from trainmedic.checks.sources.python import PythonSource, argument
from trainmedic.checks.values import is_fp16, module_values, shown

# torch/distributed/fsdp/__init__.py exports both; fully_shard's policy also lived in
# torch.distributed._composable.fsdp before it moved.
POLICIES = frozenset({
    "torch.distributed.fsdp.MixedPrecision",
    "torch.distributed.fsdp.api.MixedPrecision",
    "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision",
    "torch.distributed.fsdp.MixedPrecisionPolicy",
    "torch.distributed.fsdp._fully_shard.MixedPrecisionPolicy",
    "torch.distributed._composable.fsdp.MixedPrecisionPolicy",
})


class FsdpFp16WithoutShardedScaler(Check):
    """FSDP computing in float16 with no `ShardedGradScaler` to scale the loss.

    ## What it does
    Finds `MixedPrecision(param_dtype=torch.float16)` (FSDP) and
    `MixedPrecisionPolicy(param_dtype=torch.float16)` (`fully_shard`), also when the dtype
    comes through a variable that can be float16, in a module that runs a backward pass and
    builds no `ShardedGradScaler`. A module that scales the loss some other way (a wrapper
    object, a scaler passed in) is left alone.

    ## Why is this bad?
    `param_dtype` is the dtype of the forward and backward computation, so the gradients
    are float16 and underflow without loss scaling, as with fp16 autocast. A plain
    `GradScaler` is not the answer: it looks for inf/NaN only in the gradients this rank
    holds, so with sharded gradients one rank can skip a step the others take.
    `ShardedGradScaler` (torch/distributed/fsdp/sharded_grad_scaler.py) "Sync[s] inf/nan
    for scaled gradient tensors ... across nodes" and handles CPU-offloaded shards.

    ## Example
    ```python
    mp = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
    model = FSDP(model, mixed_precision=mp)
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
    scaler = ShardedGradScaler()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```
    or `param_dtype=torch.bfloat16`, which needs no scaler.

    ## Fix safety
    No automatic fix: the scaler goes around the backward pass and the step, which a
    person has to place (or choose bf16 for hardware that has it).
    """

    code = "TM114"
    rule_id = "amp-loss-scale"
    name = "fsdp-fp16-without-sharded-grad-scaler"

    def python(self, src: PythonSource) -> Iterator[CheckFinding]:
        policies = list(src.calls_to(POLICIES))
        if not policies:
            return
        facts = amp_facts(src)
        sharded = [c for c in facts.scalers if src.qualname(c.func) in SHARDED_SCALERS]
        if sharded or not facts.backward_scopes or facts.wrapped or facts.other_scalers or (
                facts.scaler_keys and not facts.scalers):
            return  # scaled, not trained here, or scaled in a way this module cannot see
        values = module_values(src)
        plain = "; a plain GradScaler checks for inf/NaN only in this rank's shard" \
            if facts.scalers else ""
        for call in policies:
            dtype = argument(call, "param_dtype", 0)
            found = values.evaluate(dtype).items if dtype is not None else frozenset()
            fp16 = [v for v in found if is_fp16(v)]
            if not fp16:
                continue
            what = "" if isinstance(dtype, ast.Attribute) and src.qualname(dtype) else \
                f" ({src.segment(dtype)} can be {shown(fp16[0])})" if dtype is not None else ""
            yield self.finding(src.range(dtype if dtype is not None else call.func),
                               f"FSDP computes in float16{what} without a ShardedGradScaler: "
                               f"fp16 gradients underflow without loss scaling{plain}; use "
                               "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler "
                               "or param_dtype=torch.bfloat16")

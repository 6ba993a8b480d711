"""Every check, one line each. A new check is a module, a line here, and its fixtures."""

from __future__ import annotations

from trainmedic.checks.apex_amp import ApexAmp
from trainmedic.checks.clip_unscale import ClipBeforeUnscale
from trainmedic.checks.deprecated_amp import DeprecatedCudaAmp
from trainmedic.checks.deprecated_autocast_dtype import DeprecatedAutocastGetter
from trainmedic.checks.fp16_and_bf16 import Fp16AndBf16
from trainmedic.checks.fp16_without_scaler import Fp16WithoutScaler
from trainmedic.checks.fsdp_fp16 import FsdpFp16WithoutShardedScaler
from trainmedic.checks.half_model import HalfModelTrained
from trainmedic.checks.nccl_env import DeprecatedNcclEnv
from trainmedic.checks.pg_timeout import ProcessGroupTimeout
from trainmedic.checks.prefer_bf16 import PreferBf16
from trainmedic.checks.protocol import Check
from trainmedic.checks.scaler_update import ScalerStepWithoutUpdate
from trainmedic.checks.scaler_with_bf16 import ScalerWithBf16
from trainmedic.checks.static_loss_scale import StaticLossScale
from trainmedic.checks.torch_load import TorchLoadWeightsOnly
from trainmedic.checks.unscaled_backward import UnscaledBackward

CHECKS: tuple[Check, ...] = (
    DeprecatedCudaAmp(),         # TM101
    Fp16WithoutScaler(),         # TM102
    ScalerWithBf16(),            # TM103
    ScalerStepWithoutUpdate(),   # TM104
    ClipBeforeUnscale(),         # TM105
    UnscaledBackward(),          # TM106
    StaticLossScale(),           # TM107
    HalfModelTrained(),          # TM108
    PreferBf16(),                # TM109
    TorchLoadWeightsOnly(),      # TM110
    ProcessGroupTimeout(),       # TM111
    DeprecatedNcclEnv(),         # TM112
    Fp16AndBf16(),               # TM113
    FsdpFp16WithoutShardedScaler(),  # TM114
    DeprecatedAutocastGetter(),  # TM115
    ApexAmp(),                   # TM116
)


def check_by_code(code: str) -> Check | None:
    return next((c for c in CHECKS if c.code == code), None)

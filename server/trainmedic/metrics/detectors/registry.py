"""Every detector, one line each: adding one is its module and its line here."""

from __future__ import annotations

from collections.abc import Mapping

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.detectors.grad_norm_breaks import GradNormBreaks
from trainmedic.metrics.detectors.grad_norm_growth import GradNormGrowth
from trainmedic.metrics.detectors.grad_norm_huge import GradNormHuge
from trainmedic.metrics.detectors.grad_norm_spike import GradNormSpike
from trainmedic.metrics.detectors.loss_divergence import LossDivergence
from trainmedic.metrics.detectors.non_finite_grad_norm import NonFiniteGradNorm
from trainmedic.metrics.detectors.non_finite_loss import NonFiniteLoss
from trainmedic.metrics.detectors.overflow_rate import OverflowRate
from trainmedic.metrics.detectors.scale_collapse import ScaleCollapse
from trainmedic.metrics.detectors.scale_floor import ScaleFloor
from trainmedic.metrics.detectors.scale_stuck import ScaleStuck
from trainmedic.metrics.detectors.zero_loss_run import ZeroLossRun

DETECTORS: dict[str, type[Detector]] = {d.NAME: d for d in (
    NonFiniteLoss,
    NonFiniteGradNorm,
    ZeroLossRun,
    ScaleCollapse,
    ScaleFloor,
    ScaleStuck,
    OverflowRate,
    GradNormHuge,
    GradNormSpike,
    GradNormGrowth,
    GradNormBreaks,
    LossDivergence,
)}


def detector_params(name: str, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """The detector's defaults with a rule's overrides applied."""
    return {**DETECTORS[name].DEFAULTS, **(overrides or {})}


def unknown_params(name: str, params: Mapping[str, float]) -> list[str]:
    """The parameters a rule gives that the detector does not take."""
    return sorted(set(params) - set(DETECTORS[name].DEFAULTS))

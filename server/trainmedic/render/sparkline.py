"""Metric series → one line of block characters each, with their anomalies, for a terminal."""

from __future__ import annotations

import math
from collections.abc import Collection

from trainmedic.model import Plot

SPARK = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 48
ANOMALIES_SHOWN = 3


def sparkline(values: list[float | None]) -> str:
    """One character per value; log-scaled when the values span orders of magnitude."""
    finite = [v for v in values if v is not None]
    if not finite:
        return "×" * len(values)
    logarithmic = min(finite) > 0 and max(finite) / min(finite) > 100

    def level(v: float) -> float:
        return math.log10(v) if logarithmic else v

    low, high = level(min(finite)), level(max(finite))
    span = (high - low) or 1.0
    return "".join("×" if v is None else SPARK[int((level(v) - low) / span * (len(SPARK) - 1))]
                   for v in values)


def sparkline_rows(series: tuple[Plot, ...], unexplained: Collection[str] = ()) -> list[str]:
    """The "Metrics:" block: a sparkline per metric, its last value, where detectors fired.

    The first anomalies of each metric are shown, and the first of every `unexplained` detector
    (one no finding counted), marked, so a number no rule explains is never left out.
    """
    if not series:
        return []
    out = ["", "Metrics:"]
    for plot in series:
        values = [value for _, value in plot.points]
        step = max(1, math.ceil(len(values) / SPARK_WIDTH))
        last = values[-1] if values else None
        rank = f" (rank {plot.rank})" if plot.rank is not None else ""
        out.append(f"  {plot.metric:<10} {sparkline(values[::step]):<{SPARK_WIDTH}}  last "
                   f"{'nan/inf' if last is None else f'{last:.4g}'}{rank}")
        shown = list(plot.anomalies[:ANOMALIES_SHOWN])
        for anomaly in plot.anomalies[ANOMALIES_SHOWN:]:
            if anomaly.detector in unexplained and \
                    all(a.detector != anomaly.detector for a in shown):
                shown.append(anomaly)
        for anomaly in shown:
            mark = "  (no rule explains it)" if anomaly.detector in unexplained else ""
            out.append(f"  {'':<10} ^ {anomaly.detector} at "
                       f"{anomaly.line.path}:{anomaly.line.number}{mark}")
    return out

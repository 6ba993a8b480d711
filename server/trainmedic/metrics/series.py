"""Metric samples accumulated in bounded memory: detectors per rank, a plot-sized series.

The series keeps one rank's values per metric (the first rank that reports it), thinned by
doubling its stride whenever it grows past twice the plot size, so a billion-step log costs
the same memory as a short one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from trainmedic.metrics.detectors.base import Detector
from trainmedic.metrics.detectors.registry import DETECTORS, detector_params
from trainmedic.metrics.samples import METRICS, Sample
from trainmedic.model import Anomaly, Line, Plot

PLOT_POINTS = 500
ANOMALIES_KEPT = 50
PLOTTED_RANKS = 16

DetectorKey = tuple[str, tuple[tuple[str, float], ...]]


def detector_key(name: str, params: Mapping[str, float] | None = None) -> DetectorKey:
    return name, tuple(sorted(detector_params(name, params).items()))


class _Series:
    __slots__ = ("points", "rank", "seen", "stride")

    def __init__(self, rank: int | None) -> None:
        self.rank = rank
        self.points: list[tuple[float, float]] = []
        self.stride = 1
        self.seen = 0

    def add(self, x: float, value: float) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.points.append((x, value))
        if len(self.points) > 2 * PLOT_POINTS:
            self.points = self.points[::2]
            self.stride *= 2


class MetricSeries:
    """Feeds every sample to the configured detectors of its rank and to the plot series."""

    __slots__ = ("_params", "_reading", "detectors_of", "keys", "plotted_ranks", "ranks",
                 "samples", "series")

    def __init__(self, keys: tuple[DetectorKey, ...]) -> None:
        self.keys = keys
        # Each rank's detectors, in the keys' order, each made when it is first fed: a job of
        # thousands of ranks prints a few samples per rank, which most of them never read.
        self.detectors_of: dict[int | None, list[Detector | None]] = {}
        self.series: dict[tuple[str, int | None], _Series] = {}
        self.plotted_ranks: set[int | None] = set()
        # which detectors (by key) read a sample of these metrics: the same few sets recur
        self._reading: dict[tuple[str, ...], list[int]] = {}
        self.ranks: set[int] = set()
        self.samples = 0
        # Each configuration's parameters, one dict shared by its detectors on every rank.
        self._params = {key: dict(key[1]) for key in keys}

    @classmethod
    def for_keys(cls, keys: Iterable[DetectorKey]) -> MetricSeries:
        return cls(tuple(dict.fromkeys(keys)))

    def feed(self, sample: Sample, line: Line) -> None:
        self.samples += 1
        detectors = self.detectors_of.get(line.rank)
        if detectors is None:
            detectors = self.detectors_of[line.rank] = [None] * len(self.keys)
            if line.rank is not None:
                self.ranks.add(line.rank)
        present = tuple([name for name, _ in sample.values])
        if sample.skipped:
            present += ("skipped",)
        reading = self._reading.get(present)
        if reading is None:
            reading = self._reading[present] = [
                index for index, (name, _) in enumerate(self.keys)
                if not DETECTORS[name].READS.isdisjoint(present)]
        x = sample.plot_x(line)
        for index in reading:  # Detector.feed, with the x worked out once for all of them
            detector = detectors[index]
            if detector is None:
                name, params = self.keys[index]
                detector = detectors[index] = DETECTORS[name](self._params[name, params])
            detector.x = x
            detector.check(sample, line)
        for name, value in sample.values:
            plot = self.series.get((name, line.rank))
            if plot is None:
                if line.rank not in self.plotted_ranks:
                    if len(self.plotted_ranks) >= PLOTTED_RANKS:
                        continue
                    self.plotted_ranks.add(line.rank)
                plot = self.series[(name, line.rank)] = _Series(line.rank)
            plot.add(x, value)

    def fired(self, key: DetectorKey) -> list[Line]:
        """Evidence lines of one detector configuration, over every rank."""
        if key not in self.keys:
            return []
        index = self.keys.index(key)
        return [line for detectors in self.detectors_of.values()
                if (detector := detectors[index]) is not None
                and (detector.found or detector.held is not None)
                for line, _ in detector.evidence()]

    def plots(self, preferred: int | None = None) -> tuple[Plot, ...]:
        """Per metric: one rank's points (at most PLOT_POINTS), the anomalies, and the other
        plotted ranks' points.

        The plotted rank is `preferred` (the initiating rank) when it reports the metric, else
        the one where a detector fired on that metric, else the lowest.
        """
        anomalies: dict[str, list[Anomaly]] = {}
        for detector in (d for detectors in self.detectors_of.values() for d in detectors
                         if d is not None and (d.found or d.held is not None)):  # no call
            found = detector.evidence()
            kept = anomalies.setdefault(detector.METRIC, [])
            for line, x in found:
                if len(kept) < ANOMALIES_KEPT:
                    kept.append(Anomaly(detector.NAME, line, x, detector.meaning()))
        out = []
        for name in METRICS:
            ranks = [rank for metric, rank in self.series if metric == name]
            if not ranks:
                continue
            flagged = [a.line.rank for a in anomalies.get(name, ()) if a.line.rank in ranks]
            shown = preferred if preferred is not None and preferred in ranks else \
                flagged[0] if flagged else min(ranks, key=lambda r: -1 if r is None else r)
            others = tuple((rank, _thinned(self.series[(name, rank)]))
                           for rank in sorted(r for r in ranks if r is not None and r != shown))
            out.append(Plot(name, shown, _thinned(self.series[(name, shown)]),
                            tuple(anomalies.get(name, ())), others))
        return tuple(out)


def _thinned(series: _Series) -> tuple[tuple[float, float | None], ...]:
    """At most PLOT_POINTS points, None where the value was not finite."""
    step = max(1, math.ceil(len(series.points) / PLOT_POINTS))
    return tuple((x, v if math.isfinite(v) else None) for x, v in series.points[::step])

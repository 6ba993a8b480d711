"""What every detector shares: its declaration, its evidence, and the per-rank state it keeps."""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import ClassVar

from trainmedic.metrics.samples import Sample
from trainmedic.model import Line

EVIDENCE_KEPT = 6


class Detector:
    """One detector with its parameters, run over one rank's samples in order.

    A subclass declares the class variables and implements `check`, calling `hit(line)` where
    its condition holds; a sample holding none of READS is never fed to it. A job of thousands
    of ranks runs one of each per rank, so an idle detector keeps next to nothing: complete
    `params` are shared, not copied, and its evidence is made when it first fires.
    """

    NAME: ClassVar[str]
    MEANS: ClassVar[str]  # one sentence naming the parameters in backquotes
    READS: ClassVar[frozenset[str]]
    METRIC: ClassVar[str]  # the plotted metric its anomalies are marked on
    DEFAULTS: ClassVar[Mapping[str, float]]
    found: tuple[tuple[Line, float], ...] = ()  # the first hits, each with its x
    held: tuple[Line, float] | None = None  # a hit later samples may still undo
    x = 0.0  # the plot x of the sample being checked (Sample.plot_x)

    def __init__(self, params: Mapping[str, float] | None = None) -> None:
        self.params: Mapping[str, float] = (
            params if params is not None and params.keys() >= self.DEFAULTS.keys()
            else {**self.DEFAULTS, **(params or {})})

    def meaning(self) -> str:
        """MEANS with this detector's parameter values in place of their names."""
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return f"{self.params[name]:g}" if name in self.params else match.group(0)

        return re.sub(r"`(\w+)`", value, self.MEANS)

    def hit(self, line: Line) -> None:
        if len(self.found) < EVIDENCE_KEPT and all(line != kept for kept, _ in self.found):
            self.found += ((line, self.x),)

    def hold(self, line: Line) -> None:
        """A hit that counts only if nothing after it shows the condition passed (a value
        that only the end of the log can settle)."""
        if self.held is None:
            self.held = (line, self.x)

    def release(self) -> None:
        self.held = None

    def evidence(self) -> list[tuple[Line, float]]:
        """Where the condition held, with each line's x: its hits, then a hit still held."""
        return [*self.found, self.held] if self.held is not None else list(self.found)

    def feed(self, sample: Sample, line: Line) -> None:
        """One sample in order; its x marks the anomaly on a plot."""
        self.x = sample.plot_x(line)
        self.check(sample, line)

    def check(self, sample: Sample, line: Line) -> None:
        raise NotImplementedError


class RunningMedian:
    """The median of the last `window` finite values, once `min_history` of them were seen.

    The window is also kept sorted, so each median is read, not sorted for (two detectors of
    every rank ask for one at every sample)."""

    __slots__ = ("history", "min_history", "ordered", "window")

    def __init__(self, window: float, min_history: float) -> None:
        self.window, self.min_history = window, min_history
        self.history: list[float] = []  # a deque's first block is 10x bigger
        self.ordered: list[float] = []  # the history, sorted

    def __eq__(self, other: object) -> bool:
        """The same window holding the same values (a detector's state is compared so)."""
        return isinstance(other, RunningMedian) and (
            self.window, self.min_history, self.history) == (
            other.window, other.min_history, other.history)

    __hash__ = None  # type: ignore[assignment]  # equal by what it holds, which changes

    def before(self, value: float) -> float | None:
        """The median before `value` (None while the history is short); then keeps `value`."""
        ordered, median = self.ordered, None
        count = len(ordered)
        if count >= self.min_history:
            middle = count // 2
            median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        self.history.append(value)
        insort(ordered, value)
        if count >= self.window:
            del ordered[bisect_left(ordered, self.history.pop(0))]
        return median

"""Metric samples read out of log lines: loss, loss scale, grad norm, learning rate, skips.

People print metrics in a handful of shapes: Hugging Face dict lines (`{'loss': 0.0, ...}`),
Megatron-LM iteration lines (`lm loss: ... | loss scale: ... | grad norm: ...`), DeepSpeed and
Apex overflow lines, progress-bar postfixes (`loss=nan`) and plain `step 10 loss 2.31`. Each
becomes a `Sample`; only lines with a metric word are parsed, and of a long log only a sample
of them (`scan_metrics`).

Annotations are evaluated, as in `model`, for the records' sake.
"""

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import AnyStr, NamedTuple

from trainmedic.logs.prefixes import parse_rank
from trainmedic.logs.reader import MAX_LINE_CHARS, Chunk, LineCounter, decoded
from trainmedic.model import Line

METRICS = ("loss", "loss_scale", "grad_norm", "lr")

# Only lines with one of these words are parsed: `(?i:loss|grad[_ ]norm)`, opening with a class
# of their first letters (see _PLAIN_STEP).
_TRIGGER_BYTES = re.compile(rb"[LlGg](?:(?<=[Ll])(?i:oss)|(?<=[Gg])(?i:rad[_ ]norm))")
# The same words in a chunk's lowered copy (ASCII case, as `(?i)` on bytes): found at the speed
# of a plain search where the words are far apart.
_GRAD_NORM_LOWERED = re.compile(rb"grad[_ ]norm")
TRIGGER_WINDOW = 1 << 12  # bytes searched with _TRIGGER_BYTES before the lowered copy is made
# Chunk-wide signals the sampler acts on; a matcher reports which a chunk holds, in the same pass
# as its fingerprints. A non-finite or zero loss makes a chunk worth reading in full; loss-scale
# changes and skipped steps are rare and exact, so their lines are always read. A non-finite
# value counts only where a metric is printed (after `:`/`=` or the word loss): Megatron-LM's
# every step line says "number of nan iterations:   0", which is no NaN at all. A non-finite
# value is printed on its metric's line, so its match stays on one line.
SIGNALS = {
    "non-finite": r"(?:[:=]|(?i:loss))[ \t]{0,3}[-+]?(?:nan|NaN|inf|Inf)\b",
    "zero-loss": r"loss['\"]?\s{0,3}[:=]\s{0,3}0(?:\.0*)?(?:[^\w.]|$)",
    "scale": r"cale|Skipping",
}
# The words every match of a signal ends with (where a signal has no required literal): Python's
# `re` looks for the signal only around them, far quicker than over the whole text.
SIGNAL_WORDS = {"non-finite": ("nan", "NaN", "inf", "Inf")}
SIGNAL_REACH = 12  # characters a signal's match may run before its word
# The signal whose matches a matcher may report where they end, in its own pass (see
# `scan_metrics`): where a loss or norm is not finite.
POSITIONED = "non-finite"
# A chunk is searched as bytes (the same patterns: they are ASCII), decoded line by line.
_SIGNAL_BYTES = {name: re.compile(pattern.encode(), re.MULTILINE)
                 for name, pattern in SIGNALS.items()}
_SIGNAL_WORDS_BYTES = {name: tuple(word.encode() for word in words)
                       for name, words in SIGNAL_WORDS.items()}
# The words of scale lines, found in a chunk that holds the scale signal (see `_scale_lines`).
SCALE_WORDS = ("scale", "Skipping step", "skipped iterations")
_SCALE_WORDS_BYTES = tuple(word.encode() for word in SCALE_WORDS)
# What a scale line says: the bytes from the word "scale" and from "skipped iterations", the
# values and a little more, within its line. A line saying what the scale line before it said
# adds nothing to the scale detectors but one more sample.
_SAYS_BYTES = 24
NOTABLE_CONTEXT = 1 << 15
SAMPLES_PER_CHUNK = 32
SHORT_CHUNK_BYTES = 1 << 16


def metric_signal(pattern: str) -> str:
    """The signal a matcher reports for a chunk where a rule's metric pattern may match."""
    return "metric:" + pattern


_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf)"
_PAIR = re.compile(
    r"(?<![\w.])['\"]?(?P<key>lm loss|loss scale|grad norm|learning rate|"
    r"number of skipped iterations|[A-Za-z_][\w/]{0,40}+)['\"]?\s{0,3}[:=]\s{0,3}"
    r"(?P<value>" + _NUMBER + r")(?![\w.])"
)
# Each of these opens with a word or a class of its first letter, then looks back at what may
# not come before it: `re` skips to where a pattern's first character is, but tries one that
# opens with a lookbehind or in any case at every character, three times slower on a step line.
# The classes hold the letters a caseless `s` and `i` also match (the long s, the dotted and the
# dotless i): these are `(?i)\b(?:step|iter|iteration)\s{1,8}(\d{1,12})\b`, `(?i)\bloss\s{1,3}`
# and a number, and `(?<![\w.])scale`, a test checks.
_PLAIN_STEP = re.compile(
    r"[SsIi\u0130\u0131\u017f](?<=\b.)(?i:(?<=s)tep|(?<=i)ter(?:ation)?)\s{1,8}(\d{1,12})\b")
_BARE_SCALE = re.compile(r"scale(?<![\w.]scale)\s{0,3}[:=]\s{0,3}(" + _NUMBER + r")(?![\w.])")
_PLAIN_LOSS = re.compile(r"[Ll](?<=\b.)(?i:oss\s{1,3}(" + _NUMBER + r"))(?![\w.])")
_OVERFLOW = re.compile(
    r"(?:Attempted loss scale: [0-9.eE+-]{1,30}, reducing to|reducing loss scale to) "
    r"(?P<scale>[0-9.eE+-]{1,30})"
)
_KEYS = {
    "loss": "loss", "lm loss": "loss", "train_loss": "loss", "train/loss": "loss",
    "loss scale": "loss_scale", "loss_scale": "loss_scale", "lossscale": "loss_scale",
    "cur_scale": "loss_scale",
    "grad_norm": "grad_norm", "grad norm": "grad_norm", "gradnorm": "grad_norm",
    "train/grad_norm": "grad_norm",
    "learning_rate": "lr", "learning rate": "lr", "lr": "lr", "train/learning_rate": "lr",
    "step": "step", "iter": "step", "iteration": "step", "global_step": "step",
    "number of skipped iterations": "skipped",
}


class Sample(NamedTuple):
    """One line's metric values; `overflow` marks a step skipped for inf/NaN gradients;
    `repeats` counts the scale lines after it that said the same and were not read."""

    values: tuple[tuple[str, float], ...]
    step: int | None = None
    overflow: bool = False
    skipped: int = 0
    repeats: int = 0

    def get(self, name: str) -> float | None:
        for key, value in self.values:  # a handful of pairs: a scan beats building a dict
            if key == name:
                return value
        return None

    def plot_x(self, line: Line) -> float:
        """Where the sample sits on a plot, and where a detector's anomaly is marked: its step,
        else the number of its line."""
        return float(self.step) if self.step is not None else float(line.number)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_sample(body: str, extra: Sequence[re.Pattern[str]] = ()) -> Sample | None:
    """The metrics printed on one line, or None when it carries none.

    `extra` are rules' own metric patterns, tried first, for formats this module does not know.
    """
    values = _extra_values(body, extra) if extra else {}
    extra_step, extra_skipped = values.pop("step", math.nan), values.pop("skipped", 0.0)
    step = int(extra_step) if math.isfinite(extra_step) else None
    skipped = int(extra_skipped) if math.isfinite(extra_skipped) else 0
    for name, text in named_pairs(body):
        if (value := _float(text)) is None:
            continue
        if name == "step":
            if math.isfinite(value) and step is None:
                step = int(value)
        elif name == "skipped":
            skipped = int(value) if math.isfinite(value) else 0
        else:
            values.setdefault(name, value)
    if "loss" in values and "loss_scale" not in values and (
            bare := _BARE_SCALE.search(body)) is not None:
        scale = _float(bare.group(1))
        if scale is not None:
            values["loss_scale"] = scale  # `scale=` printed beside a loss is the loss scale
    overflow = _OVERFLOW.search(body) if "reducing" in body else None
    if overflow:
        scale = _float(overflow.group("scale"))
        if scale is not None:
            values["loss_scale"] = scale
    if "loss" not in values and (plain := _PLAIN_LOSS.search(body)):
        loss = _float(plain.group(1))
        if loss is not None:
            values["loss"] = loss
    if step is None and (plain_step := _PLAIN_STEP.search(body)):
        step = int(plain_step.group(1))
    if not values and not skipped:
        return None
    return Sample(tuple(sorted(values.items())), step, overflow is not None, skipped)


def _named_pairs(body: str) -> list[tuple[str, str]]:
    """Each metric printed on the line as `key: value` or `key=value` whose key _KEYS knows,
    as (its name, the value's text)."""
    return [(name, text) for key, text in _PAIR.findall(body)
            if (name := _KEYS.get(key.lower())) is not None]


METRIC_GROUPS = frozenset({*METRICS, "step", "skipped"})


def _extra_values(body: str, extra: Sequence[re.Pattern[str]]) -> dict[str, float]:
    """What a rule's own metric patterns read from a line (named groups are metric names)."""
    values: dict[str, float] = {}
    for pattern in extra:
        match = pattern.search(body)
        if match:
            for name, text in match.groupdict().items():
                number = _float(text) if text is not None else None
                if number is not None:
                    values.setdefault(name, number)
    return values


class _MetricWords:
    """Where the metric words of one chunk are, from a given offset on.

    Near a metric line `re` finds the next word at once. Where they are far apart (megabytes of
    NCCL warnings, a failure's flood of watchdog lines) it would stop at every l and g, about
    7 ms a megabyte; past TRIGGER_WINDOW bytes the words are looked for in a lowered copy of
    the chunk instead, made once, with plain searches.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._lowered: bytes | None = None

    def next(self, position: int, end: int | None = None) -> int:
        """Where the first word starting at `position` or later (and ending by `end`) starts;
        -1 when there is none."""
        end = len(self.data) if end is None else min(end, len(self.data))
        near = min(end, position + TRIGGER_WINDOW)
        match = _TRIGGER_BYTES.search(self.data, position, near)
        if match is not None:
            return match.start()
        if near == end:
            return -1
        if self._lowered is None:
            self._lowered = self.data.lower()
        start = max(position, near - len(b"grad_norm") + 1)  # a word across `near`
        loss = self._lowered.find(b"loss", start, end)
        # Only a grad norm before that loss comes first (the two words cannot overlap): not
        # searched to the chunk's end again at every call.
        grad = _GRAD_NORM_LOWERED.search(self._lowered, start, end if loss < 0 else loss)
        return grad.start() if grad is not None else loss


def _one_per_slot(words: _MetricWords, slot: int) -> list[int]:
    """Where the first metric word of each `slot` bytes of the chunk is, once per line."""
    found, position = [], 0
    while (start := words.next(position)) >= 0:
        found.append(start)
        line_end = words.data.find(b"\n", start)
        position = max(line_end + 1, (start // slot + 1) * slot)
    return found


def signal_matches(regex: re.Pattern[AnyStr], text: AnyStr, words: tuple[AnyStr, ...],
                   first_only: bool = False) -> list[int]:
    """Where `regex` matches, ending at one of `words`, searched only around them."""
    found = []
    for word in words:
        for position in _found(text, word):
            match = regex.search(text, max(0, position - SIGNAL_REACH), position + len(word) + 1)
            if match is not None:
                found.append(match.start())
                if first_only:
                    return found
    return found


def _found(text: AnyStr, word: AnyStr) -> Iterator[int]:
    """Where `word` occurs in `text` (a plain substring search: far quicker than a regex)."""
    position = text.find(word)
    while position >= 0:
        yield position
        position = text.find(word, position + len(word))


def _lines_of(chunk: Chunk, words: _MetricWords, start: int, end: int,
              ranks: set[int | None]) -> Iterator[int]:
    """Where the metric lines of `ranks` start between offsets `start` and `end`."""
    data, position = chunk.data, start
    while (found := words.next(position, end)) >= 0:
        line_start = data.rfind(b"\n", 0, found) + 1
        if parse_rank(chunk.line(line_start))[0] in ranks:
            yield line_start
        position = data.find(b"\n", found) + 1 or len(data)


def _occurrences(positions: Sequence[int], data: bytes, starts: Iterable[int]) -> Iterator[int]:
    """The index in `positions` of the first one on each of the lines at `starts`, if any."""
    for start in starts:
        index = bisect_left(positions, start)
        if index < len(positions) and data.find(b"\n", start, positions[index]) < 0:
            yield index


def _scale_lines(data: bytes, every: bool, read: set[int]) -> dict[int, int]:
    """Where the lines reporting a loss scale or a skipped step start, each with the number of
    lines after it that said the same and are not read: all of them (`every`), or those read
    anyway (starting at `read`), those of a skipped step, and those that say something the
    scale line before them did not (another scale, another count of skipped steps). The lines
    are told apart by comparing what follows the words, without a loop per line.
    """
    scale, skipping, skipped = word_starts(data, _SCALE_WORDS_BYTES)
    changed_counts = [skipped[i] for i in (0, *changes(data, skipped))] if skipped else []
    line_start = {position: data.rfind(b"\n", 0, position) + 1
                  for position in (*skipping, *changed_counts)}
    kept = dict.fromkeys((line_start[position] for position in skipping), 0)
    if not scale:
        return kept
    kept_at = sorted({0, *(range(1, len(scale)) if every else changes(data, scale)),
                      *_occurrences(scale, data, {*read, *line_start.values()})})
    for index, following in zip(kept_at, [*kept_at[1:], len(scale)], strict=True):
        start = data.rfind(b"\n", 0, scale[index]) + 1
        kept[start] = kept.get(start, 0) + following - index - 1
    return kept


def _word_starts(data: bytes, words: Sequence[bytes]) -> list[list[int]]:
    """Where each of `words` occurs in `data` (see `_found`)."""
    return [list(_found(data, word)) for word in words]


def _said(data: bytes, positions: Sequence[int]) -> list[bytes]:
    """What follows each position, up to _SAYS_BYTES of its line: a line ending in its scale
    says what the one before it said even when the next line's prefix names another rank."""
    return [data[position:position + _SAYS_BYTES].partition(b"\n")[0] for position in positions]


def _changes(data: bytes, positions: Sequence[int]) -> list[int]:
    """The indices i >= 1 of `positions` where what follows (`_said`) differs from at i - 1."""
    says = _said(data, positions)
    return [i for i in range(1, len(says)) if says[i] != says[i - 1]]


def _zero_loss(data: bytes, start: int) -> int:
    """Where the zero-loss signal's first match from `start` on begins, or -1."""
    match = _SIGNAL_BYTES["zero-loss"].search(data, start)
    return match.start() if match is not None else -1


# The C versions of `_named_pairs`, `_changes`, `_word_starts` and `_zero_loss`
# (trainmedic-native), where installed and built for this Python; these otherwise. The C
# `zero_loss` finds the signal in a fifth of the time Hyperscan took where every line prints a
# loss below 1 (`loss=0.5`, which Hyperscan followed to its fifth byte), so a matcher leaves the
# signal to it (NATIVE_ZERO_LOSS).
named_pairs: Callable[[str], list[tuple[str, str]]]
changes: Callable[[bytes, Sequence[int]], list[int]]
word_starts: Callable[[bytes, Sequence[bytes]], list[list[int]]]
zero_loss: Callable[[bytes, int], int]
try:
    from trainmedic_native import changes as _native_changes
    from trainmedic_native import named_pairs as _native_pairs
    from trainmedic_native import word_starts, zero_loss
except ImportError:
    named_pairs, changes, word_starts, zero_loss = _named_pairs, _changes, _word_starts, _zero_loss
    NATIVE_ZERO_LOSS = False
else:
    NATIVE_ZERO_LOSS = True

    def named_pairs(body: str) -> list[tuple[str, str]]:
        """`_named_pairs`, read in C where the line is ASCII (four times quicker)."""
        found = _native_pairs(body, _KEYS)
        return _named_pairs(body) if found is None else found

    def changes(data: bytes, positions: Sequence[int]) -> list[int]:
        """`_changes`, compared in C without a bytes object per position."""
        return _native_changes(data, positions, _SAYS_BYTES)


def _notable_lines(data: bytes, signals: frozenset[str],
                   positioned: Sequence[int] | None) -> list[int]:
    """Where the lines printing a non-finite or zero loss or norm start; `positioned` are where
    the matcher saw the POSITIONED signal's matches end (None: not looked for)."""
    found: list[int] = []
    for name in ("non-finite", "zero-loss"):
        if name not in signals:
            continue
        if name == POSITIONED and positioned is not None:
            found.extend(end - 1 for end in positioned)
        elif name in _SIGNAL_WORDS_BYTES:
            found.extend(signal_matches(_SIGNAL_BYTES[name], data, _SIGNAL_WORDS_BYTES[name]))
        else:  # zero-loss
            position = zero_loss(data, 0)
            while position >= 0:
                found.append(position)
                position = zero_loss(data, data.find(b"\n", position) + 1 or len(data))
    starts, line_end = [], -1
    for position in sorted(found):
        if position > line_end:  # a line not seen yet (a long line may hold thousands)
            starts.append(data.rfind(b"\n", 0, position) + 1)
            line_end = data.find(b"\n", position)
            line_end = len(data) if line_end < 0 else line_end
    return starts


def scan_metrics(chunk: Chunk, signals: frozenset[str], lines: LineCounter,
                 extra: Sequence[re.Pattern[str]] = (),
                 metric_lines: Sequence[int] = (),
                 positioned: Sequence[int] | None = None,
                 ) -> Iterator[tuple[Sample, int, str, int | None]]:
    """The samples of one chunk holding `signals`, each with its line's number (by `lines`),
    first MAX_LINE_CHARS characters and rank: what a scan keeps, its fold making the Line.
    `metric_lines` are where the matcher saw one of the `extra` patterns, `positioned` where
    the matches of the POSITIONED signal end (None: not looked for).

    A chunk shorter than SHORT_CHUNK_BYTES is read line by line. A longer one is cut into
    SAMPLES_PER_CHUNK equal slots and the first metric line of each is read: plenty for the
    plotted series and the trend detectors. Where a loss or norm is non-finite or zero, every
    metric line of that rank within NOTABLE_CONTEXT bytes is read too, so its samples before
    and after it are seen: a run of NaNs is told from one NaN among finite values. Lines that
    report a loss scale or a skipped step are read where they change: a new scale, a skipped
    step, an overflow (the scale detectors need every change, and Megatron-LM prints the scale
    on every step line). A rule's own metric pattern is tried only on the lines where the
    matcher saw it.
    A log of a billion steps thus costs no parse per line.
    """
    data = chunk.data
    short = len(data) < SHORT_CHUNK_BYTES
    words = _MetricWords(data)  # one lowered copy at most, whichever search needs it
    triggers = _one_per_slot(words, 1 if short else len(data) // SAMPLES_PER_CHUNK)
    notable = _notable_lines(data, signals, positioned)
    start, end, ranks = 0, 0, set[int | None]()
    for position in notable:
        if position - NOTABLE_CONTEXT > end:  # a new stretch: read the one before
            triggers.extend(_lines_of(chunk, words, start, end, ranks))
            start, ranks = max(0, position - NOTABLE_CONTEXT), set()
        end = position + NOTABLE_CONTEXT
        ranks.add(parse_rank(chunk.line(position))[0])
    triggers.extend(_lines_of(chunk, words, start, end, ranks))
    extra = [p for p in extra if metric_signal(p.pattern) in signals]
    triggers.extend(metric_lines)
    repeats: dict[int, int] = {}
    if "scale" in signals:
        repeats = _scale_lines(data, short, {data.rfind(b"\n", 0, t) + 1 for t in triggers})
        triggers.extend(repeats)
    triggers = sorted(set(triggers))
    # Each line's rank and sample, read once per chunk: an overflowing fp16 run prints the
    # same scaler line at every step, each of which is read (see `_scale_lines`).
    read: dict[str, tuple[int | None, Sample | None]] = {}
    end = -1
    for position in triggers:
        if position <= end:
            continue  # another metric word on a line already read
        start = data.rfind(b"\n", 0, position) + 1
        end = data.find(b"\n", position)
        text = decoded(data[start:end])
        known = read.get(text)
        if known is None:
            rank, body = parse_rank(text)
            known = read[text] = rank, parse_sample(body, extra)
        rank, sample = known
        if sample is None:
            continue
        if repeats.get(start):
            sample = sample._replace(repeats=repeats[start])
        yield sample, lines.at(start), text[:MAX_LINE_CHARS], rank

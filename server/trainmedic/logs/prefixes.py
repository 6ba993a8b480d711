"""Which rank printed a line: launcher prefixes first, then rank markers in the text."""

from __future__ import annotations

import re

# Launcher prefixes, outermost first; each may wrap the next (`[default0]:[rank0]: ...`).
# `global` tells whether the number is the global rank (True) or a local one.
_PREFIXES: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(r"\[rank(\d+)\]: ?"), True),                      # torchrun 2.x per-rank stderr
    (re.compile(r"\[default(\d+)\]:"), False),                    # torchrun --tee (local rank)
    (re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>: ?"), True),      # mpirun --tag-output
    (re.compile(r"[\w.-]+: \[rank(\d+)\]: ?"), True),             # host: [rankN]: (pdsh launchers)
    (re.compile(r" {0,4}(\d{1,6}): (?=\S)"), True),               # srun -l / --label
)
# Rank written in the message itself: `[Rank 3]`, `[rank 3]`, `rank=3`, `RANK 3`, `Rank 3 `.
_IN_TEXT = re.compile(r"(?<![\w.])(?:\[rank ?|rank[ =:]\s?)(\d{1,6})\b", re.IGNORECASE)
# NCCL debug lines: `host:pid:tid [N] NCCL INFO ...` (N is the local device/rank).
_NCCL = re.compile(r"^[\w.-]+:\d+:\d+ \[(\d+)\] NCCL ")
_TEXT_SPAN = 160


def split_prefix(text: str) -> tuple[int | None, int]:
    """The rank named by launcher prefixes and where the line's own text starts."""
    position = 0
    local: int | None = None
    rank: int | None = None
    matched = True
    while matched:
        matched = False
        for pattern, is_global in _PREFIXES:
            match = pattern.match(text, position)
            if match:
                value = int(match.group(1))
                if is_global:
                    rank = value
                else:
                    local = value
                position = match.end()
                matched = True
                break
    return (rank if rank is not None else local), position


def parse_rank(text: str) -> tuple[int | None, str]:
    """The line's rank (None when nothing says) and its text without launcher prefixes."""
    rank, start = split_prefix(text)
    body = text[start:]
    if rank is None:
        match = _NCCL.match(body) or _IN_TEXT.search(body, 0, _TEXT_SPAN)
        if match:
            rank = int(match.group(1))
    return rank, body


# Per-rank files: torchrun --log-dir (attempt_N/<local_rank>/stderr.log), SLURM %t, pod names.
_PATH_RANK = (
    re.compile(r"attempt_\d+[/\\](\d{1,6})[/\\](?:stdout|stderr|error)\.(?:log|json)$"),
    re.compile(r"slurm-\d+[-_.](\d{1,6})\.(?:out|err|log)$"),
    re.compile(r"(?:^|[/\\_.-])(?:rank|worker|proc|process|task)[-_]?(\d{1,6})(?:\.[a-z]{1,4})+$",
               re.IGNORECASE),
)
# Rank markers counted over whole chunks, to know which ranks exist even if they stayed quiet.
# Each pattern starts with a literal, which the regex engine finds fast.
_CENSUS_MARKERS = re.compile(r"\[(?:rank ?|default|Rank )(\d{1,6})\]")
_CENSUS_PREFIXES = re.compile(r"\n(?:\[\d{1,6},(\d{1,6})\]<std| {0,4}(\d{1,6}): (?=\S))")


def rank_of_path(path: str) -> int | None:
    """The rank a per-rank log file belongs to, from its name; None for a shared log."""
    for pattern in _PATH_RANK:
        match = pattern.search(path)
        if match:
            return int(match.group(1))
    return None


def census(text: str) -> set[int]:
    """Every rank named by a rank marker anywhere in `text`, or by a launcher's line prefix."""
    found = set(_CENSUS_MARKERS.findall(text))
    found.update(a or b for a, b in set(_CENSUS_PREFIXES.findall("\n" + text)))
    return {int(rank) for rank in found}

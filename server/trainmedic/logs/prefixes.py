"""Which rank printed a line: launcher prefixes first, then rank markers in the text.

Launchers are read from PREFIXES, one line each; the rank census of a chunk is built from the
same table, so the two never disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Prefix:
    """A launcher's line prefix: `pattern` matches it at the start of a line (or right after an
    outer prefix) with the rank as its one group; `example` is a real line it must read."""

    launcher: str
    pattern: str
    is_global: bool  # the number is the global rank, not a local one
    rank: int  # the rank `example` names
    example: str


# Outermost first; each may wrap the next (`[default0]:[rank0]: ...`).
PREFIXES = (
    Prefix("torchrun 2.x per-rank stderr", r"\[rank(\d{1,6})\]: ?", True, 3,
           "[rank3]: Traceback (most recent call last):"),
    Prefix("torchrun --tee (local rank)", r"\[default(\d{1,6})\]:", False, 1,
           "[default1]:[W socket.cpp:464] [c10d] The server socket has failed to bind."),
    Prefix("mpirun --tag-output", r"\[\d{1,6},(\d{1,6})\]<std(?:out|err)>: ?", True, 2,
           "[1,2]<stderr>:RuntimeError: CUDA error: out of memory"),
    Prefix("pdsh-style launchers (host: [rankN]:)", r"[\w.-]{1,255}: \[rank(\d{1,6})\]: ?", True, 5,
           "worker-1: [rank5]: torch.OutOfMemoryError: CUDA out of memory."),
    Prefix("srun -l / --label", r" {0,4}(\d{1,6}): (?=\S)", True, 7,
           "7: Traceback (most recent call last):"),
)
_PREFIXES = tuple((re.compile(p.pattern), p.is_global) for p in PREFIXES)
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
_CENSUS_PREFIXES = re.compile("\n(?:" + "|".join(p.pattern for p in PREFIXES) + ")")


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
    for groups in set(_CENSUS_PREFIXES.findall("\n" + text)):
        found.add(next(rank for rank in groups if rank))
    return {int(rank) for rank in found}

"""Which rank printed a line: launcher prefixes first, then rank markers in the text.

Launchers are read from PREFIXES, one line each; the rank census of a chunk is built from the
same table, so the two never disagree. FRAMES are what the tools that collect a job's output
put before every line (a container's name, the time it was read): no rank, but a launcher's
prefix may follow one. RELAYS are the lines with which a launcher hands on another process's
error: the traceback after one is the named rank's.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple


class Prefix(NamedTuple):
    """A launcher's line prefix: `pattern` matches it at the start of a line (or right after an
    outer prefix) with the rank as its one group; `example` is a real line it must read. A
    pattern that only looks ahead reads the rank and leaves the text whole (sglang's rank sits
    in the bracket that also holds the line's time)."""

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
    Prefix("mpirun --tag-output on SageMaker (rank and host)",
           r"\[\d{1,6},mpirank:(\d{1,6}),[\w.-]{1,255}\]<std(?:out|err)>: ?", True, 3,
           "[1,mpirank:3,algo-1]<stderr>:INFO:root:Reducer buckets have been rebuilt in this "
           "iteration."),
    Prefix("pdsh-style launchers (host: [rankN]:)", r"[\w.-]{1,255}: \[rank(\d{1,6})\]: ?", True, 5,
           "worker-1: [rank5]: torch.OutOfMemoryError: CUDA out of memory."),
    Prefix("srun -l / --label", r" {0,4}(\d{1,6}): (?=\S)", True, 7,
           "7: Traceback (most recent call last):"),
    Prefix("Lightning / NeMo rank-prefixed messages", r"\[rank: (\d{1,6})\] ", True, 1,
           "[rank: 1] Seed set to 42"),
    Prefix("vLLM worker with its rank", r"\(VllmWorker rank=(\d{1,6}) pid=\d{1,9}\) ", True, 5,
           "(VllmWorker rank=5 pid=50999) ERROR 07-07 15:19:48 [multiproc_executor.py:492] "
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB."),
    # vLLM's tensor-parallel workers; beside data-parallel or pipeline ranks (Worker_PP1_TP0)
    # the TP index is the rank within its group, so it is read as a local rank.
    Prefix("vLLM tensor-parallel worker", r"\(VllmWorker TP(\d{1,4}) pid=\d{1,9}\) ", False, 2,
           "(VllmWorker TP2 pid=47571) WARNING 09-09 15:47:25 [fused_moe.py:727] Using default "
           "MoE config. Performance might be sub-optimal!"),
    Prefix("vLLM worker in a DP/PP/TP/EP grid (its TP index)",
           r"\(Worker_(?:DP\d{1,4}_)?(?:PP\d{1,4}_)?TP(\d{1,4})(?:_EP\d{1,4})? pid=\d{1,9}\) ",
           False, 0, "(Worker_PP1_TP0 pid=3954408) ERROR 02-27 00:29:48 "
           "[multiproc_executor.py:863] torch.distributed.DistBackendError: NCCL error in:"),
    Prefix("vLLM data-parallel engine core", r"\(EngineCore_DP(\d{1,4}) pid=\d{1,9}\) ", False,
           1, "(EngineCore_DP1 pid=1250) INFO 12-29 13:13:22 [shm_broadcast.py:542] No available "
           "shared memory broadcast block found in 60 seconds."),
    Prefix("sglang scheduler (TP index; DP and PP before it)",
           r"(?=\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: DP\d{1,4})?(?: PP\d{1,4})? TP(\d{1,4})"
           r"(?: EP\d{1,4})?\] )", False, 3,
           "[2026-03-11 12:26:04 DP1 TP3] Scheduler hit an exception: Traceback (most recent "
           "call last):"),
)


class Frame(NamedTuple):
    """What a collecting tool puts before each line it hands on; `example` is a line in the
    tool's shape with torch's `[rank3]: ` behind the frame, which the tests read."""

    tool: str
    pattern: str
    example: str


FRAMES = (
    # RFC 3339 with nanoseconds (kubectl and docker) or 100 ns (GitHub Actions' raw logs); in
    # the files containerd and CRI-O keep under /var/log/pods (the Kubernetes CRI logging
    # format) the stream follows, and F for a full line or P for part of a longer one.
    Frame("kubectl logs --timestamps, docker logs -t, GitHub Actions, a node's container logs",
          r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) "
          r"(?:std(?:out|err) [FP] )?",
          "2024-05-12T15:51:49.420123456Z [rank3]: Traceback (most recent call last):"),
    Frame("kubectl logs --prefix", r"\[pod/[\w.-]{1,253}/[\w.-]{1,63}\] ",
          "[pod/trainer-worker-0/pytorch] [rank3]: Traceback (most recent call last):"),
    Frame("docker compose logs (service and replica, padded to the longest)",
          r"[\w.-]{1,64}[-_]\d{1,4} {1,64}\| ",
          "trainer-1  | [rank3]: Traceback (most recent call last):"),
    Frame("journalctl (its default short format)",
          r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,255} [\w.@-]{1,64}(?:\[\d{1,10}\])?: ",
          "May 12 15:51:49 gpu-node-3 torchrun[4121]: [rank3]: Traceback (most recent call last):"),
)
_FRAME = re.compile("|".join(f"(?:{f.pattern})" for f in FRAMES))  # a pdsh host, a census
# All of them in one pattern, tried in order; each has one group (a frame an empty one), so the
# matched group's number tells which it is (one call instead of one per prefix, for every line).
_ANY_PREFIX = re.compile("|".join([*(f"(?:{p.pattern})" for p in PREFIXES),
                                   *(f"(?:{f.pattern})()" for f in FRAMES)]))
# What a paste puts before each line it quotes or indents: GitHub's "Quote reply" and e-mail
# put "> ", a Markdown code block blanks. A quote goes like a frame; blanks go only before a
# bracketed prefix (elsewhere they are the text's own: a traceback's frames, srun's padded
# labels). Looked for only where a line starts with one: a line's prefixes are read often.
_PASTE_STARTS = (">", " ", "\t")
_PASTE = re.compile(r"(?:> ?){1,4}(?=\S)|[ \t]{1,8}(?=\[)")
_IS_GLOBAL: tuple[bool | None, ...] = (*(p.is_global for p in PREFIXES), *(None for _ in FRAMES))
# Rank written in the message itself: `[Rank 3]`, `[rank 3]`, `rank=3`, `RANK 3`, `Rank 3 `,
# `[Worker:3]`.
_IN_TEXT = re.compile(r"(?<![\w.])(?:\[rank ?|rank[ =:]\s?|\[worker:)(\d{1,6})\b",
                      re.IGNORECASE)
# NCCL debug lines: `host:pid:tid [N] NCCL INFO ...` (N is the local device/rank).
_NCCL = re.compile(r"^[\w.-]+:\d+:\d+ \[(\d+)\] NCCL ")
_TEXT_SPAN = 160


def _prefixes(text: str) -> Iterator[tuple[int | None, bool, int]]:
    """The launcher prefixes and frames a line starts with, outermost first: each one's number
    (a frame's or a quote's: None), whether that is the global rank, and where it ends."""
    position = 0
    if text[:1] in _PASTE_STARTS and (pasted := _PASTE.match(text)) is not None:
        if text[0] == ">":
            yield None, False, pasted.end()
            position = pasted.end()
        elif _ANY_PREFIX.match(text, pasted.end()) is not None:
            position = pasted.end()
    while (match := _ANY_PREFIX.match(text, position)) is not None:
        group = match.lastindex or 0
        is_global = _IS_GLOBAL[group - 1]
        if is_global is None:
            yield None, False, match.end()
        else:
            yield int(match.group(group)), is_global, match.end()
        if match.end() == position:
            return  # a look-ahead reads the rank and ends the prefixes
        position = match.end()


def split_prefix(text: str) -> tuple[int | None, int]:
    """The rank named by launcher prefixes and where the line's own text starts."""
    start, local, rank = 0, None, None
    for value, is_global, end in _prefixes(text):
        if is_global:
            rank = value
        elif value is not None:
            local = value
        start = end
    return (rank if rank is not None else local), start


_HOST_PREFIX = re.compile(
    r"(?![\w.]*(?:Error|Exception|Warning):)([\w.-]{1,255}): \[rank\d{1,6}\]:")


def host_prefix(text: str) -> str | None:
    """The host a pdsh-style prefix puts before a rank's line (`worker-1: [rank5]: ...`),
    behind a frame or not; an exception's name before a rank marker is none."""
    frame = _FRAME.match(text)
    match = _HOST_PREFIX.match(text, frame.end() if frame else 0)
    return match.group(1) if match else None


def local_only_rank(text: str) -> int | None:
    """The local rank a line's launcher prefixes name when none names its global rank
    (torchrun's `[default1]:` alone): on several nodes, that number is not the rank."""
    local = None
    for value, is_global, _end in _prefixes(text):
        if is_global:
            return None
        if value is not None:
            local = value
    return local


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
# Each also compressed (see inputs.COMPRESSED_SUFFIXES).
_COMPRESSED = r"(?:\.gz|\.bz2|\.xz)?$"
_PATH_RANK = (
    re.compile(r"attempt_\d+[/\\](\d{1,6})[/\\](?:stdout|stderr|error)\.(?:log|json)"
               + _COMPRESSED),
    re.compile(r"slurm-\d+[-_.](\d{1,6})\.(?:out|err|log)" + _COMPRESSED),
    re.compile(r"(?:^|[/\\_.-])(?:rank|worker|proc|process|task)[-_]?(\d{1,6})(?:\.[a-z]{1,4})+"
               + _COMPRESSED, re.IGNORECASE),
)
# Rank markers counted over whole chunks, to know which ranks exist even if they stayed quiet.
# Each pattern starts with a literal, which the regex engine finds fast.
_CENSUS_MARKERS = re.compile(r"\[(?:rank ?|default|Rank |Worker:)(\d{1,6})\]")
# Then the launchers' prefixes at line starts, but for those that open with a marker, which
# names their rank already: torchrun's `[default3]:` and `[rank3]:`, on every line of a torchrun
# log, found twice cost a third of its census. No other prefix, frame or paste reads a line
# that one of them opens, so the prefixes found are the same (a test compares).
_MARKED = tuple(p for p in PREFIXES if _CENSUS_MARKERS.match(p.example))
_CENSUS_PREFIXES = re.compile(
    f"\n(?:{_PASTE.pattern})?(?:{_FRAME.pattern})?(?:"
    + "|".join(p.pattern for p in PREFIXES if p not in _MARKED) + ")")


@lru_cache(maxsize=1 << 10)  # asked of every chunk and every failure line, of a few paths
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
    # Each prefix has one group, so a match's groups joined are its rank: no loop in Python.
    found.update(map("".join, _CENSUS_PREFIXES.findall("\n" + text)))
    return set(map(int, found))


class Relay(NamedTuple):
    """A launcher's line that hands on another process's error (`pattern` found anywhere in
    the line, the rank its one group); `example` is a real line it must read."""

    launcher: str
    pattern: str
    rank: int
    example: str


RELAYS = (
    Relay("torch.multiprocessing.spawn (the parent re-raises a child's error)",
          r"-- Process (\d{1,6}) terminated with the following error:", 3,
          "-- Process 3 terminated with the following error:"),
    Relay("Ray Train (one rank's error snippet)", r"\[Rank (\d{1,6}) Error Snippet\]:", 1,
          "[Rank 1 Error Snippet]:"),
)
_RELAYS = tuple(re.compile(r.pattern) for r in RELAYS)


def relayed_rank(body: str) -> int | None:
    """The rank whose error the lines after this one relay, if this line introduces one."""
    for pattern in _RELAYS:
        match = pattern.search(body, 0, _TEXT_SPAN)
        if match:
            return int(match.group(1))
    return None

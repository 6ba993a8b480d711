"""Synthetic multi-rank job logs with a known initiating rank, in every supported layout.

The message texts are real (copied from runs of torch 2.13.0 and from public issue threads);
what is synthetic is the job: N ranks printing step lines, one rank failing with a root cause,
the others failing as collateral (lost peer, collective timeout) and the launcher's SIGTERMs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT_FAILURE = [
    "Traceback (most recent call last):",
    '  File "/home/user/proj/train.py", line 321, in <module>',
    "    main()",
    '  File "/home/user/proj/train.py", line 236, in amp_loop',
    "    raise FloatingPointError(",
    "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. "
    "Try lowering the learning rate, using gradient clipping or increasing the batch size.",
]
LOST_PEER = [
    "Traceback (most recent call last):",
    '  File "/home/user/proj/train.py", line 130, in sync_metrics',
    "    dist.all_reduce(t, op=dist.ReduceOp.SUM)",
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:60131. This is typically caused by a remote worker "
    "crashing. Check the logs of the remote worker before reporting an error. GLHF! 🏖️",
]


def timeout(rank: int, seq: int) -> list[str]:
    return [
        f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=1800000) ran for 1800648 milliseconds before timing out.",
    ]


PREFIXES: dict[str, Callable[[int], str]] = {
    "torchrun-tee": lambda r: f"[default{r}]:[rank{r}]: ",
    "torchrun": lambda r: f"[rank{r}]: ",
    "srun": lambda r: f"{r}: ",
    "mpirun": lambda r: f"[1,{r}]<stderr>:",
    "pdsh": lambda r: f"node{r // 8:03d}: [rank{r}]: ",
}
LAYOUTS: dict[str, Callable[[int], str]] = {
    "torchrun-log-dir": lambda r: f"job/attempt_0/{r}/stderr.log",
    "slurm": lambda r: f"slurm-1234-{r}.out",
    "pods": lambda r: f"job-worker-{r}.log",
}
START = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Job:
    ranks: int
    failing: int
    hang: bool = False  # the failing rank hangs silently instead of raising
    steps: int = 3
    seed: int = 0


def _stamp(seconds: float) -> str:
    moment = START + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"


def rank_events(job: Job) -> list[tuple[float, int, str]]:
    """(seconds, rank, text) for every rank: steps, then the failure and its collateral."""
    rng = random.Random(job.seed)
    events = []
    for rank in range(job.ranks):
        for step in range(1, job.steps + 1):
            loss = 2.0 - 0.1 * step + rng.random() / 10
            events.append((step + rng.random() / 10, rank,
                           f"INFO train: step {step} loss={loss:.4f}"))
    fail_at = job.steps + 1.0
    if not job.hang:
        events += [(fail_at, job.failing, text) for text in ROOT_FAILURE]
    for rank in range(job.ranks):
        if rank == job.failing:
            continue
        at = fail_at + 0.5 + rng.random() * (30.0 if job.hang else 2.0)
        lines = timeout(rank, 40) if job.hang else LOST_PEER
        events += [(at, rank, text) for text in lines]
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def launcher_lines(job: Job) -> list[str]:
    """torchrun's agent: SIGTERM to the survivors, then its failure summary."""
    pid = {rank: 1000 + rank for rank in range(job.ranks)}
    first = 0 if job.failing != 0 else 1  # the agent notices an arbitrary collateral exit
    out = [f"W0501 12:00:40.000000 999 torch/distributed/elastic/multiprocessing/api.py:1028] "
           f"Sending process {pid[r]} closing signal SIGTERM"
           for r in range(job.ranks) if r != first]
    out.append(f"E0501 12:00:41.000000 999 torch/distributed/elastic/multiprocessing/api.py:1002]"
               f" failed (exitcode: 1) local_rank: {first} (pid: {pid[first]}) of binary: "
               "/opt/venv/bin/python3")
    return out


def interleaved(job: Job, prefix: str) -> str:
    """One stream, every line prefixed with its rank the way `prefix`'s launcher does it."""
    make = PREFIXES[prefix]
    lines = [make(rank) + text for _, rank, text in rank_events(job)]
    return "\n".join(lines + launcher_lines(job)) + "\n"


def per_rank_files(job: Job, layout: str, directory: Path) -> list[Path]:
    """One timestamped file per rank, named the way `layout` names them."""
    by_rank: dict[int, list[str]] = {rank: [] for rank in range(job.ranks)}
    for seconds, rank, text in rank_events(job):
        by_rank[rank].append(f"{_stamp(seconds)} {text}")
    paths = []
    for rank, lines in by_rank.items():
        path = directory / LAYOUTS[layout](rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", "utf-8")
        paths.append(path)
    return paths

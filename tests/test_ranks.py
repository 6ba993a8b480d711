"""Rank prefixes of the launchers and rank markers in message text."""

from __future__ import annotations

import pytest

from trainmedic.logs.prefixes import PREFIXES, Prefix, census, parse_rank


@pytest.mark.parametrize(
    ("text", "rank", "body"),
    [
        ("[rank3]: Traceback (most recent call last):", 3, "Traceback (most recent call last):"),
        ("[default1]:[rank 1] step 2/6 loss=1.5", 1, "[rank 1] step 2/6 loss=1.5"),
        ("[default0]:[rank5]: RuntimeError: x", 5, "RuntimeError: x"),
        ("12: RuntimeError: CUDA error", 12, "RuntimeError: CUDA error"),
        ("[1,7]<stderr>:Traceback (most recent call last):", 7,
         "Traceback (most recent call last):"),
        ("worker-3: [rank9]: OSError: boom", 9, "OSError: boom"),
        ("2026-11-29 18:16:25,461 INFO [rank1] train: initialized", 1,
         "2026-11-29 18:16:25,461 INFO [rank1] train: initialized"),
        ("[Rank 4] Collecting rollouts", 4, "[Rank 4] Collecting rollouts"),
        ("node1:2345:2400 [6] NCCL INFO Bootstrap", 6, "node1:2345:2400 [6] NCCL INFO Bootstrap"),
        ("OVERFLOW! Rank 0 Skipping step.", 0, "OVERFLOW! Rank 0 Skipping step."),
    ],
)
def test_rank_is_found(text: str, rank: int, body: str) -> None:
    assert parse_rank(text) == (rank, body)


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: [/__w/pytorch/third_party/gloo/pair.cc:553] Connection closed by peer",
        "  File \"train.py\", line 12, in <module>",
        "local_rank: 1 (pid: 2020) of binary: /opt/venv/bin/python3",
        "{'loss': 1.89, 'grad_norm': 0.37, 'epoch': 0.05}",
        "W1129 18:17:15.880000 24658 torch/distributed/run.py:874] ****",
    ],
)
def test_no_rank_is_invented(text: str) -> None:
    assert parse_rank(text)[0] is None


@pytest.mark.parametrize("prefix", PREFIXES, ids=lambda p: p.launcher)
def test_every_registered_prefix_reads_its_example(prefix: Prefix) -> None:
    rank, body = parse_rank(prefix.example)
    assert rank == prefix.rank
    assert prefix.example.endswith(body)
    assert len(body) < len(prefix.example)  # the prefix is cut
    assert census("some output\n" + prefix.example) >= {prefix.rank}


def test_census_reads_prefixes_only_at_line_starts() -> None:
    assert census("loss went to 7: inf at step 3\n") == set()

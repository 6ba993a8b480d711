"""Rank prefixes of the launchers and rank markers in message text."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trainmedic.logs.prefixes import (
    _CENSUS_MARKERS,
    _FRAME,
    _PASTE,
    FRAMES,
    PREFIXES,
    RELAYS,
    Frame,
    Prefix,
    Relay,
    census,
    host_prefix,
    local_only_rank,
    parse_rank,
    rank_of_path,
    relayed_rank,
)


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
        # Ray Train worker prefix (no rank) before the script's own "[Worker:0]" (corpus
        # more/distributed/036.log, ray-project/ray#31828)
        ("(RayTrainWorker pid=1942, ip=100.97.252.234) 17-Jan-23 17:21:19 [Worker:0] [INFO] "
         "Returning from train func!!", 0,
         "(RayTrainWorker pid=1942, ip=100.97.252.234) 17-Jan-23 17:21:19 [Worker:0] [INFO] "
         "Returning from train func!!"),
        # a quoted paste: the quote is a frame, the launcher's prefix behind it is read
        ("> [rank: 7] Seed set to 1054328241", 7, "Seed set to 1054328241"),
        ("> > [1,3]<stderr>:RuntimeError: x", 3, "RuntimeError: x"),
        # a node's container log file (the Kubernetes CRI format: time, stream, F or P)
        ("2024-05-12T15:51:49.420123456Z stderr F [rank3]: x", 3, "x"),
        ("2024-05-12T15:51:49.420123456Z stdout P [default2]:step 1", 2, "step 1"),
        # an indented paste (a Markdown code block): the blanks go with the prefix
        ("    [1,1]<stderr>:RuntimeError: x", 1, "RuntimeError: x"),
        ('\t[rank2]:   File "train.py", line 3', 2, '  File "train.py", line 3'),
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
        # DeepSpeed's launcher prints the last local rank's command whatever rank failed
        # (corpus more/distributed/009.log, deepspeedai/DeepSpeedExamples#626)
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/venv/bin/python3.10'"
        ", '-u', 'trainCLM.py', '--local_rank=1', '--deepspeed'] exits with return code = -11",
        "(VllmWorkerProcess pid=1791036) INFO 11-12 10:04:49 multiproc_worker_utils.py:215]",
        "DataLoader worker (pid 21) is killed by signal: Killed.",
        "          12: 'label'",  # a listing indented deeper than srun pads its labels
    ],
)
def test_no_rank_is_invented(text: str) -> None:
    assert parse_rank(text)[0] is None


@pytest.mark.parametrize("prefix", PREFIXES, ids=lambda p: p.launcher)
def test_every_registered_prefix_reads_its_example(prefix: Prefix) -> None:
    rank, body = parse_rank(prefix.example)
    assert rank == prefix.rank
    assert prefix.example.endswith(body)
    if prefix.pattern.startswith("(?="):
        assert body == prefix.example  # a look-ahead leaves the line whole (its time too)
    else:
        assert len(body) < len(prefix.example)  # the prefix is cut
    assert census("some output\n" + prefix.example) >= {prefix.rank}
    assert re.compile(prefix.pattern).groups == 1  # its rank: what parse_rank and census read


@pytest.mark.parametrize("prefix", [p for p in PREFIXES if not p.pattern.startswith("(?=")],
                         ids=lambda p: p.launcher)
def test_every_prefix_wraps_a_torch_rank_prefix(prefix: Prefix) -> None:
    """torch's own "[rankN]: " after a launcher's prefix is still read (the global rank); a
    look-ahead prefix is left out: it reads its rank and ends the prefixes."""
    head = prefix.example[: len(prefix.example) - len(parse_rank(prefix.example)[1])]
    assert parse_rank(head + "[rank9]: RuntimeError: x") == (9, "RuntimeError: x")


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.tool)
def test_a_launcher_prefix_is_read_behind_every_frame(frame: Frame) -> None:
    """A frame's example holds `[rank3]: ` after it: the rank, the body without both, the
    census and a pdsh host behind the frame are all read as without it."""
    head = frame.example[: frame.example.index("[rank3]: ")]
    assert parse_rank(frame.example) == (3, "Traceback (most recent call last):")
    assert census("some output\n" + frame.example) == {3}
    assert parse_rank(head + "[default1]:RuntimeError: x") == (1, "RuntimeError: x")
    assert local_only_rank(head + "[default1]:RuntimeError: x") == 1
    assert local_only_rank(frame.example) is None
    assert host_prefix(head + "worker-1: [rank5]: RuntimeError: x") == "worker-1"
    # a frame alone names no rank; the line's own text starts after it
    assert parse_rank(head + "RuntimeError: CUDA error: out of memory") == (
        None, "RuntimeError: CUDA error: out of memory")
    assert parse_rank(head + "node1:2345:2400 [6] NCCL INFO Bootstrap")[0] == 6


@pytest.mark.parametrize("text", [
    "2026-11-29 18:16:25,461 INFO [rank1] train: initialized",  # a logger's own time, no frame
    "| epoch-1 | loss 2.31 |",  # a markdown table's row
    "[pod/trainer-0] [rank3]: boom",  # not kubectl's pod/name/container
])
def test_look_alike_frames_are_left_in_the_text(text: str) -> None:
    assert parse_rank(text)[1] == text


@pytest.mark.parametrize("relay", RELAYS, ids=lambda r: r.launcher)
def test_every_relay_reads_its_example(relay: Relay) -> None:
    assert relayed_rank(relay.example) == relay.rank
    assert relayed_rank("E       " + relay.example) == relay.rank  # behind pytest's prefix


@pytest.mark.parametrize("text", [
    "[Rank 0,3 Error Snippet]:",  # several ranks' error: not one rank's
    "Process 2 terminated with exit code 10, terminating remaining processes.",
    "Traceback (most recent call last):",
])
def test_no_relay_is_invented(text: str) -> None:
    assert relayed_rank(text) is None


# Every prefix at a line start: what the census read before it left out those that open with
# a marker.
EVERY_PREFIX = re.compile(f"\n(?:{_PASTE.pattern})?(?:{_FRAME.pattern})?(?:"
                          + "|".join(p.pattern for p in PREFIXES) + ")")
# What lines start with: each prefix's and frame's head, pastes, their pieces and look-alikes.
HEADS = [*(p.example[: len(p.example) - len(parse_rank(p.example)[1])] or p.example[:30]
           for p in PREFIXES),
         *(f.example[: f.example.index("[rank3]")] for f in FRAMES),
         "> ", "  ", "\t", "[rank", "[rank ", "[default", "[Rank ", "[Worker:", "]", "]:", ": ",
         "1", "22", "x", "worker-1", "7: ", " 7: ", "[rank: ", "(", "\n"]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(HEADS), max_size=30))
@example(["22", ": ", "[rank", "1", "]:"])  # pdsh's prefix, not srun's label: rank 1 alone
def test_the_census_counts_what_every_prefix_and_marker_name(pieces: list[str]) -> None:
    text = "".join(pieces)
    prefixes = map("".join, EVERY_PREFIX.findall("\n" + text))
    assert census(text) == set(map(int, {*_CENSUS_MARKERS.findall(text), *prefixes}))


def test_census_reads_prefixes_only_at_line_starts() -> None:
    assert census("loss went to 7: inf at step 3\n") == set()


def test_pdsh_prefix_names_the_host() -> None:
    assert host_prefix("worker-1: [rank5]: torch.OutOfMemoryError: CUDA out of memory.") == \
        "worker-1"
    # an exception's own "Name: " is no host, nor a pdsh prefix without a rank after it
    assert host_prefix("RuntimeError: [rank5]: boom") is None
    assert host_prefix("RuntimeError: NCCL error") is None
    assert host_prefix("rdma-test-gpu-worker-1: Traceback (most recent call last):") is None


@pytest.mark.parametrize(
    ("text", "local"),
    [
        ("[default1]:RuntimeError: CUDA error: an illegal memory access was encountered", 1),
        ("(VllmWorker TP2 pid=47571) WARNING 09-09 15:47:25 [fused_moe.py:727] x", 2),
        ("[default0]:[rank5]: RuntimeError: x", None),  # the global rank is named too
        ("[rank3]: Traceback (most recent call last):", None),
        ("RuntimeError: CUDA error: out of memory", None),
    ],
)
def test_local_only_rank(text: str, local: int | None) -> None:
    assert local_only_rank(text) == local


@pytest.mark.parametrize(("path", "rank"), [
    ("logs/attempt_0/3/stderr.log", 3), ("logs/attempt_0/3/stderr.log.gz", 3),
    ("slurm-42-7.out.xz", 7), ("run/rank5.log.bz2", 5), ("worker-2.txt", 2),
    ("run.log.gz", None), ("slurm-42-7.out.zip", None),
])
def test_a_per_rank_file_names_its_rank_compressed_or_not(path: str, rank: int | None) -> None:
    assert rank_of_path(path) == rank

"""The initiating rank on synthetic jobs of 8 to 1,024 ranks, in every prefix and layout."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from synthetic import LAYOUTS, PREFIXES, Job, interleaved, per_rank_files

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose, diagnose_text
from trainmedic.model import RankStatus

CATALOGUE = bundled()
SIZES = (8, 64, 1024)


def failing_rank(ranks: int) -> int:
    return (ranks * 5) // 8 + 1  # neither 0 nor the last: a rank no baseline guesses by luck


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("ranks", SIZES)
def test_interleaved_root_cause(prefix: str, ranks: int) -> None:
    job = Job(ranks, failing_rank(ranks))
    diagnosis = diagnose_text(interleaved(job, prefix), CATALOGUE, "job.log")
    assert diagnosis.findings[0].rule_id == "amp-loss-scale"
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason
    assert diagnosis.ranks[job.failing].status is RankStatus.FAILED_FIRST
    collateral = [r for r, rep in diagnosis.ranks.items()
                  if rep.status is RankStatus.FAILED_COLLATERAL]
    assert len(collateral) == ranks - 1


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("ranks", SIZES)
def test_interleaved_hang_names_the_missing_rank(prefix: str, ranks: int) -> None:
    job = Job(ranks, failing_rank(ranks), hang=True)
    diagnosis = diagnose_text(interleaved(job, prefix), CATALOGUE, "job.log")
    (root,) = diagnosis.root_causes
    assert (root.rule_id, root.rank) == ("collective-hang", job.failing)
    assert "nccl-timeout" in {f.rule_id for f in diagnosis.findings}
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason
    assert diagnosis.unexplained == ()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("ranks", SIZES)
def test_per_rank_files(layout: str, ranks: int, tmp_path: Path) -> None:
    job = Job(ranks, failing_rank(ranks), seed=ranks)
    paths = per_rank_files(job, layout, tmp_path)
    streams = [(str(p), io.BytesIO(p.read_bytes())) for p in reversed(paths)]
    diagnosis = diagnose(streams, CATALOGUE)
    assert diagnosis.initiating_rank == job.failing, diagnosis.reason


def test_cli_on_a_1024_rank_log_directory(tmp_path: Path) -> None:
    job = Job(1024, 700, seed=7)
    per_rank_files(job, "torchrun-log-dir", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "trainmedic", "diagnose", str(tmp_path), "--format", "json"],
        capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(done.stdout)
    assert result["initiating_rank"] == 700
    assert result["ranks"]["700"]["status"] == "failed-first"
    assert len(result["ranks"]) == 1024


def test_mixed_runs_and_clashing_ranks_warn_but_answer(tmp_path: Path) -> None:
    per_rank_files(Job(4, 2), "torchrun-log-dir", tmp_path / "run-a")
    per_rank_files(Job(4, 1, seed=3), "torchrun-log-dir", tmp_path / "run-b")
    elf = b"\x7fELF\2\1\1\0\0\0"  # an executable's header: NUL bytes, no text encoding's BOM
    (tmp_path / "run-b" / "job" / "attempt_0" / "3" / "stdout.log").write_bytes(elf)
    done = subprocess.run(
        [sys.executable, "-m", "trainmedic", "diagnose", str(tmp_path), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "logs of 2 runs or restart attempts are mixed here" in done.stderr
    assert "rank 0, 1, 2, 3 appears in several files" in done.stderr
    assert "stdout.log: skipped (binary file)" in done.stderr
    assert json.loads(done.stdout)["diagnoses"][0]["rule_id"] == "amp-loss-scale"


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_real_torchrun_log_dir_with_error_files(capsys: pytest.CaptureFixture[str]) -> None:
    # torch 2.13.0, `torchrun --nproc-per-node 3 --log-dir ... --redirects 3` with @record;
    # rank 1 fed a bfloat16 batch into a float Linear, ranks 0 and 2 lost their peer.
    from trainmedic.cli import main

    assert main(["diagnose", str(FIXTURES / "torchrun-logdir"), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["initiating_rank"] == 1
    first = result["diagnoses"][0]
    assert first["rule_id"] == "dtype-mismatch"
    assert any(e["path"].endswith("attempt_0/1/error.json") for e in first["evidence"])
    assert {r: v["status"] for r, v in result["ranks"].items()} == {
        "0": "failed-collateral", "1": "failed-first", "2": "failed-collateral"}


def watchdog(rank: int, seq: int, op: str = "ALLREDUCE") -> str:
    """A ProcessGroupNCCL watchdog timeout line (format of shared corpus real-a/005.log)."""
    return (f"[rank{rank}]:[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=1800000) ran for 1800648 milliseconds before timing out.\n")


def started(ranks: int) -> str:
    return "".join(f"2026-11-29 18:16:25,461 INFO [rank{r}] train: initialized process group: "
                   f"world_size={ranks}\n" for r in range(ranks))


def test_the_rank_behind_in_sequence_is_the_root_cause_of_a_hang() -> None:
    text = watchdog(0, 881) + watchdog(1, 881) + watchdog(2, 880, "BROADCAST") + watchdog(3, 881)
    diagnosis = diagnose_text(text, CATALOGUE, "job.log")
    root = diagnosis.findings[0]
    assert (root.rule_id, root.rank, root.role.value) == ("collective-hang", 2, "root")
    assert "SeqNum=880" in root.first.text  # the line that settles it comes first
    assert "SeqNum=881" in root.evidence[1].text
    assert diagnosis.initiating_rank == 2
    assert "collective sequence number 880" in diagnosis.reason
    assert {f.rule_id for f in diagnosis.findings} == {"collective-hang", "nccl-timeout"}


def test_the_rank_missing_from_the_timeouts_and_terminated_is_the_root_cause() -> None:
    # torch 2.13.0 CPU run (shared corpus torchrun/005.log): rank 2 hangs, torchrun SIGTERMs it
    gloo = ("[rank{}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
            "unbound_buffer.cc:78] Timed out waiting 20000ms for recv operation to complete\n")
    launcher = ("W1129 18:16:52.074000 23057 torch/distributed/elastic/multiprocessing/api.py:1028]"
                " Sending process 23089 closing signal SIGTERM\n") + """\
[2]:
  time      : 2026-11-29_18:16:52
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : -15 (pid: 23089)  (SIGTERM)
"""
    diagnosis = diagnose_text(started(3) + gloo.format(1) + gloo.format(0) + launcher,
                              CATALOGUE, "job.log")
    (root,) = diagnosis.root_causes
    assert (root.rule_id, root.rank) == ("collective-hang", 2)
    assert root.first.text.strip().startswith("exitcode  : -15 (pid: 23089)")
    assert "was terminated by the launcher" in diagnosis.reason
    assert diagnosis.ranks[2].status is RankStatus.FAILED_FIRST
    assert diagnosis.unexplained == ()


def test_a_waited_for_rank_that_raised_is_no_hang() -> None:
    raised = ('[rank2]: Traceback (most recent call last):\n'
              '[rank2]:   File "/home/user/proj/train.py", line 205, in train_loop\n'
              "[rank2]: KeyError: 'labels'\n")
    diagnosis = diagnose_text(started(3) + raised + watchdog(0, 12) + watchdog(1, 12),
                              CATALOGUE, "job.log")
    assert diagnosis.root_causes == ()
    assert [(u.exception, u.rank) for u in diagnosis.unexplained] == [("KeyError", 2)]
    assert diagnosis.initiating_rank == 2
    assert "itself failed with KeyError" in diagnosis.reason


def test_no_hang_without_a_single_rank_to_blame_or_beside_a_root_cause() -> None:
    alike = diagnose_text(watchdog(0, 5) + watchdog(1, 5) + watchdog(2, 5), CATALOGUE, "job.log")
    assert alike.root_causes == ()
    assert alike.initiating_rank is None
    oom = ("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 "
           "has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    with_root = diagnose_text(started(3) + oom + watchdog(0, 12) + watchdog(1, 12), CATALOGUE,
                              "job.log")
    assert [f.rule_id for f in with_root.root_causes] == ["cuda-oom"]


def test_the_desync_report_names_the_lagging_rank() -> None:
    # TORCH_NCCL_DESYNC_DEBUG=1 (pytorch/pytorch torch/csrc/distributed/c10d/TraceUtils.h)
    report = ("[rank0]:\t - [0] Timeout at collective: ALLREDUCE, #5\n"
              "[rank0]:\t - To our best knowledge, ranks [3] are the lagging ranks that caused "
              "this timeout. They never joined any collectives\n")
    diagnosis = diagnose_text(watchdog(0, 5) + report, CATALOGUE, "job.log")
    root = diagnosis.findings[0]
    assert (root.rule_id, root.rank, root.confidence) == ("collective-hang", 3, 0.9)
    assert diagnosis.initiating_rank == 3
    every = report.replace("ranks [3] are", "ranks [1, 2, 3] are")
    assert diagnose_text(watchdog(0, 5) + every, CATALOGUE, "job.log").root_causes == ()


def test_the_first_unexplained_failure_names_the_rank_when_no_finding_does() -> None:
    def raised(rank: int, message: str) -> str:
        return (f"[rank{rank}]: Traceback (most recent call last):\n"
                f'[rank{rank}]:   File "/home/user/proj/data.py", line 77, in __getitem__\n'
                f"[rank{rank}]: {message}\n")

    diagnosis = diagnose_text(started(4) + raised(3, "IndexError: list index out of range")
                              + raised(0, "KeyError: 'input_ids'"), CATALOGUE, "job.log")
    assert diagnosis.initiating_rank == 3
    assert diagnosis.reason.startswith("rank 3 failed first, with IndexError (job.log:")
    assert diagnosis.failure_order == (3, 0)


LAUNCHER_FIXTURES = FIXTURES / "launchers"
# What each injected fault leaves to go by: a rank that dies by a signal says nothing, its
# launcher does; a raising rank's error comes first; a hung rank is the one the others miss.
BASIS_OF_FAULT = {"kill": "exited-by-itself", "raise": "first-root-cause",
                  "hang": "missing-from-reports"}


def launcher_fixtures() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = yaml.safe_load(
        (LAUNCHER_FIXTURES / "labels.yaml").read_text("utf-8"))
    return cases


@pytest.mark.parametrize("case", launcher_fixtures(), ids=lambda c: str(c["file"]))
def test_real_launcher_fixture(case: dict[str, object], capsys: pytest.CaptureFixture[str]
                               ) -> None:
    """Real torchrun and torch.multiprocessing.spawn output (bench/launcher_fixtures.py)."""
    from trainmedic.cli import main

    assert main(["diagnose", str(LAUNCHER_FIXTURES / str(case["file"])), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["initiating_rank"] == case["initiating_rank"], result["initiating_reason"]
    assert result["initiating_basis"] == BASIS_OF_FAULT[str(case["fault"])]
    assert result["ranks"][str(case["initiating_rank"])]["status"] == "failed-first"


def attribution_of(text: str) -> tuple[int | None, str, dict[int, str]]:
    diagnosis = diagnose_text(text, CATALOGUE, "job.log")
    return (diagnosis.initiating_rank, diagnosis.initiating_basis.value,
            {rank: report.status.value for rank, report in diagnosis.ranks.items()})


# corpus more/distributed/014.log (Tencent-Hunyuan/HunyuanVideo#114): rank 0's NCCL error, but
# the agent stops rank 0 (pid 6832, still running) after rank 1 had exited by itself.
PEER_LOSS = """\
[rank0]:     work = group.alltoall_base(
[rank0]: RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)
W1211 08:26:06.780000 139773546530624 torch/distributed/elastic/multiprocessing/api.py:858] \
Sending process 6832 closing signal SIGTERM
E1211 08:26:06.844000 139773546530624 torch/distributed/elastic/multiprocessing/api.py:833] \
failed (exitcode: 1) local_rank: 1 (pid: 6833) of binary: /opt/conda/envs/myenv/bin/python
"""


def test_launcher_beats_a_peer_loss_error_of_a_rank_it_stopped() -> None:
    rank, basis, statuses = attribution_of(PEER_LOSS)
    assert (rank, basis) == (1, "exited-by-itself")
    assert statuses[0] == "failed-collateral"


def test_a_rank_own_error_against_the_launcher_order_is_undetermined() -> None:
    # corpus more/distributed/025.log (wbfwonderful/Vad-R1#11): rank 2's OOM is shown, yet the
    # agent saw rank 1 exit first (its error is not in the excerpt)
    text = """\
[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.06 GiB. GPU 2 has a \
total capacity of 79.25 GiB of which 6.96 GiB is free.
W0330 21:37:33.868000 155011 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] \
Sending process 155026 closing signal SIGTERM
W0330 21:37:33.872000 155011 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] \
Sending process 155028 closing signal SIGTERM
E0330 21:37:34.807000 155011 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] \
failed (exitcode: 1) local_rank: 1 (pid: 155027) of binary: /usr/bin/python3.11
"""
    rank, basis, statuses = attribution_of(text)
    assert (rank, basis) == (None, "undetermined")
    assert statuses == {1: "failed", 2: "failed"}


def test_ranks_killed_by_one_signal_together_are_alike() -> None:
    # corpus more/distributed/041.log (hiyouga/LlamaFactory#2206): every rank SIGBUS at once
    entry = "  time      : 2024-01-16_18:04:01\n  rank      : {0} (local_rank: {0})\n" \
            "  exitcode  : -7 (pid: 1661{0})\n  traceback : Signal 7 (SIGBUS) received by " \
            "PID 1661{0}\n"
    text = ("Failures:\n" + "".join(f"[{r}]:\n" + entry.format(r) for r in (1, 2, 3))
            + "Root Cause (first observed failure):\n[0]:\n" + entry.format(0))
    rank, basis, statuses = attribution_of(text)
    assert (rank, basis) == (None, "all-ranks-alike")
    assert set(statuses.values()) == {"failed"}


def test_one_rank_in_the_input_is_not_said_to_fail_first() -> None:
    # corpus more/numerics/020.log (Megatron): only rank 3 is named
    text = ("Traceback (most recent call last):\n"
            "  File \"megatron/optimizer/clip_grads.py\", line 78, in clip_grad_norm_fp32\n"
            "AssertionError: Rank 3: found NaN in local grad norm in backwards pass. Device: 3, "
            "node: gpu-node-01\n")
    rank, basis, statuses = attribution_of(text)
    assert (rank, basis) == (3, "only-rank-in-input")
    assert statuses == {3: "failed"}


def test_one_node_of_several_does_not_settle_the_rank() -> None:
    # corpus real-a/044.log: the second node's agent saw its rank 4 exit; rank 0 on the first
    # node times out 10 minutes later: other nodes' agents are not in the input
    text = """\
Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_11:37:36
  host      : workergpu008.cm.cluster
  rank      : 4 (local_rank: 0)
  exitcode  : 1 (pid: 793062)
srun: error: workergpu008: task 1: Exited with exit code 1
[rank0]:[E820 11:47:24.069865760 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=2, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=2, \
Timeout(ms)=600000) ran for 600005 milliseconds before timing out.
"""
    rank, basis, _ = attribution_of(text)
    assert (rank, basis) == (None, "undetermined")


def test_spawn_relays_the_child_error_to_its_rank() -> None:
    # corpus more/distributed/020.log (hpcaitech/ColossalAI#1320), behind pytest's "E   "
    text = """\
E       torch.multiprocessing.spawn.ProcessRaisedException:
E
E       -- Process 3 terminated with the following error:
E       Traceback (most recent call last):
E         File "/usr/local/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 59, \
in _wrap
E           fn(i, *args)
E       RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, \
unhandled system error, NCCL version 2.10.3
"""
    rank, basis, statuses = attribution_of(text)
    # the error is rank 3's, but a lost peer could have caused it: nothing says it came first
    assert (rank, basis) == (3, "only-rank-in-input")
    assert statuses == {3: "failed"}


# corpus real-a/043.log (WongKinYiu/yolov7#714): the watchdog's teardown names no rank, then
# the agent saw local_rank 1 exit: its exit may be that teardown, a report of another's failure.
TEARDOWN = """\
[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the \
asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete \
data. To avoid this inconsistency, we are taking the entire process down.
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 3584286 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 3584288 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 \
(pid: 3584287) of binary: /root/soft_file/anaconda3/envs/pytorch36/bin/python
"""


def test_an_unranked_teardown_makes_the_agent_exit_no_evidence() -> None:
    diagnosis = diagnose_text(TEARDOWN, CATALOGUE, "job.log")
    assert (diagnosis.initiating_rank, diagnosis.initiating_basis.value) == (None, "undetermined")
    assert "job.log:1" in diagnosis.reason
    # without the teardown the agent's word stands
    alone = TEARDOWN.split("\n", 1)[1]
    assert attribution_of(alone)[:2] == (1, "exited-by-itself")


def test_an_input_that_begins_with_the_root_cause_does_not_order_it() -> None:
    # corpus more/runtime/031.log (modelscope/ms-swift#5943): the paste starts at rank 15's
    # error line (its traceback cut above), then rank 12's traceback begins
    text = """\
[rank15]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.63 GiB. GPU 7 has a \
total capacity of 79.11 GiB of which 2.61 GiB is free.
[rank12]: Traceback (most recent call last):
[rank12]:   File "/opt/ms-swift/swift/cli/rlhf.py", line 5, in <module>
[rank12]:     rlhf_main()
"""
    rank, basis, statuses = attribution_of(text)
    assert (rank, basis) == (None, "undetermined")
    assert statuses[15] == "failed"
    # the same two ranks with a line before: the OOM is the first failure in it
    assert attribution_of("[rank12]: step 40\n" + text)[:2] == (15, "first-root-cause")


def agent_lines(signal: int, pids: tuple[int, ...]) -> str:
    # corpus more/distributed/013.log (fudan-generative-vision/hallo2#56), its pids as given
    stops = "".join(f"[2024-11-26 02:04:28,495] torch.distributed.elastic.multiprocessing.api: "
                    f"[WARNING] Sending process {pid} closing signal SIGTERM\n" for pid in pids)
    return stops + (f"[2024-11-26 02:04:31,514] torch.distributed.elastic.multiprocessing.api: "
                    f"[ERROR] failed (exitcode: -{signal}) local_rank: 1 (pid: 750662) of "
                    "binary: /home/user/anaconda3/envs/hallo/bin/python\n")


def test_a_crash_beside_unaccounted_pids_does_not_settle_the_rank() -> None:
    gaps = (750661, 750664, 750668)
    assert attribution_of(agent_lines(11, gaps))[:2] == (None, "undetermined")
    # every pid accounted for, or a SIGKILL (sent to one process): the agent's word stands
    assert attribution_of(agent_lines(11, (750661, 750663, 750664)))[:2] == \
        (1, "exited-by-itself")
    assert attribution_of(agent_lines(9, gaps))[:2] == (1, "exited-by-itself")


MULTINODE = FIXTURES / "multinode"


def test_two_nodes_agents_are_ordered_by_their_root_causes_times(
        capsys: pytest.CaptureFixture[str]) -> None:
    (case,) = yaml.safe_load((MULTINODE / "labels.yaml").read_text("utf-8"))
    from trainmedic.cli import main

    assert main(["diagnose", str(MULTINODE / case["file"]), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["initiating_rank"], result["initiating_host"]) == \
        (case["initiating_rank"], case["initiating_host"])
    assert result["initiating_basis"] == "exited-by-itself"
    # gpu-node-2's summary is printed first but names the later failure
    text = (MULTINODE / case["file"]).read_text("utf-8")
    assert text.index("host      : gpu-node-2") < text.index("host      : gpu-node-1")


def test_two_nodes_agents_in_the_same_second_do_not_settle_the_rank() -> None:
    text = (MULTINODE / "two-agents.log").read_text("utf-8").replace(
        "2024-08-20_11:37:36", "2024-08-20_11:47:37")
    diagnosis = diagnose_text(text, CATALOGUE, "job.log")
    assert (diagnosis.initiating_rank, diagnosis.initiating_basis.value) == (None, "undetermined")
    assert "same second" in diagnosis.reason


def test_a_pdsh_host_prefix_names_the_initiating_host() -> None:
    # DeepSpeed's multi-node launch through pdsh puts the host before torch's rank prefix
    text = ("worker-1: [rank5]: Traceback (most recent call last):\n"
            "worker-1: [rank5]:   File \"train.py\", line 9, in <module>\n"
            "worker-1: [rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB.\n"
            "worker-0: [rank1]: step 40 loss 1.2\n")
    diagnosis = diagnose_text(text, CATALOGUE, "job.log")
    assert (diagnosis.initiating_rank, diagnosis.initiating_host) == (5, "worker-1")


# Real messages: PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp), its CUDA
# error check (c10/cuda/CUDAException.cpp) and the NCCL watchdog (ProcessGroupNCCL.cpp).
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
       "total capacity of 79.15 GiB of which 1.12 GiB is free.")
ILLEGAL = ("Traceback (most recent call last):\n"
           '  File "/workspace/train.py", line 530, in <module>\n'
           "    main()\n"
           "RuntimeError: CUDA error: an illegal memory access was encountered")
WATCHDOG = ("[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=2001, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
            "Timeout(ms)=600000) ran for 600029 milliseconds before timing out.")


def _steps(prefix: str, ranks: range, first: int, last: int) -> list[str]:
    """Megatron-LM's step line on every rank."""
    return [f"{prefix.format(r=r, local=r % 4)} iteration {i:8d}/ 100000 | lm loss: "
            f"2.{i:03d}E+00 | grad norm: 0.8{r} |" for i in range(first, last + 1) for r in ranks]


def _error(prefix: str, rank: int, text: str) -> list[str]:
    return [prefix.format(r=rank, local=rank % 4) + line for line in text.splitlines()]


def test_a_failure_its_rank_trained_on_after_is_not_the_root_cause() -> None:
    ranks, prefix = range(8), "[rank{r}]:"
    lines = (_steps(prefix, ranks, 1, 5) + _error(prefix, 3, OOM)  # caught: rank 3 goes on
             + _steps(prefix, ranks, 6, 20) + _error(prefix, 6, ILLEGAL)
             + [f"[rank{r}]:" + WATCHDOG.format(r=r) for r in ranks if r != 6])
    diagnosis = diagnose_text("\n".join(lines) + "\n", CATALOGUE, "job.log")
    assert diagnosis.findings[0].rule_id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 6, diagnosis.reason
    oom = next(f for f in diagnosis.findings if f.rule_id == "cuda-oom")
    assert oom.went_on
    assert oom.ranks_went_on == (3,)


def test_a_failure_that_ended_its_rank_stays_the_root_cause() -> None:
    ranks, prefix = range(8), "[rank{r}]:"
    lines = (_steps(prefix, ranks, 1, 5) + _error(prefix, 3, OOM)
             + _steps(prefix, [r for r in ranks if r != 3], 6, 20)  # rank 3 printed no more
             + _error(prefix, 6, ILLEGAL)
             + [f"[rank{r}]:" + WATCHDOG.format(r=r) for r in ranks if r not in (3, 6)])
    diagnosis = diagnose_text("\n".join(lines) + "\n", CATALOGUE, "job.log")
    assert diagnosis.initiating_rank == 3, diagnosis.reason
    assert not next(f for f in diagnosis.findings if f.rule_id == "cuda-oom").went_on


# torchrun's summary (torch/distributed/elastic/multiprocessing/errors): the failed worker's
# global and local rank and its host.
SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-12_15:52:26
  host      : node-1
  rank      : 5 (local_rank: 1)
  exitcode  : -6 (pid: 91961)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 91961
============================================================"""


def test_a_local_rank_prefix_is_put_on_the_global_rank_the_summary_names() -> None:
    # two nodes of four GPUs with `torchrun --tee 3`: `[default1]:` is local rank 1 on each
    ranks, prefix = range(8), "[default{local}]:"
    lines = (_steps(prefix, ranks, 1, 10) + _error(prefix, 5, ILLEGAL)
             + [f"[default{r % 4}]:[rank{r}]:" + WATCHDOG.format(r=r) for r in ranks if r != 5]
             + SUMMARY.splitlines())
    diagnosis = diagnose_text("\n".join(lines) + "\n", CATALOGUE, "job.log")
    assert diagnosis.findings[0].rule_id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 5, diagnosis.reason
    assert diagnosis.ranks[5].status is RankStatus.FAILED_FIRST

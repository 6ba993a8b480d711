"""Each launcher's own lines, read into worker exits: who ended by itself, who was ended.

The examples are real launcher output (the source is named above each); the lines run through
the whole reading pipeline, so what is tested is what `diagnose` reads.
"""

from __future__ import annotations

import io

import pytest

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.logs.formats import Source
from trainmedic.logs.launcher import LauncherReport, read_report

CATALOGUE = bundled()


def report_of(text: str) -> LauncherReport:
    diagnoser = Diagnoser(CATALOGUE)
    diagnoser.read(Source("job.log", io.BytesIO(text.encode())))
    return read_report(diagnoser.evidence.launcher)


def self_exits(text: str) -> list[tuple[int | None, int | None, int | None]]:
    return [(e.rank, e.exitcode, e.signal) for e in report_of(text).self_exits()]


# torchelastic's agent (corpus more/distributed/018.log, pytorch/pytorch#88251): seven SIGTERMs,
# then the one worker that had exited by itself.
AGENT = "\n".join(
    [f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process {pid} closing "
     "signal SIGTERM" for pid in (59460, 59461, 59462, 59463, 59466, 59470, 59471)]
    + ["ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 5 "
       "(pid: 59469) of binary: /home/user/.conda/envs/deit/bin/python"])


def test_torchelastic_agent_failed_worker_and_sigterms() -> None:
    report = report_of(AGENT)
    assert self_exits(AGENT) == [(5, 1, None)]
    assert 59466 in report.terminated_pids
    assert not report.one_node_of_several


def test_torchelastic_agent_line_behind_a_wrapper_prefix() -> None:
    # the same agent line as a job runner relays it, behind its own "stderr: " prefix
    text = ("stderr: failed (exitcode: 1) local_rank: 7 (pid: 18759) of binary: "
            "/usr/bin/python3")
    assert self_exits(text) == [(7, 1, None)]


# torchrun's ChildFailedError summary (corpus more/distributed/031.log, hiyouga/LlamaFactory#9194)
NO_OTHER = """\
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-09-24_04:42:40
  host      : 42d397e80282
  rank      : 5 (local_rank: 5)
  exitcode  : 1 (pid: 10979)
"""


def test_summary_with_no_other_failures_names_its_rank() -> None:
    report = report_of(NO_OTHER)
    assert self_exits(NO_OTHER) == [(5, 1, None)]
    assert report.torchelastic_root is not None
    assert report.torchelastic_root.rank == 5


def test_summary_behind_a_quote_prefix_is_read() -> None:
    quoted = "".join("> " + line + "\n" for line in NO_OTHER.splitlines())
    assert self_exits(quoted) == [(5, 1, None)]


def test_summary_copied_with_its_runs_of_spaces_turned_into_tabs_is_read() -> None:
    """A terminal's copy or an editor may hand runs of spaces on as tabs."""
    tabbed = NO_OTHER.replace("      :", "\t:").replace("  :", "\t:")
    assert "rank\t: 5" in tabbed
    assert self_exits(tabbed) == [(5, 1, None)]
    mpi = "The first process to do so was:\n  Process name:\t[[29973,1],3]\n  Exit code:\t1\n"
    assert [r for r, _, _ in self_exits(mpi)] == [3]


def test_summary_of_one_node_of_several() -> None:
    # corpus real-a/044.log: the agent on the second node; srun's task 1 is that agent
    text = """\
Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_11:37:36
  host      : workergpu008.cm.cluster
  rank      : 4 (local_rank: 0)
  exitcode  : 1 (pid: 793062)
  error_file: <N/A>
============================================================
srun: error: workergpu008: task 1: Exited with exit code 1
"""
    report = report_of(text)
    assert self_exits(text) == [(4, 1, None)]  # srun's task under an agent is not a rank
    assert report.one_node_of_several


def test_summary_listing_other_failures_without_its_root_cause() -> None:
    # corpus real-b/049.log: the excerpt stops after the Failures list
    text = """\
Failures:
[1]:
  time      : 2024-03-12_15:25:37
  host      : recgpu121
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 1402889)
"""
    assert report_of(text).root_unseen


def test_summary_sigterm_entries_were_ended_by_the_agent() -> None:
    # torch 2.13 lists the workers it stopped (tests/fixtures/launchers/torchrun-hang.log)
    text = """\
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 26729)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 26731)
"""
    report = report_of(text)
    assert self_exits(text) == [(2, 1, None)]
    assert report.killed_by_launcher(0)
    assert not report.root_unseen


@pytest.mark.parametrize(("line", "expected"), [
    # corpus more/distributed/010.log (ali-vilab/videocomposer#21)
    ("torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal "
     "SIGSEGV", (2, None, 11)),
    # torch < 1.7 raised a plain Exception with the same words
    ("Exception: process 0 terminated with signal SIGKILL", (0, None, 9)),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with exit code 1",
     (3, 1, None)),
    # tests/fixtures/launchers/spawn-raise.log
    ("-- Process 1 terminated with the following error:", (1, None, None)),
])
def test_spawn_names_the_process_it_found_dead(line: str, expected: tuple[int, ...]) -> None:
    assert self_exits(line) == [expected]


def test_spawn_look_alike_is_not_read() -> None:
    # corpus real-a/033.log: a test harness's own message, not torch.multiprocessing.spawn
    assert self_exits("Jul 13 21:22:34 Process 2 terminated with exit code 10, terminating "
                      "remaining processes.") == []


# srun (a 200-task MPI job and a 2-node job, as posted on public forums)
SRUN_ONE = """\
srun: error: compute-0-18: task 200: Exited with exit code 16
srun: error: compute-0-1: tasks 40-79: Killed
srun: error: compute-0-0: tasks 0-39: Killed
"""
SRUN_SEVERAL = """\
srun: error: node1: tasks 0-1,3: Exited with exit code 14
srun: error: node1: task 2: Killed
srun: error: node2: tasks 4-7: Killed
"""


def test_srun_task_that_exited_beside_the_killed_ones() -> None:
    report = report_of(SRUN_ONE)
    assert self_exits(SRUN_ONE) == [(200, 16, None)]
    assert report.killed_by_launcher(0)
    assert report.killed_by_launcher(79)


def test_srun_grouped_task_lists() -> None:
    report = report_of(SRUN_SEVERAL)
    assert [rank for rank, _, _ in self_exits(SRUN_SEVERAL)] == [0, 1, 3]
    assert all(report.killed_by_launcher(r) for r in (2, 4, 5, 6, 7))


def test_srun_task_killed_by_a_signal_of_its_own() -> None:
    text = ("srun: error: nid05581: tasks 1716-1727: Killed\n"
            "srun: error: nid05583: task 1743: Aborted (core dumped)\n")
    assert self_exits(text) == [(1743, None, 6)]


@pytest.mark.parametrize(("text", "rank"), [
    # Open MPI (corpus more/distributed/033.log, horovod/horovod#1421): vpid 0 = rank 0
    ("mpirun detected that one or more processes exited with non-zero status, thus causing\n"
     "the job to be terminated. The first process to do so was:\n\n"
     "  Process name: [[29973,1],0]\n  Exit code:    1\n", 0),
    # Horovod's gloo launcher behind Determined's prefix (corpus more/distributed/027.log)
    ("<>        [2021-12-07 10:43:01] 087c0ee7 || RuntimeError: Horovod detected that one or "
     "more processes exited with non-zero status, thus causing the job to be terminated. The "
     "first process to do so was:\n"
     "<>        [2021-12-07 10:43:01] 087c0ee7 || Exit code: 1\n"
     "<>        [2021-12-07 10:43:01] 087c0ee7 || Process name: 1\n", 1),
    # corpus more/distributed/012.log (horovod/horovod#469)
    ("mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 "
     "(Killed).", 7),
])
def test_mpi_first_process_to_exit(text: str, rank: int) -> None:
    assert [r for r, _, _ in self_exits(text)] == [rank]


def test_exit_code_lines_outside_a_first_process_report_are_not_read() -> None:
    assert self_exits("Process name: 3\nExit code: 1\n") == []


def test_ray_dead_worker_by_pid() -> None:
    # corpus more/distributed/036.log (ray-project/ray#31828), the driver's line cut short
    text = ("(RayTrainWorker pid=1942, ip=100.97.252.234) 17-Jan-23 17:21:19 [Worker:0] [INFO] "
            "Returning from train func!!\n"
            "2023-01-17 17:21:35,472\tWARNING worker.py:1829 -- A worker died or was killed "
            "while executing a task by an unexpected system error. Worker IP address: "
            "100.97.252.234 Worker port: 10016 Worker PID: 1942 Worker exit type: SYSTEM_ERROR "
            "Worker exit detail: Worker unexpectedly exits with a connection error code 2.\n")
    assert [r for r, _, _ in self_exits(text)] == [0]


def test_ray_trainer_lists_worker_ranks() -> None:
    # Ray Train's listing of its workers (ray-project/ray docs, "Started distributed worker
    # processes"), then Ray's dead-worker wording for the second of them
    text = ("(TorchTrainer pid=83721) - (ip=10.216.70.82, pid=83857) world_rank=0, local_rank=0, "
            "node_rank=0\n"
            "(TorchTrainer pid=83721) - (ip=10.216.70.82, pid=83858) world_rank=1, local_rank=1, "
            "node_rank=0\n"
            "Worker port: 10016 Worker PID: 83858 Worker exit type: SYSTEM_ERROR\n")
    assert [r for r, _, _ in self_exits(text)] == [1]


def test_ray_train_error_snippets() -> None:
    # Ray Train 2 (ray.train.WorkerGroupError), as quoted in a public ROCm guide
    one = ("ray.train.WorkerGroupError: Training failed due to worker errors:\n"
           "[Rank 1 Error Snippet]:\n"
           "torch.AcceleratorError: CUDA error: invalid device ordinal\n")
    assert [r for r, _, _ in self_exits(one)] == [1]
    grouped = "[Rank 0,3 Error Snippet]:\nAn error\n[Rank 2 Error Snippet]:\nDifferent error\n"
    assert sorted(r for r, _, _ in self_exits(grouped)) == [0, 2, 3]


def test_deepspeed_launcher_exit_line_names_no_rank() -> None:
    # DeepSpeed's launch.py prints the LAST local rank's command whatever rank failed
    # (corpus more/distributed/009.log, deepspeedai/DeepSpeedExamples#626)
    text = ("[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] "
            "['/venv/bin/python3.10', '-u', 'trainCLM.py', '--local_rank=1', '--deepspeed'] "
            "exits with return code = -11\n")
    assert report_of(text).exits == ()


def test_summary_entries_keep_their_time_and_host() -> None:
    report = report_of(NO_OTHER)
    root = report.torchelastic_root
    assert root is not None
    assert (root.host, root.time) == ("42d397e80282", 1758688960.0)  # 2025-09-24 04:42:40 UTC
    assert report.host_of(5) == "42d397e80282"


def summary(host: str, stamp: str, rank: int, local: int, pid: int) -> str:
    # torch 2.x ChildFailedError summary, one node's agent (as in corpus real-a/044.log)
    return ("Failures:\n  <NO_OTHER_FAILURES>\n"
            "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n[0]:\n"
            f"  time      : {stamp}\n  host      : {host}\n"
            f"  rank      : {rank} (local_rank: {local})\n  exitcode  : 1 (pid: {pid})\n"
            "  error_file: <N/A>\n"
            "============================================================\n")


def test_the_earliest_of_several_agents_root_causes_is_the_first_observed() -> None:
    text = (summary("gpu-node-2", "2024-08-20_11:47:37", 5, 1, 81235)
            + summary("gpu-node-1", "2024-08-20_11:37:36", 2, 2, 793064))
    report = report_of(text)
    assert [(e.rank, e.host) for e in report.torchelastic_roots()] == \
        [(5, "gpu-node-2"), (2, "gpu-node-1")]
    root = report.torchelastic_root
    assert root is not None
    assert (root.rank, root.host) == (2, "gpu-node-1")


def test_a_host_line_outside_a_summary_entry_is_not_kept() -> None:
    # a config dump before the summary: "host : db-1" names no worker's host
    report = report_of("host      : db-1\n" + summary("gpu-node-1", "2024-08-20_11:37:36", 2, 2, 7))
    assert report.host_of(2) == "gpu-node-1"
    assert report_of("host      : db-1\n").exits == ()


def test_srun_and_mpirun_name_the_host() -> None:
    assert report_of(SRUN_ONE).host_of(200) == "compute-0-18"
    mpi = report_of("mpirun noticed that process rank 7 with PID 0 on node gpu12 exited on "
                    "signal 9 (Killed).")
    assert mpi.host_of(7) == "gpu12"


def test_a_loopback_name_names_no_host() -> None:
    assert report_of(summary("localhost", "2024-08-20_11:37:36", 2, 2, 7)).host_of(2) is None


def test_one_summary_printed_twice_is_one_root_cause() -> None:
    once = summary("gpu-node-1", "2024-08-20_11:37:36", 2, 2, 793064)
    assert len(report_of(once + once).torchelastic_roots()) == 1


def test_summary_names_the_global_rank_of_a_local_rank_once() -> None:
    # torchrun's summary on the second of two 8-GPU nodes: local rank 1 there is global rank 9.
    one = NO_OTHER.replace("rank      : 5 (local_rank: 5)", "rank      : 9 (local_rank: 1)")
    report = report_of(one)
    assert report.global_ranks() == {1: 9}  # local rank 5 is not named
    # two failed workers with local rank 1 (two nodes): which one a `[default1]:` line is
    # cannot be told
    two = one.replace("Failures:\n  <NO_OTHER_FAILURES>\n", "Failures:\n[1]:\n"
                      "  time      : 2025-09-24_04:42:40\n  host      : node-0\n"
                      "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 10980)\n")
    assert report_of(two).global_ranks() == {}

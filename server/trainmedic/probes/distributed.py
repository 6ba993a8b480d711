"""torch.distributed on this machine: a real two-process gloo job on the loopback address.

Two worker processes meet through a file store in a private temporary folder, with gloo
bound to the loopback interface, and then
  0. check that every socket they listen on is on 127.0.0.1. (A TCPStore would listen on
     every interface, `[::]`, and its clients look up the name of the IPv4-mapped address they
     connect to, which no hosts file lists, so each start sent reverse DNS queries off the
     host: the file store needs no socket and no name.)
  1. all_reduce a tensor and check the sum,
  2. call mismatched collectives (all_reduce on rank 0, all_gather on rank 1) with the
     TORCH_DISTRIBUTED_DEBUG=DETAIL checks on: they must raise "Detected mismatch", not hang,
  3. run an all_reduce that rank 1 skips: it must fail with a timeout after 2 s, not hang.
Everything is bounded: the probe kills its own two workers if they are not done in time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = ("two-process gloo job on 127.0.0.1: all_reduce, mismatch detection, timeouts; "
           "backends and env")
DEADLINE_SECONDS = 25.0
COLLECTIVE_TIMEOUT_SECONDS = 2
RESULT_PREFIX = "PROBE-RESULT "
ENV_NAMES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK",
             "LOCAL_WORLD_SIZE", "GLOO_SOCKET_IFNAME", "TORCH_DISTRIBUTED_DEBUG",
             "CUDA_VISIBLE_DEVICES")
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCHELASTIC_")

_WORKER = r"""
import datetime, json, os, socket, sys, time
rank, store_path, timeout_s = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
out = {"rank": rank}


def listening():
    # The addresses this process listens on, from /proc (Linux); None where there is none.
    owned = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            owned.add(target[8:-1])
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open(f"/proc/net/{table}") as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] != "0A" or fields[9] not in owned:  # 0A: listening
                    continue
                address, at = fields[1].split(":")
                raw = bytes.fromhex(address)
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.append(f"{socket.inet_ntop(family, raw)}:{int(at, 16)}")
    return found


try:
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", store=dist.FileStore(store_path, 2), rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=10))
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    out["all_reduce"] = t.item()
    try:
        out["listening"] = listening()
    except OSError:
        pass  # no /proc here: the probe says it could not look

    dist.set_debug_level(dist.DebugLevel.DETAIL)
    checked = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=5))
    dist.set_debug_level(dist.DebugLevel.OFF)
    try:
        x = torch.ones(1)
        if rank == 0:
            dist.all_reduce(x, group=checked)
        else:
            dist.all_gather([torch.zeros(1), torch.zeros(1)], x, group=checked)
        out["mismatch"] = "no error: the mismatched collectives were not detected"
    except Exception as error:
        out["mismatch"] = str(error).strip().splitlines()[0][:400]

    short = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=timeout_s))
    if rank == 0:
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(1), group=short)
            out["timeout"] = "no error: the collective completed without rank 1"
        except Exception as error:
            out["timeout"] = str(error).strip().splitlines()[0][:400]
        out["timeout_seconds"] = round(time.monotonic() - start, 1)
    dist.barrier()
    dist.destroy_process_group()
except Exception as error:
    out["error"] = f"{type(error).__name__}: {error}"[:600]
print("PROBE-RESULT " + json.dumps(out), flush=True)
"""


def _loopback_interface() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except (OSError, AttributeError):
        return None
    return next((n for n in names if n in ("lo", "lo0")), None)


def _show_environment(report: Report) -> None:
    found = [(k, v) for k, v in sorted(os.environ.items())
             if k in ENV_NAMES or k.startswith(ENV_PREFIXES)]
    if not found:
        report.info("environment: no MASTER_*/RANK/WORLD_SIZE, NCCL_*, TORCH_NCCL_* or "
                    "TORCH_DISTRIBUTED_DEBUG variables are set here")
        return
    report.info("environment (these reach every rank launched from this shell):")
    for key, value in found:
        report.info(f"  {key}={value}")
    if os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", os.environ.get(
            "NCCL_ASYNC_ERROR_HANDLING")) == "0":
        report.info("  note: async error handling 0 makes a failed or timed-out NCCL collective "
                    "hang instead of ending the job")


def _show_backends(torch: object, report: Report) -> bool:
    import torch.distributed as dist

    report.info(f"torch {torch.__version__}")  # type: ignore[attr-defined]
    if not dist.is_available():
        report.check(False, "torch.distributed is not available in this torch build")
        return False
    gloo, nccl, mpi = dist.is_gloo_available(), dist.is_nccl_available(), dist.is_mpi_available()
    report.info(f"backends: gloo {'yes' if gloo else 'no'}, nccl {'yes' if nccl else 'no'}, "
                f"mpi {'yes' if mpi else 'no'}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0  # type: ignore[attr-defined]
    if nccl:
        try:
            version = torch.cuda.nccl.version()  # type: ignore[attr-defined]
            shown = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
            report.info(f"NCCL version bundled with torch: {shown}; GPUs visible: {gpus}")
        except Exception as error:  # report it, do not fail the probe
            report.info(f"NCCL version unknown ({error}); GPUs visible: {gpus}")
        report.skip("no NCCL collective is run by this probe: on a GPU node, check NCCL itself "
                    "with nccl-tests (all_reduce_perf -b 8 -e 128M -f 2 -g <GPUs>)")
    else:
        report.skip("cannot check NCCL here: this torch build has no NCCL"
                    + ("" if gpus else " and no GPU is visible")
                    + " (run this probe on a GPU node for NCCL details)")
    if not gloo:
        report.check(False, "gloo is not available in this torch build: the CPU checks cannot run")
        return False
    return True


def _run_workers(store_path: str) -> tuple[dict[int, dict[str, object]], str]:
    env = dict(os.environ)
    for name in ("TORCH_DISTRIBUTED_DEBUG", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE",
                 "LOCAL_RANK"):
        env.pop(name, None)
    env["OMP_NUM_THREADS"] = "1"
    loopback = _loopback_interface()
    if loopback:
        env["GLOO_SOCKET_IFNAME"] = loopback
    workers = [subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(rank), store_path, str(COLLECTIVE_TIMEOUT_SECONDS)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for rank in (0, 1)]
    deadline = time.monotonic() + DEADLINE_SECONDS
    outputs: list[tuple[str, str]] = []
    hung = False
    for worker in workers:
        try:
            outputs.append(worker.communicate(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            hung = True
            worker.kill()
            outputs.append(worker.communicate())
    results: dict[int, dict[str, object]] = {}
    for stdout, _ in outputs:
        for line in stdout.splitlines():
            if line.startswith(RESULT_PREFIX):
                data = json.loads(line[len(RESULT_PREFIX):])
                results[int(data["rank"])] = data
    problem = ""
    if hung:
        problem = (f"the workers did not finish within {DEADLINE_SECONDS:.0f} s (a hang) "
                   "and were stopped")
    elif len(results) < 2:
        tail = " | ".join(err.strip().splitlines()[-1] for _, err in outputs if err.strip())
        problem = "a worker exited without a result" + (f": {tail[:400]}" if tail else "")
    return results, problem


def _check_listening(results: dict[int, dict[str, object]], report: Report) -> None:
    found = [results[r].get("listening") for r in (0, 1)]
    if not all(isinstance(f, list) for f in found):
        report.info("cannot list the workers' listening sockets here (no /proc)")
        return
    addresses = [str(a) for f in found if isinstance(f, list) for a in f]
    outside = sorted({a for a in addresses if not a.startswith("127.0.0.1:")})
    report.check(not outside, "gloo listens on 127.0.0.1 only"
                 + (f"; also on {', '.join(outside)}" if outside else
                    f" ({len(addresses)} sockets)"))


def run() -> int:
    torch = import_torch("torch.distributed")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    if not _show_backends(torch, report):
        _show_environment(report)
        return report.code
    _show_environment(report)

    report.info("rendezvous: a file store in a private temporary folder (no network, no name "
                f"lookups), world_size 2, gloo on the loopback interface "
                f"({_loopback_interface() or 'default'})")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trainmedic-probe-") as folder:
        results, problem = _run_workers(os.path.join(folder, "store"))
    report.info(f"two workers finished in {time.monotonic() - started:.1f} s")
    if problem:
        report.check(False, problem)
    errors = [f"rank {r}: {d['error']}" for r, d in sorted(results.items()) if "error" in d]
    for error in errors:
        report.check(False, f"worker failed: {error}")
    if problem or errors or len(results) < 2:
        return report.code

    _check_listening(results, report)
    sums = [results[r].get("all_reduce") for r in (0, 1)]
    report.check(sums == [3.0, 3.0],
                 "rendezvous and gloo all_reduce across 2 processes: "
                 f"1 + 2 = {sums[0]} on both ranks")
    mismatch = [str(results[r].get("mismatch", "")) for r in (0, 1)]
    report.check(all("Detected mismatch between collectives" in m for m in mismatch),
                 "TORCH_DISTRIBUTED_DEBUG=DETAIL checks report mismatched collectives "
                 "(all_reduce on rank 0, all_gather on rank 1) instead of hanging")
    if not all("Detected mismatch" in m for m in mismatch):
        report.info(f"  got: {mismatch[0]}")
    timeout = str(results[0].get("timeout", ""))
    took = results[0].get("timeout_seconds")
    report.check("Timed out" in timeout or "timed out" in timeout,
                 f"a collective that rank 1 skips fails with a timeout after {took} s "
                 f"(group timeout {COLLECTIVE_TIMEOUT_SECONDS} s) instead of hanging")
    report.info(f"  rank 0 got: {timeout}")
    return report.code

"""Make the real launcher fixtures: a 4-rank CPU (gloo) job with a fault on a known rank.

Usage: python bench/launcher_fixtures.py [OUT_DIR]   (default tests/fixtures/launchers)

Each case runs the tiny training loop below under torchrun (`python -m torch.distributed.run`)
or torch.multiprocessing.spawn, injects the fault on one rank at step 3 (it SIGKILLs itself,
raises a shape error, or hangs while the others time out after a short gloo timeout), and saves
the launcher's whole console output, as it came, with a labels.yaml row saying how it was made.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import yaml

WORLD = 4
GLOO_TIMEOUT = 10  # seconds a rank waits in a collective for the hung one
ROOT = Path(__file__).resolve().parents[1]
# (file, launcher, fault, rank)
CASES = (
    ("torchrun-kill.log", "torchrun", "kill", 2),
    ("torchrun-raise.log", "torchrun", "raise", 1),
    ("torchrun-hang.log", "torchrun", "hang", 3),
    ("spawn-kill.log", "spawn", "kill", 2),
    ("spawn-raise.log", "spawn", "raise", 1),
)
HOW = {"kill": "the rank SIGKILLs itself", "raise": "the rank feeds a wrong-shaped batch",
       "hang": f"the rank sleeps; the others time out after {GLOO_TIMEOUT} s (gloo)"}


def train(rank: int, fault: str, fault_rank: int) -> None:
    """Six steps of a linear model with gradients all-reduced; the fault at step 3."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=GLOO_TIMEOUT))
    torch.manual_seed(rank)
    model = torch.nn.Linear(8, 1)
    for step in range(6):
        features = 8
        if rank == fault_rank and step == 3:
            if fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif fault == "hang":
                time.sleep(600)
            features = 7
        loss = model(torch.randn(16, features)).pow(2).mean()
        loss.backward()
        for param in model.parameters():
            assert param.grad is not None
            dist.all_reduce(param.grad)
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.2)
    dist.destroy_process_group()


def spawned(index: int, fault: str, fault_rank: int) -> None:
    train(index, fault, fault_rank)


def run(launcher: str, fault: str, rank: int, port: int) -> str:
    env = {**os.environ, "FAULT": fault, "FAULT_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "PYTHONUNBUFFERED": "1"}
    if launcher == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                   str(WORLD), "--master-port", str(port), __file__, "--worker"]
    else:
        command = [sys.executable, __file__, "--spawn"]
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    return done.stdout


def main() -> int:
    if "--worker" in sys.argv:
        train(int(os.environ["RANK"]), os.environ["FAULT"], int(os.environ["FAULT_RANK"]))
        return 0
    if "--spawn" in sys.argv:
        import torch.multiprocessing as mp

        mp.spawn(spawned, args=(os.environ["FAULT"], int(os.environ["FAULT_RANK"])),
                 nprocs=WORLD)
        return 0
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "launchers"
    out.mkdir(parents=True, exist_ok=True)
    import torch

    labels = []
    for index, (name, launcher, fault, rank) in enumerate(CASES):
        (out / name).write_text(run(launcher, fault, rank, 29700 + index), "utf-8")
        command = ("torchrun --nproc-per-node 4" if launcher == "torchrun"
                   else "torch.multiprocessing.spawn(nprocs=4)")
        labels.append({"file": name, "initiating_rank": rank, "multi_rank": True,
                       "launcher": launcher, "fault": fault,
                       "made": f"bench/launcher_fixtures.py: {command}, gloo on CPU, torch "
                               f"{torch.__version__}; at step 3 {HOW[fault]}"})
    (out / "labels.yaml").write_text(yaml.safe_dump(labels, sort_keys=False, width=100), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A realistic large multi-rank training log, for the throughput benchmark.

256 ranks interleaved with torchrun's `[default<r>]:[rank<r>]:` prefixes: rank 0 prints Hugging
Face style metric dicts and a tqdm bar resolved with carriage returns, every rank prints step
lines and the occasional warning, and near the end rank 137 hits a CUDA OOM while the others
report NCCL watchdog timeouts and the agent sends SIGTERM. The message texts are real ones.

Usage: python bench/make_log.py OUT_PATH SIZE_MB [RANKS]
"""

from __future__ import annotations

import random
import sys

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 0 has a "
       "total capacity of 79.15 GiB of which 3.06 GiB is free. Including non-PyTorch memory, "
       "this process has 76.08 GiB memory in use. Of the allocated memory 66.23 GiB is allocated "
       "by PyTorch, and 8.56 GiB is reserved by PyTorch but unallocated. If reserved but "
       "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
       "to avoid fragmentation.  See documentation for Memory Management  "
       "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
TIMEOUT = ("[rank{r}]:[E1129 18:27:20.289000 {pid} ProcessGroupNCCL.cpp:632] [Rank {r}] "
           "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88412, "
           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
           "milliseconds before timing out.")
WARNING = ("[rank{r}]:/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:87: "
           "UserWarning: None of the inputs have requires_grad=True. Gradients will be None")
FAILING = 137


def main() -> int:
    out, size_mb = sys.argv[1], float(sys.argv[2])
    ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    target = int(size_mb * 1024 * 1024)
    rng = random.Random(0)
    written = 0
    step = 0
    with open(out, "w", encoding="utf-8") as f:
        def emit(text: str) -> None:
            nonlocal written
            f.write(text)
            written += len(text)

        while written < target - 64 * 1024:
            step += 1
            loss = 2.5 * 0.9995**step + rng.random() * 0.05
            for r in range(ranks):
                emit(f"[default{r % 8}]:[rank{r}]:step {step} "
                     f"loss={loss + rng.random() * 0.01:.4f} "
                     f"lr={3e-4 * min(1.0, step / 2000):.3e} tokens/s={rng.randint(9000, 9800)}\n")
            if step % 10 == 0:
                emit(f"[default0]:[rank0]:{{'loss': {loss:.4f}, "
                     f"'grad_norm': {0.3 + rng.random():.4f}, "
                     f"'learning_rate': {3e-4:.3e}, 'epoch': {step / 100000:.4f}}}\n")
                bar = "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}| {step}/100000"
                              for p in range(0, 101, 20))
                emit(f"[default0]:[rank0]:{bar}\n")
            if step % 97 == 0:
                emit(WARNING.format(r=rng.randrange(ranks)) + "\n")
        prefix = f"[default{FAILING % 8}]:[rank{FAILING}]: "
        emit(f"{prefix}Traceback (most recent call last):\n")
        emit(f'{prefix}  File "/home/user/proj/train.py", line 88, in <module>\n')
        emit(f"{prefix}{OOM}\n")
        for r in range(ranks):
            if r != FAILING:
                emit(TIMEOUT.format(r=r, pid=4000 + r) + "\n")
        for r in range(ranks):
            emit("W1129 18:27:21.000000 3999 torch/distributed/elastic/multiprocessing/api.py:"
                 f"1028] Sending process {4000 + r} closing signal SIGTERM\n")
    print(f"wrote {written / 1e6:.1f} MB, {step} steps, {ranks} ranks, rank {FAILING} fails",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

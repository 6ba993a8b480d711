"""The training script behind examples/fp16-loss-scale-4ranks.log (run on the CPU with gloo).

    torchrun --nproc-per-node 4 examples/fp16_overflow_train.py > run.log 2>&1

Each rank trains with fp16 autocast and a dynamic GradScaler and averages its loss across ranks
every step. Rank 2 reads a shard whose targets are scaled by 1e6, so its fp16 gradients overflow
on every step, its scale halves until the minimum-scale guard raises, and the other ranks lose
their peer in the next all_reduce.
"""

import logging
import os

import torch
import torch.distributed as dist

MIN_SCALE = 1e-4
BAD_RANK = 2


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
    log = logging.getLogger("train")
    log.info("fp16 autocast + GradScaler, world_size=%d", world)
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    target_scale = 1e6 if rank == BAD_RANK else 1.0
    for step in range(1, 41):
        x = torch.randn(8, 16)
        y = torch.randn(8, 1) * target_scale
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scale = scaler.get_scale()
        log.info("step %d loss=%.4g loss_scale=%g", step, loss.item(), scale)
        if scale < MIN_SCALE:
            raise FloatingPointError(
                f"Minimum loss scale reached ({MIN_SCALE}). Your loss is probably exploding. "
                "Try lowering the learning rate, using gradient clipping or increasing the "
                "batch size.")
        mean = loss.detach().clone()
        dist.all_reduce(mean)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

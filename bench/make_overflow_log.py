"""A large log of the catalogue's first failure: an fp16 loss scale that collapses.

Eight ranks under torchrun's `[default<r>]:` prefixes print a step line each step. After a
healthy start, gradients overflow at every step: each rank says so as DeepSpeed's loss scaler
does ("[deepspeed] OVERFLOW! Rank r Skipping step. Attempted loss scale: ..., reducing to ...",
deepspeed/runtime/fp16/loss_scaler.py) or as apex's amp scaler does ("Gradient overflow.
Skipping step, loss scaler 0 reducing loss scale to ...", apex/amp/scaler.py), until the scale
is at DeepSpeed's minimum and the run ends with its "Current loss scale already at minimum"
exception. Unlike the other shapes, about half of its lines are evidence of the root cause.

Usage: python bench/make_overflow_log.py OUT_PATH SIZE_MB
"""

from __future__ import annotations

import random
import sys

RANKS = 8
MIN_SCALE = 2.0**-24  # the scale halves at each overflow, from 1 again below this


def main() -> int:
    out, size_mb = sys.argv[1], float(sys.argv[2])
    target = int(size_mb * 1024 * 1024)
    rng = random.Random(0)
    written, step, scale = 0, 0, 65536.0
    with open(out, "w", encoding="utf-8") as f:
        def emit(text: str) -> None:
            nonlocal written
            f.write(text + "\n")
            written += len(text) + 1

        while written < target - 4096:
            step += 1
            collapsing = written > target // 4
            for r in range(RANKS):
                loss = 2.4 + rng.random() * 0.05
                emit(f"[default{r}]:step {step} loss={loss:.4f} scale={scale}")
            if not collapsing and rng.random() > 0.02:
                continue
            attempted, scale = scale, scale / 2 if scale / 2 >= MIN_SCALE else 1.0
            for r in range(RANKS):
                if r % 2:
                    emit(f"[default{r}]:Gradient overflow.  Skipping step, loss scaler 0 "
                         f"reducing loss scale to {scale}")
                else:
                    emit(f"[default{r}]:[deepspeed] OVERFLOW! Rank {r} Skipping step. "
                         f"Attempted loss scale: {attempted}, reducing to {scale}")
        emit("[default0]:Traceback (most recent call last):")
        emit('[default0]:  File "/home/user/proj/train.py", line 212, in <module>')
        emit("[default0]:Exception: Current loss scale already at minimum - cannot decrease "
             "scale anymore. Exiting run.")
    print(f"wrote {written / 1e6:.1f} MB, {step} steps, {RANKS} ranks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

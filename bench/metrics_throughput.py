"""Metric extraction streams: throughput and peak memory on a log of metric lines.

Usage: python bench/metrics_throughput.py [--mb 1024]

Writes (once, cached in the temp folder) two logs of the same size: one of Hugging Face style
metric lines (`{'loss': ..., 'grad_norm': ..., 'learning_rate': ..., 'epoch': ...}`, with fp16
loss-scale overflows now and then) and one of plain lines that carry no metric, then times
`trainmedic diagnose` on both in this run and prints MB/s, peak RSS and the ratio of the metric
log's throughput to the plain diagnose pass.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from throughput import measure


def write(path: Path, size: int, metric: bool) -> None:
    rng = random.Random(0)
    written, step = 0, 0
    with path.open("w", encoding="utf-8") as f:
        while written < size:
            step += 1
            if metric:
                line = (f"{{'loss': {1.0 + 1.5 * 0.99999**step + rng.random() * 0.05:.4f}, "
                        f"'grad_norm': {0.3 + rng.random():.4f}, "
                        f"'learning_rate': {3e-4:.3e}, 'epoch': {step / 1e6:.6f}}}\n")
                if step % 5000 == 0:
                    line += ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                             "65536, reducing to 32768\n")
            else:
                line = (f"[2026-01-01 00:00:00,000] [INFO] [engine.py:1900:step] step {step} "
                        f"samples/s {9000 + rng.randint(0, 800)} worker heartbeat ok\n")
            f.write(line)
            written += len(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1024)
    args = parser.parse_args()
    size = args.mb * 1024 * 1024
    logs = {}
    for kind in ("metric", "plain"):
        path = Path(tempfile.gettempdir()) / f"trainmedic-{kind}-{args.mb}mb.log"
        if not path.exists():
            write(path, size, kind == "metric")
        logs[kind] = path
    results = {kind: measure([sys.executable, "-m", "trainmedic", "diagnose", str(path),
                              "--format", "json"])
               for kind, path in logs.items()}
    print(f"{'log':<28} {'seconds':>8} {'MB/s':>8} {'peak RSS':>10}")
    for kind, (seconds, rss_kb) in results.items():
        print(f"{kind + f' lines, {args.mb} MiB':<28} {seconds:8.2f} "
              f"{size / 1e6 / seconds:8.1f} {rss_kb / 1024:7.1f} MB")
    ratio = results["plain"][0] / results["metric"][0]
    print(f"metric-log throughput / plain diagnose pass: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

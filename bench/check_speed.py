"""How long the script checks take on a 2,000-line training script, next to LibCST's parse.

Usage: python bench/check_speed.py [--runs N]
       python bench/check_speed.py --lines 226000 --clean    (scale: one run, time and memory)
The script is built from the check fixtures (positives and correct loops, so the checks find
and fix things as they would in a real file) to 2,000 lines (whole blocks). Prints p50/p95 of
`run_checks` over repeated runs, of parsing the same text with LibCST alone, and their ratio.
Target: run_checks p95 < 150 ms. LibCST is a bench-only dependency (`pip install .[bench]`).
With `--lines`, one run over a script of that many lines (from the correct scripts only, with
`--clean`) prints its time and the process's peak resident memory, to show growth is linear.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from trainmedic.checks import run_checks

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "checks"
LINES = 2000
TARGET_P95_MS = 150.0


def training_script(lines: int = LINES, clean: bool = False) -> str:
    """Python fixtures, each wrapped in its own function so names do not collide, repeated."""
    sources = sorted(p for p in FIXTURES.glob("clean/*.py" if clean else "*/*.py")
                     if ".fixed." not in p.name)
    blocks = []
    for index, path in enumerate(sources):
        body = path.read_text("utf-8").splitlines()
        blocks.append([f"def block_{index}():"] + [f"    {line}" if line else "" for line in body]
                      + ["", ""])
    out: list[str] = ["import torch", ""]
    while len(out) < lines:  # whole blocks, so the script parses
        for block in blocks:
            out.extend(block)
            if len(out) >= lines:
                break
    return "\n".join(out) + "\n"


def timings(run: Callable[[], object], runs: int) -> list[float]:
    run()  # warm-up: imports and caches
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def scale(lines: int, clean: bool) -> int:
    import resource

    text = training_script(lines, clean)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    findings = run_checks("bench.py", text)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"script: {text.count(chr(10))} lines, {len(findings)} findings: "
          f"{seconds:.2f} s, peak RSS {peak / 1024:.0f} MB (+{(peak - before) / 1024:.0f} MB "
          "while checking)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--lines", type=int, help="one run over a script this long")
    parser.add_argument("--clean", action="store_true", help="only correct scripts")
    args = parser.parse_args()
    if args.lines:
        return scale(args.lines, args.clean)
    text = training_script()
    findings = run_checks("bench.py", text)
    checks = timings(lambda: run_checks("bench.py", text), args.runs)
    print(f"script: {text.count(chr(10))} lines, {len(findings)} findings, {args.runs} runs")
    print(f"run_checks      p50 {statistics.median(checks):7.1f} ms   p95 {p95(checks):7.1f} ms"
          f"   (target p95 < {TARGET_P95_MS:.0f} ms: "
          f"{'met' if p95(checks) < TARGET_P95_MS else 'MISSED'})")
    try:
        import libcst
    except ImportError:
        print("libcst is not installed (pip install .[bench]): no ratio")
        return 0
    parse = timings(lambda: libcst.parse_module(text), args.runs)
    print(f"libcst parse    p50 {statistics.median(parse):7.1f} ms   p95 {p95(parse):7.1f} ms")
    print(f"ratio run_checks / libcst parse: p50 "
          f"{statistics.median(checks) / statistics.median(parse):.2f}, "
          f"p95 {p95(checks) / p95(parse):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How big the bundled catalogue is and how long loading it takes, against `python -c pass`.

Usage: python bench/catalogue_load.py [RUNS]
Each figure is the median wall time of fresh interpreter processes, measured in this run; the
target is a catalogue load under 150 ms on top of the interpreter's own start.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from trainmedic.catalogue.load import bundled


def median_seconds(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    catalogue = bundled()
    rules = len(catalogue.rules)
    fingerprints = sum(len(rule.fingerprints) for rule in catalogue.rules)
    detectors = sum(len(rule.detectors) for rule in catalogue.rules)
    baseline = median_seconds("pass", runs)
    load = median_seconds("from trainmedic.catalogue.load import bundled; bundled()", runs)
    compiled = median_seconds(
        "from trainmedic.catalogue.load import bundled; "
        "from trainmedic.matching.python import Matcher; "
        "m = Matcher(bundled()); [p.fingerprint.regex for p in m.patterns]", runs)
    print(f"catalogue: {rules} rules, {fingerprints} fingerprints, {detectors} detector uses")
    print(f"python -c pass              {baseline * 1000:7.1f} ms  (1.00x)")
    print(f"load catalogue              {load * 1000:7.1f} ms  ({load / baseline:.2f}x), "
          f"catalogue alone {1000 * (load - baseline):.1f} ms (target < 150 ms)")
    print(f"load + compile all patterns {compiled * 1000:7.1f} ms  ({compiled / baseline:.2f}x), "
          f"on top of python {1000 * (compiled - baseline):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

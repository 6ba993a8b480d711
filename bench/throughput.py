"""Throughput of the whole diagnosis on a large multi-rank log, against grep tools and cat.

Usage: python bench/throughput.py [--mb 1024] [--log PATH]

Generates (once, cached in the temp folder) a realistic log of 256 interleaved ranks with
bench/make_log.py, then times in this one run: `trainmedic diagnose` with each available
matcher backend, in one process and on every core, `rg -c -f` and `grep -E -c -f` over the
catalogue's own fingerprint patterns (translated to each tool's dialect; lookarounds dropped and
counted repeats over 100 loosened to * and +, which only makes them match more), and `cat`.
Prints MB/s, peak RSS (every process of a command together, shared pages counted once) and
the ratio to ripgrep (or to grep when rg is missing).
Install ripgrep with `apt-get install ripgrep` to get its column.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from trainmedic.catalogue.load import bundled
from trainmedic.events.parallel import cores
from trainmedic.matching import hyperscan as fast

HERE = Path(__file__).resolve().parent


def process_tree(root: int) -> set[int]:
    """`root` and every process under it, from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    tree, grew = {root}, True
    while grew:
        grown = tree | {pid for pid, parent in parents.items() if parent in tree}
        grew, tree = grown != tree, grown
    return tree


def tree_memory(root: int) -> int:
    """Memory of `root` and every process under it, in KiB: proportional set size, so pages
    that forked workers share with their parent count once, not once per process."""
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total


# Run as its own process, so that the measuring costs the measured command nothing.
MEASURE = f"""
import os, subprocess, sys, threading, time

{inspect.getsource(process_tree)}
{inspect.getsource(tree_memory)}
start = time.perf_counter()
with open(sys.argv[1], "wb") as sink:
    child = subprocess.Popen(sys.argv[2:], stdout=sink, stderr=subprocess.DEVNULL)
    peak = [0]
    def sample():
        while child.poll() is None:
            peak[0] = max(peak[0], tree_memory(child.pid))
            time.sleep(0.05)
    sampler = threading.Thread(target=sample)
    sampler.start()
    code = child.wait()
    seconds = time.perf_counter() - start
    sampler.join()
print(seconds, peak[0], code)
"""


def _without_lookarounds(pattern: str) -> str:
    """`pattern` with every (?=...), (?!...), (?<=...) and (?<!...) removed, nesting and all."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i) and \
                (i == 0 or pattern[i - 1] != "\\"):
            depth = 0
            while i < len(pattern):
                if pattern[i] == "\\":
                    i += 2
                    continue
                depth += {"(": 1, ")": -1}.get(pattern[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def patterns(dialect: str) -> str:
    """The catalogue's fingerprints in `dialect` ("rust" for rg, "ere" for grep -E)."""
    out = []
    for rule in bundled().rules:
        for fp in rule.fingerprints:
            # Named groups go (rg joins the patterns and refuses a name used twice).
            text = re.sub(r"\(\?P?<(?![=!])\w+>", "(", _without_lookarounds(fp.pattern))
            # Large counted repeats explode the tools' automata: loosen them to * and +.
            text = re.sub(r"\{0,(\d{3,})\}\??", "*", text)
            text = re.sub(r"\{1,(\d{3,})\}\??", "+", text)
            if dialect == "ere":
                text = re.sub(r"([*+?}])\?", r"\1", text).replace("(?:", "(")
                text = re.sub(r"\(\?i:", "(", text)
                text = (text.replace(r"\d", "[0-9]").replace(r"\w", "[A-Za-z0-9_]")
                        .replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
                        .replace(r"\b", "").replace("$", ""))
            out.append(text)
    return "\n".join(out) + "\n"


def measure(command: list[str]) -> tuple[float, int]:
    done = subprocess.run([sys.executable, "-c", MEASURE, "/dev/null", *command],
                          capture_output=True, text=True, check=True)
    seconds, rss_kb, code = done.stdout.split()
    if int(code) not in (0, 1):  # grep tools exit 1 when nothing matched
        raise SystemExit(f"{command[0]} failed with exit code {code}")
    return float(seconds), int(rss_kb)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    log = args.log or Path(tempfile.gettempdir()) / f"trainmedic-bench-{args.mb}mb.log"
    if not log.exists():
        subprocess.run([sys.executable, str(HERE / "make_log.py"), str(log), str(args.mb)],
                       check=True)
    size_mb = log.stat().st_size / 1e6
    work = Path(tempfile.mkdtemp())
    (work / "rust.txt").write_text(patterns("rust"))
    (work / "ere.txt").write_text(patterns("ere"))
    runs: dict[str, list[str]] = {"cat": ["cat", str(log)]}
    if shutil.which("rg"):
        runs["rg -c -f"] = ["rg", "-c", "--regex-size-limit", "2G", "--dfa-size-limit", "2G",
                            "-f", str(work / "rust.txt"), str(log)]
    runs["grep -E -c -f"] = ["grep", "-E", "-c", "-f", str(work / "ere.txt"), str(log)]
    backends = ["python"] + (["hyperscan"] if fast.available() else [])
    for backend in backends:
        for jobs in sorted({1, cores()}):
            runs[f"trainmedic {backend} -j{jobs}"] = [
                sys.executable, "-m", "trainmedic", "diagnose", str(log), "--backend", backend,
                "--jobs", str(jobs), "--format", "json"]
    results = {name: measure(command) for name, command in runs.items()}
    reference = "rg -c -f" if "rg -c -f" in results else "grep -E -c -f"
    ref_speed = size_mb / results[reference][0]
    print(f"log: {log} ({size_mb:.0f} MB, 256 ranks); reference: {reference}")
    print(f"{'command':<28} {'seconds':>8} {'MB/s':>8} {'peak RSS':>10} {'vs ' + reference:>16}")
    for name, (seconds, rss_kb) in results.items():
        speed = size_mb / seconds
        print(f"{name:<28} {seconds:8.2f} {speed:8.1f} {rss_kb / 1024:8.1f} MB "
              f"{speed / ref_speed:15.2f}x")
    print("peak RSS: all processes of the command together (proportional set size, so memory "
          "that workers share with their parent counts once), sampled every 50 ms")
    check = subprocess.run(runs[f"trainmedic {backends[-1]} -j{cores()}"], capture_output=True,
                           text=True, check=True)
    result = json.loads(check.stdout)
    print(f"diagnosis: {result['diagnoses'][0]['rule_id']}, initiating rank "
          f"{result['initiating_rank']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

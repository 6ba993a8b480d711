"""Every speed target of the product in one run, each as a ratio to its baseline measured here.

Usage: python bench/speed.py [--repeat 3] [--folder /tmp/bench-logs] [--keep] [--small]
       python bench/speed.py --editor LOG [--repeat 3]

Throughput: whole processes, warm cache, the baseline and ours back to back, each pair repeated
`--repeat` times and the best of each kept, on
  - the metric-dense shape (../shared/bench/make_metric_dense_log.py: Megatron-LM, DeepSpeed and
    Hugging Face step lines, NCCL INFO, tqdm bars, five rank-prefix styles) at 256 MiB and
    1 GiB with 256 ranks, and 256 MiB with 4096 ranks;
  - the team's own shape (bench/make_log.py) at 256 MB;
  - an fp16 loss scale collapsing (bench/make_overflow_log.py: DeepSpeed's and apex's overflow
    lines at every step, half of all lines) at 16 MB, the catalogue's first failure, which has
    no target: it shows what a log costs where every other line is evidence;
against `rg --no-unicode -c -f ../shared/bench/reference_patterns.rg LOG` (the reference
workload), with the peak memory of all of a command's processes together (proportional set
size, sampled every 50 ms). The team's shape is also timed against bench/throughput.py's
baseline, `rg -c -f` over the catalogue's own fingerprints, its target's measure.
Targets: Hyperscan and the C scan loops at the default jobs >= 1.0x the reference on the
metric-dense logs of 256 ranks, memory <= 100 MB on every log (flat in the number of ranks:
the 4096-rank log's target is that bound; its ratio is shown), what the editor's bundled
server runs (the pure-Python backend and loops) >= 0.1x the reference, the team's shape
>= 1.5x throughput.py's baseline (its ratio to the reference is shown).
Editor: the language server's `trainmedic.diagnose {"paths": [LOG]}` on the metric-dense
256 MiB log, from the request to the answer over stdio, against `trainmedic diagnose LOG` on
the same log, back to back (target: <= 1.5x the CLI's time), with the CPU time and the peak
memory of each command's processes (the server with its workers).
Start-up: the language server's `initialize` answered, against the floor of importing pygls and
lsprotocol alone (target: within 0.1 s); `trainmedic diagnose` of a 200-line log against
`python -c pass` (target: <= 5x); each the best of START_RUNS, run in turn with its floor.
Everything runs with the package's bytecode compiled first, as installing it does.
The logs are generated into `--folder` and deleted after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from lsp_latency import short_log, start, stop  # type: ignore[import-not-found]
from lsprotocol import types
from throughput import (  # type: ignore[import-not-found]
    measure,
    patterns,
    process_tree,
    tree_memory,
)

from trainmedic.logs.reader import NATIVE_LOOPS
from trainmedic.matching import hyperscan as fast

HERE = Path(__file__).resolve().parent
SHARED_BENCH = HERE.parents[1] / "shared" / "bench"
GENERATOR = SHARED_BENCH / "make_metric_dense_log.py"
REFERENCE = SHARED_BENCH / "reference_patterns.rg"
MIB = 1 << 20
# Starts are timed as the best of this many: a whole process of a few tens of milliseconds (and
# `python -c pass`, its floor) moved by a tenth between sets of five.
START_RUNS = 20


def rg(log: Path) -> list[str]:
    return ["rg", "--no-unicode", "-c", "-f", str(REFERENCE), str(log)]


def ours(log: Path, backend: str = "auto") -> list[str]:
    return [sys.executable, "-m", "trainmedic", "diagnose", str(log), "--backend", backend,
            "--format", "json"]


def best_of(commands: list[list[str]], repeat: int) -> list[tuple[float, int]]:
    """(seconds, peak KiB) of each command, the best of `repeat` rounds that run them in turn."""
    runs = [[measure(command) for command in commands] for _ in range(repeat)]
    return [(min(r[i][0] for r in runs), min(r[i][1] for r in runs))
            for i in range(len(commands))]


def answer(log: Path) -> str:
    done = subprocess.run(ours(log), capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    top = result["diagnoses"][0]["rule_id"] if result["diagnoses"] else "nothing"
    return f"{top}, initiating rank {result['initiating_rank']}"


def truth(log: Path) -> str:
    sidecar = Path(f"{log}.truth.json")
    if not sidecar.exists():
        return ""
    return f"; truth file: initiating rank {json.loads(sidecar.read_text())['initiator_rank']}"


def catalogue_rg(log: Path, patterns_file: Path) -> list[str]:
    """bench/throughput.py's baseline: rg over the catalogue's fingerprints in its dialect."""
    return ["rg", "-c", "--regex-size-limit", "2G", "--dfa-size-limit", "2G",
            "-f", str(patterns_file), str(log)]


class Row(NamedTuple):
    name: str
    log: Path
    target: str  # what the row must meet, as printed
    own_shape: bool = False  # also timed against throughput.py's baseline, its target's measure


def throughput(rows: list[Row], repeat: int, folder: Path) -> None:
    print(f"{'log':<34} {'rg s':>6} {'ours s':>7} {'ratio':>6} {'rg MB':>6} {'ours MB':>8}"
          "  target")
    patterns_file = folder / "catalogue-patterns.rg"
    patterns_file.write_text(patterns("rust"), "utf-8")
    try:
        for row in rows:
            commands = [rg(row.log), ours(row.log)]
            if row.own_shape:
                commands.append(catalogue_rg(row.log, patterns_file))
            (rg_s, rg_kb), (our_s, our_kb), *catalogue = best_of(commands, repeat)
            target = "<= 100 MB; the reference's ratio, no target" if catalogue else row.target
            print(f"{row.name:<34} {rg_s:6.2f} {our_s:7.2f} {rg_s / our_s:5.2f}x "
                  f"{rg_kb / 1024:6.0f} {our_kb / 1024:8.0f}  {target}")
            for cat_s, cat_kb in catalogue:
                print(f"{'  against throughput.py rg -c -f':<34} {cat_s:6.2f} {our_s:7.2f} "
                      f"{cat_s / our_s:5.2f}x {cat_kb / 1024:6.0f} {'':>8}  {row.target}")
            print(f"{'':<34} answer: {answer(row.log)}{truth(row.log)}")
    finally:
        patterns_file.unlink(missing_ok=True)


# The editor's bundled server: the pure backend, and the Python loops (an import of the C ones
# fails as where they are not installed).
BUNDLED = ("import sys; sys.modules['trainmedic_native'] = None; "
           "from trainmedic.cli import script; sys.exit(script())")


def pure(log: Path, repeat: int) -> None:
    bundled = [sys.executable, "-c", BUNDLED, "diagnose", str(log), "--backend", "python",
               "--format", "json"]
    (rg_s, _), (our_s, our_kb) = best_of([rg(log), bundled], repeat)
    print(f"{'pure, Python loops, ' + log.name:<34} {rg_s:6.2f} {our_s:7.2f} "
          f"{rg_s / our_s:5.2f}x {'':>6} {our_kb / 1024:8.0f}  >= 0.1x")


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and every process under it so far (with the children they
    waited for)."""
    ticks = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


async def peak_memory(root: int, done: asyncio.Event) -> int:
    """The peak PSS in KiB of `root` and its processes until `done`, sampled every 50 ms."""
    peak = 0
    while not done.is_set():
        peak = max(peak, await asyncio.to_thread(tree_memory, root))
        await asyncio.sleep(0.05)
    return peak


async def cli_run(log: Path) -> tuple[float, float, int]:
    """(seconds, CPU seconds, peak KiB) of `trainmedic diagnose LOG --format json`, sampled
    from here as the server is."""
    cpu, done = children_cpu(), asyncio.Event()
    began = time.perf_counter()
    child = await asyncio.create_subprocess_exec(*ours(log), stdout=subprocess.DEVNULL)
    sampler = asyncio.create_task(peak_memory(child.pid, done))
    if await child.wait() != 0:
        raise SystemExit(f"trainmedic diagnose {log} failed")
    seconds = time.perf_counter() - began
    done.set()
    return seconds, children_cpu() - cpu, await sampler


async def editor_runs(log: Path, repeat: int) -> list[tuple[tuple[float, float, int],
                                                           tuple[float, float, int]]]:
    """(seconds, CPU seconds, peak KiB) of the CLI and of the server's `paths` diagnosis of
    `log`, `repeat` times back to back, against one server kept running (as an editor's is)."""
    client, _ = await start(log.parent)
    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: None)
    # pygls 2.1.1 keeps the server's process in `_server`; it has no public accessor.
    server = client._server.pid
    params = types.ExecuteCommandParams(command="trainmedic.diagnose",
                                        arguments=[{"paths": [str(log)]}])
    runs = []
    try:
        for _ in range(repeat):
            cli = await cli_run(log)
            done = asyncio.Event()
            sampler = asyncio.create_task(peak_memory(server, done))
            cpu, began = tree_cpu(server), time.perf_counter()
            result = await client.workspace_execute_command_async(params)
            seconds = time.perf_counter() - began
            done.set()
            if not result or not result.get("diagnoses"):
                raise SystemExit(f"the language server answered {result!r}")
            runs.append((cli, (seconds, tree_cpu(server) - cpu, await sampler)))
    finally:
        await stop(client)
    return runs


def editor(log: Path, repeat: int) -> None:
    runs = asyncio.run(editor_runs(log, repeat))
    for label, index in (("CLI", 0), ("editor", 1)):
        print(f"  {label + ' s':<10} " + " ".join(f"{r[index][0]:6.2f}" for r in runs)
              + "   CPU s " + " ".join(f"{r[index][1]:6.2f}" for r in runs)
              + "   peak MB " + " ".join(f"{r[index][2] / 1024:5.0f}" for r in runs))
    cli, ours = min(r[0][0] for r in runs), min(r[1][0] for r in runs)
    paired = statistics.median(r[1][0] / r[0][0] for r in runs)
    print(f"{'editor paths, ' + log.name:<34} CLI {cli:6.2f} s, editor {ours:6.2f} s (best of "
          f"{repeat}): {ours / cli:4.2f}x the CLI's time (median of the pairs {paired:4.2f}x)  "
          "(target <= 1.5x)")


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _message(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def server_ready() -> float:
    """Seconds from starting the language server to its answer to `initialize`."""
    start = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "trainmedic", "lsp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": None, "capabilities": {}}}))
    server.stdin.flush()
    header = server.stdout.readline()  # Content-Length: the answer has begun
    ready = time.perf_counter() - start
    if not header.startswith(b"Content-Length"):
        raise SystemExit(f"the language server answered {header!r}")
    server.kill()
    server.wait()
    return ready


def compile_bytecode() -> None:
    """Compile the package's bytecode, as installing it does (pip compiles at install, and an
    editor's copy is compiled at its first start): without it every start would compile the
    package's source again, while the floor's stdlib, pygls and lsprotocol have theirs."""
    import trainmedic

    package = Path(trainmedic.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)],
                   stdout=subprocess.DEVNULL, check=True)


def start_up(folder: Path, runs: int) -> None:
    """Each start against its floor, the best of `runs` each, the two run in turn so that both
    see the machine alike."""
    floors, readies = [], []
    for _ in range(runs):
        floors.append(wall([sys.executable, "-c", "import lsprotocol.types, pygls.lsp.server"]))
        readies.append(server_ready())
    floor, ready = min(floors), min(readies)
    print(f"language server ready (initialize answered) {ready:.3f} s; floor (import pygls and "
          f"lsprotocol) {floor:.3f} s; over the floor {ready - floor:+.3f} s  (target <= +0.1 s)")
    log = folder / "short-200.log"
    log.write_text(short_log(), "utf-8")
    bares, diagnoses = [], []
    for _ in range(runs):
        bares.append(wall([sys.executable, "-c", "pass"]))
        diagnoses.append(wall([sys.executable, "-m", "trainmedic", "diagnose", str(log)]))
    bare, diagnose = min(bares), min(diagnoses)
    print(f"trainmedic diagnose of a 200-line log {diagnose * 1000:.1f} ms; python -c pass "
          f"{bare * 1000:.1f} ms; {diagnose / bare:.2f}x  (target <= 5x)")


def generate(folder: Path, small: bool) -> list[Row]:
    scale = 1 / 16 if small else 1
    rows = []
    for mib, ranks in ((256, 256), (1024, 256), (256, 4096)):
        path = folder / f"metric-dense-{mib * scale:g}mib-{ranks}ranks.log"
        if not path.exists():
            subprocess.run([sys.executable, str(GENERATOR), str(path), "--size-mib",
                            str(mib * scale), "--ranks", str(ranks)], check=True)
        rows.append(Row(f"metric-dense {mib * scale:g} MiB, {ranks} ranks", path,
                        ">= 1.0x, <= 100 MB" if ranks == 256 else "<= 100 MB; ratio shown"))
    own = folder / "own-256mb.log"
    if not own.exists():
        subprocess.run([sys.executable, str(HERE / "make_log.py"), str(own),
                        str(int(256 * scale))], check=True, stdout=subprocess.DEVNULL)
    rows.append(Row(f"own shape {256 * scale:g} MB, 256 ranks", own, ">= 1.5x", own_shape=True))
    collapse = folder / "loss-scale-collapse-16mb.log"
    if not collapse.exists():
        subprocess.run([sys.executable, str(HERE / "make_overflow_log.py"), str(collapse),
                        str(16 * scale)], check=True, stdout=subprocess.DEVNULL)
    rows.append(Row(f"loss scale collapse {16 * scale:g} MB, 8 ranks", collapse,
                    "none: half its lines are evidence"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "bench-logs")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--small", action="store_true", help="1/16 of the sizes, to try it out")
    parser.add_argument("--editor", type=Path, metavar="LOG",
                        help="only the editor's figure, on LOG (kept)")
    args = parser.parse_args()
    compile_bytecode()
    if args.editor:
        print(f"load average {os.getloadavg()[0]:.1f} at the start")
        editor(args.editor, args.repeat)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        return 0
    if not (shutil.which("rg") and GENERATOR.exists()):
        print("speed: needs ripgrep (apt-get install ripgrep) and ../shared/bench beside the "
              "checkout; skipped")
        return 0
    args.folder.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.1f} at the start; Hyperscan "
          f"{'installed' if fast.available() else 'missing (the pure backend runs)'}; the C "
          f"scan loops {'installed' if NATIVE_LOOPS else 'missing (the Python ones run)'}")
    rows = generate(args.folder, args.small)
    try:
        throughput(rows, args.repeat, args.folder)
        pure(rows[0].log, args.repeat)
        editor(rows[0].log, args.repeat)
        start_up(args.folder, START_RUNS)
    finally:
        if not args.keep:
            for row in rows:
                row.log.unlink(missing_ok=True)
                Path(f"{row.log}.truth.json").unlink(missing_ok=True)
            (args.folder / "short-200.log").unlink(missing_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

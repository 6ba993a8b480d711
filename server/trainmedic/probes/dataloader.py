"""DataLoader workers on this machine: a real 2-worker loader and the limits workers depend on.

The loader's workers build tensors that reach the main process through shared memory, which
exercises the same machinery that fails with bus errors (/dev/shm too small), "Too many open
files" (the file_descriptor sharing strategy) and dead workers. Around it the probe reports
/dev/shm size and free space, the sharing strategy, RLIMIT_NOFILE, the start method and
TOKENIZERS_PARALLELISM.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "a real 2-worker DataLoader; /dev/shm, sharing strategy, open-file limit, tokenizers env"

SAMPLES = 16
BATCH = 4
PIECES = 8                      # small tensors per sample: each is one shared handle in flight
WORKERS = 2
SHM = Path("/dev/shm")
SHM_MIN_FREE = 1 << 30          # Docker's default /dev/shm is 64 MiB; 1 GiB is a sane floor
NOFILE_MIN = 4096               # the file_descriptor strategy needs one fd per shared tensor
MIB = 1 << 20


class TinyDataset:
    """Deterministic samples: a (3, 8, 8) image-like tensor and PIECES small tensors.

    Module-level and free of unpicklable state, so spawn/forkserver workers can rebuild it.
    """

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int) -> dict[str, Any]:
        torch = importlib.import_module("torch")
        return {
            "image": torch.full((3, 8, 8), float(index)),
            "pieces": [torch.full((2,), float(index * PIECES + k)) for k in range(PIECES)],
            "index": index,
            "pid": os.getpid(),
        }


def _open_fds() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _report_shm(report: Report) -> None:
    try:
        stats = os.statvfs(SHM)
    except OSError:
        report.skip(f"{SHM} does not exist here (not Linux?): shared memory size not checked")
        return
    total, free = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
    ok = free >= SHM_MIN_FREE
    report.check(ok, f"{SHM}: {free / MIB:.0f} MiB free of {total / MIB:.0f} MiB"
                 + ("" if ok else " - too small for DataLoader workers: start the container "
                    "with --shm-size=16g (or --ipc=host)"))


def _nofile() -> tuple[int, str] | None:
    """The soft open-file limit and the hard one as text, or None where there is no rlimit."""
    try:
        import resource
    except ImportError:  # Windows: no RLIMIT_NOFILE
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, ("unlimited" if hard == resource.RLIM_INFINITY else str(hard))


def _report_limits(report: Report, torch: ModuleType) -> str:
    mp = torch.multiprocessing
    strategy = str(mp.get_sharing_strategy())
    report.info(f"tensor sharing strategy: {strategy} (available: "
                f"{', '.join(sorted(mp.get_all_sharing_strategies()))})")
    limits = _nofile()
    if limits is None:
        report.skip("open-file limit: no RLIMIT_NOFILE on this platform")
    elif strategy == "file_descriptor":
        soft, hard = limits
        ok = soft >= NOFILE_MIN
        report.check(ok, f"open-file limit (ulimit -n) soft {soft}, hard {hard}"
                     + ("" if ok else f": below {NOFILE_MIN}, batches of many tensors will hit "
                        "'Too many open files'; raise it (ulimit -n 65535) or call "
                        "torch.multiprocessing.set_sharing_strategy('file_system')"))
    else:
        soft, hard = limits
        report.check(True, f"open-file limit soft {soft}, hard {hard}; the {strategy} "
                     "strategy shares tensors by name, not by open descriptor")
    start = (mp.get_start_method(allow_none=True)
             or f"{mp.get_all_start_methods()[0]} (the platform default)")
    report.info(f"multiprocessing start method: {start}; CPUs: {os.cpu_count()}")
    tokenizers = os.environ.get("TOKENIZERS_PARALLELISM")
    if tokenizers is None:
        report.info("TOKENIZERS_PARALLELISM: not set - a fast tokenizer used before the workers "
                    "fork will warn and disable its parallelism (set it to false for "
                    "DataLoader-parallel tokenization)")
    else:
        report.info(f"TOKENIZERS_PARALLELISM={tokenizers}")
    return strategy


def _chain(error: BaseException) -> str:
    """The first line of an exception and of each exception it was raised from."""
    parts: list[str] = []
    seen: BaseException | None = error
    while seen is not None and len(parts) < 4:
        text = str(seen).strip()
        parts.append(f"{type(seen).__name__}: {text.splitlines()[0][:300] if text else ''}")
        seen = seen.__cause__ or seen.__context__
    return " <- ".join(parts)


def _abandon(iterator: Any, workers: list[Any]) -> None:
    """Stop a failed loader's workers ourselves: torch's own teardown can block forever on a
    queue lock that a killed worker held."""
    for worker in workers:
        if worker.is_alive():
            worker.kill()
        worker.join(timeout=5)
    if iterator is not None:
        iterator._shutdown = True  # nothing left for its teardown to do


def _run_loader(report: Report, torch: ModuleType) -> None:
    fds_before = _open_fds()
    started = time.monotonic()
    loader = torch.utils.data.DataLoader(TinyDataset(), batch_size=BATCH, num_workers=WORKERS,
                                         timeout=60)
    iterator = None
    workers: list[Any] = []
    try:
        iterator = iter(loader)
        workers = list(getattr(iterator, "_workers", []))
        batches = list(iterator)
    except (RuntimeError, OSError) as error:  # a dead worker, a full /dev/shm, no fds left
        report.check(False, "the DataLoader failed here: " + _chain(error)
                     + " (trainmedic diagnose on this output names the cause)")
        _abandon(iterator, workers)
        return
    elapsed = time.monotonic() - started
    seen = sorted(int(i) for batch in batches for i in batch["index"])
    report.check(seen == list(range(SAMPLES)),
                 f"{WORKERS} workers delivered all {SAMPLES} samples in {len(batches)} batches "
                 f"({elapsed:.1f} s)")
    pids = {int(p) for batch in batches for p in batch["pid"]}
    report.check(os.getpid() not in pids and len(pids) >= 1,
                 f"samples were built in worker processes ({len(pids)} distinct pid(s)), "
                 "not in the main process")
    shared = all(batch["image"].is_shared() and all(p.is_shared() for p in batch["pieces"])
                 for batch in batches)
    report.check(shared, "batches reached the main process through shared memory "
                 f"({1 + PIECES} shared tensors per batch)")
    correct = all(
        bool(torch.equal(batch["image"][row], torch.full((3, 8, 8), float(index))))
        for batch in batches for row, index in enumerate(batch["index"].tolist()))
    report.check(correct, "tensor contents survived the trip intact")
    del batches, iterator
    deadline = time.monotonic() + 10
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    if workers:
        report.check(not any(w.is_alive() for w in workers),
                     "the workers exited when the loader was done")
    else:
        report.skip("worker processes not inspectable in this torch version")
    fds_after = _open_fds()
    if fds_before is not None and fds_after is not None:
        report.info(f"open file descriptors: {fds_before} before, {fds_after} after the loop")


def run() -> int:
    torch = import_torch("DataLoader workers and shared memory")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    report.info(f"torch {torch.__version__}")
    _report_shm(report)
    _report_limits(report, torch)
    _run_loader(report, torch)
    return report.code

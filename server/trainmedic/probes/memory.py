"""Memory on this machine: the GPU caching allocator when a GPU is visible, host RAM always.

GPU: free/total memory, PyTorch's allocated vs reserved bytes, OOM and retry counters, the
allocator configuration (expandable segments), and one deliberately oversized allocation to show
the OOM is raised, caught and leaves nothing behind. Host: MemAvailable from /proc/meminfo, the
memory limit and usage of this cgroup, and the OOM killer's kill counters; each file that cannot
be read is named.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import ModuleType

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "GPU allocator state and config, host RAM headroom, cgroup limit and OOM-killer kills"

GIB = 1 << 30
MIB = 1 << 20
HEADROOM_FRACTION = 0.10      # below this much available memory the next spike gets killed
NO_LIMIT = 1 << 60            # cgroup v1 reports "no limit" as a huge page-aligned number
ALLOC_ENV = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def _size(n: float) -> str:
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB else f"{n / MIB:.1f} MiB"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _keyed(text: str) -> dict[str, int]:
    """`key value` or `key: value kB` lines as numbers (kB converted to bytes)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].isdigit():
            scale = 1024 if len(parts) > 2 and parts[2] == "kB" else 1
            values[parts[0]] = int(parts[1]) * scale
    return values


def allocator_settings() -> dict[str, str]:
    """The allocator variables set in this environment (what a job started here inherits)."""
    return {name: os.environ[name] for name in ALLOC_ENV if os.environ.get(name)}


def expandable_segments_on(settings: dict[str, str]) -> bool:
    for value in settings.values():
        for item in value.split(","):
            key, _, flag = item.partition(":")
            if key.strip() == "expandable_segments" and flag.strip().lower() == "true":
                return True
    return False


def _report_allocator_config(report: Report, torch_version: str | None) -> None:
    settings = allocator_settings()
    if settings:
        for name, value in settings.items():
            report.info(f"{name}={value}")
    else:
        report.info("PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF: not set (allocator defaults)")
    report.info("expandable_segments: " + (
        "on" if expandable_segments_on(settings) else
        "off (for OOMs with large 'reserved but unallocated' memory set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)"))
    only_new_name = ("PYTORCH_ALLOC_CONF" in settings
                     and "PYTORCH_CUDA_ALLOC_CONF" not in settings)
    if only_new_name and (torch_version or "").startswith("2.9."):
        report.check(False, f"torch {torch_version} ignores expandable_segments given only as "
                     "PYTORCH_ALLOC_CONF on CUDA (pytorch/pytorch#183387): set "
                     "PYTORCH_CUDA_ALLOC_CONF as well")


def _gpu(report: Report, torch: ModuleType) -> None:
    count = torch.cuda.device_count()
    report.info(f"{count} GPU(s) visible; allocator backend: "
                f"{torch.cuda.get_allocator_backend()}")
    for index in range(count):
        free, total = torch.cuda.mem_get_info(index)
        stats = torch.cuda.memory_stats(index)
        allocated = torch.cuda.memory_allocated(index)
        reserved = torch.cuda.memory_reserved(index)
        report.info(
            f"cuda:{index} {torch.cuda.get_device_name(index)}: {_size(free)} free of "
            f"{_size(total)}; this process: {_size(allocated)} allocated, {_size(reserved)} "
            f"reserved ({_size(reserved - allocated)} reserved but unallocated, "
            f"{_size(stats.get('inactive_split_bytes.all.current', 0))} in split inactive "
            "blocks), "
            f"{stats.get('num_ooms', 0)} OOMs, {stats.get('num_alloc_retries', 0)} alloc retries")
        report.check(free >= HEADROOM_FRACTION * total,
                     f"cuda:{index} has {_size(free)} free ({100 * free / total:.0f}%): "
                     + ("room for a training process" if free >= HEADROOM_FRACTION * total else
                        "another process holds most of this GPU (see nvidia-smi)"))
    _provoke_oom(report, torch)


def _provoke_oom(report: Report, torch: ModuleType) -> None:
    """Ask for twice the device's memory: the OOM must be raised, caught and leave no trace."""
    oom_type = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    _, total = torch.cuda.mem_get_info(0)
    before = torch.cuda.memory_allocated(0)
    ooms_before = torch.cuda.memory_stats(0).get("num_ooms", 0)
    message = ""
    try:
        torch.empty(2 * total, dtype=torch.uint8, device="cuda:0")
    except oom_type as error:
        message = str(error)
    report.check(bool(message), f"an oversized request ({_size(2 * total)}) raises "
                 f"{oom_type.__name__} and can be caught")
    if not message:
        return
    report.info("message: " + message.splitlines()[0][:300])
    report.check(torch.cuda.memory_allocated(0) == before,
                 "the failed allocation left nothing allocated behind")
    report.check(torch.cuda.memory_stats(0).get("num_ooms", 0) > ooms_before,
                 "the allocator counted the OOM (memory_stats num_ooms)")
    if "reserved by PyTorch but unallocated" in message:
        report.check(True, "the OOM message reports reserved-but-unallocated memory, so "
                     "trainmedic can tell fragmentation from a plain OOM")
    else:
        report.skip("this torch's OOM message has no 'reserved but unallocated' figure "
                    "(torch < 2.1): fragmentation cannot be told apart from the message")
    torch.cuda.empty_cache()


def _cgroup_memory_dir() -> tuple[Path | None, int]:
    """This process's memory cgroup directory and its version (2 or 1), if mounted here."""
    text = _read(Path("/proc/self/cgroup")) or ""
    root = Path("/sys/fs/cgroup")
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            candidates, version = [root / relative.lstrip("/"), root], 2
        elif "memory" in controllers.split(","):
            candidates, version = [root / "memory" / relative.lstrip("/"), root / "memory"], 1
        else:
            continue
        marker = "memory.max" if version == 2 else "memory.limit_in_bytes"
        for candidate in candidates:
            if (candidate / marker).is_file():
                return candidate, version
    return None, 0


def _host(report: Report) -> None:
    meminfo_text = _read(Path("/proc/meminfo"))
    if meminfo_text is None:
        report.skip("host memory: /proc/meminfo is not readable here (not Linux?)")
        return
    meminfo = _keyed(meminfo_text)
    total, available = meminfo.get("MemTotal", 0), meminfo.get("MemAvailable", 0)
    report.info(f"host RAM: {_size(available)} available of {_size(total)}; swap "
                f"{_size(meminfo.get('SwapFree', 0))} free of {_size(meminfo.get('SwapTotal', 0))}")
    limit, usage = total, total - available
    directory, version = _cgroup_memory_dir()
    oom_kills: int | None = None
    if directory is None:
        report.skip("cgroup memory limit: no memory cgroup files readable here "
                    "(/sys/fs/cgroup not mounted); only the host total applies")
    else:
        if version == 2:
            raw_limit = (_read(directory / "memory.max") or "max").strip()
            cg_limit = NO_LIMIT if raw_limit == "max" else int(raw_limit)
            cg_usage = int((_read(directory / "memory.current") or "0").strip() or 0)
            events = _read(directory / "memory.events")
            if events is not None:
                oom_kills = _keyed(events).get("oom_kill")
            events_file = "memory.events"
            inactive_key = "inactive_file"
        else:
            cg_limit = int((_read(directory / "memory.limit_in_bytes") or "0").strip() or 0)
            cg_usage = int((_read(directory / "memory.usage_in_bytes") or "0").strip() or 0)
            control = _read(directory / "memory.oom_control")
            if control is not None:
                oom_kills = _keyed(control).get("oom_kill")
            events_file = "memory.oom_control"
            inactive_key = "total_inactive_file"
        stat = _read(directory / "memory.stat")
        reclaimable = _keyed(stat).get(inactive_key, 0) if stat else 0
        cg_usage = max(cg_usage - reclaimable, 0)
        if 0 < cg_limit < NO_LIMIT and cg_limit < total:
            report.info(f"cgroup v{version} {directory}: limit {_size(cg_limit)}, "
                        f"using {_size(cg_usage)} (reclaimable page cache excluded)")
            limit, usage = cg_limit, cg_usage
        else:
            report.info(f"cgroup v{version} {directory}: no memory limit below the host total")
        if oom_kills is None:
            report.skip(f"OOM kills in this cgroup: {events_file} has no oom_kill counter "
                        "or is not readable (older kernel)")
        else:
            report.check(oom_kills == 0,
                         f"OOM kills recorded in this cgroup ({events_file} oom_kill): {oom_kills}"
                         + ("" if oom_kills == 0 else
                            " - the kernel has SIGKILLed processes here for exceeding the limit"))
    headroom = limit - usage if limit != total else available
    report.check(headroom >= HEADROOM_FRACTION * limit,
                 f"memory headroom {_size(headroom)} of the {_size(limit)} limit "
                 f"({100 * headroom / max(limit, 1):.0f}%)"
                 + ("" if headroom >= HEADROOM_FRACTION * limit else
                    " - a training spike (checkpoint load, more DataLoader workers) "
                    "will meet the OOM killer"))
    vmstat = _read(Path("/proc/vmstat"))
    host_kills = _keyed(vmstat).get("oom_kill") if vmstat else None
    if host_kills is None:
        report.skip("host-wide OOM kills: /proc/vmstat has no oom_kill counter (kernel < 4.13)")
    else:
        report.info(f"host-wide OOM kills since boot (/proc/vmstat oom_kill): {host_kills}"
                    + (" (may include other users' processes)" if host_kills else ""))
    _kernel_log(report)


def _kernel_log(report: Report) -> None:
    try:
        result = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5,
                                check=False)
    except (OSError, subprocess.SubprocessError):
        report.skip("kernel log: dmesg is not available here; on the node run "
                    "`journalctl -k | grep -iE 'killed process|oom-kill'`")
        return
    if result.returncode != 0:
        report.skip("kernel log: not readable without root here (kernel.dmesg_restrict); "
                    "run `sudo dmesg -T | grep -iE 'killed process|oom-kill'`")
        return
    kills = [line for line in result.stdout.splitlines()
             if "Killed process" in line or "oom-kill:" in line]
    report.info(f"kernel log: {len(kills)} OOM-killer line(s) in the current dmesg buffer")
    for line in kills[-3:]:
        report.info("  " + line.strip()[:200])


def _host_allocation(report: Report, torch: ModuleType) -> None:
    """A request larger than the address space is refused with an error, not a kill."""
    try:
        torch.empty(1 << 60, dtype=torch.uint8)
    except RuntimeError as error:
        text = str(error)
        report.check("DefaultCPUAllocator" in text or "allocate" in text,
                     "an impossible host allocation is refused with an error "
                     "(DefaultCPUAllocator), not an OOM kill")
        return
    report.check(False, "a 1 EiB host allocation unexpectedly succeeded (overcommit?)")


def run() -> int:
    report = Report()
    torch = import_torch("GPU memory and the caching allocator")
    if torch is not None:
        report.info(f"torch {torch.__version__}")
        if torch.cuda.is_available():
            _gpu(report, torch)
        else:
            report.skip("no GPU visible (torch.cuda.is_available() is False): GPU free memory, "
                        "allocator stats and the OOM experiment were not checked here; run "
                        "`trainmedic probe memory` on the training node. Checking host memory.")
    _report_allocator_config(report, str(torch.__version__) if torch is not None else None)
    _host(report)
    if torch is None:
        return CANNOT_CHECK
    _host_allocation(report, torch)
    return report.code

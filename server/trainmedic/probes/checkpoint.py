"""Checkpoints on this machine: free space, a real save/load round trip, and how damaged files fail.

Free space: shutil.disk_usage of the current directory (run the probe from the checkpoint output
directory) and of the temporary directory. Round trip: a small model and its Adam state are saved
atomically (temporary name, then os.replace), reloaded with torch.load(weights_only=True) and
load_state_dict(strict=True), compared tensor by tensor and CRC-checked with zipfile. Then the
failures the catalogue describes are produced for real on copies: a state dict for another width
(size mismatch), DataParallel's module. prefix, a pickled argparse.Namespace (weights_only refusal,
fixed with safe_globals), a truncated, an empty and a Git LFS pointer file, zeroed bytes inside
tensor data (which torch.load accepts and the zip CRC check catches) and, on Linux, a save to
/dev/full (what a full disk does to torch.save). `run(path)` also checks one existing file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "torch.save/torch.load round trip, weights_only, free space, how damaged files fail"

GIB = 1 << 30
MIB = 1 << 20
MIN_FREE = GIB                  # below this, the next checkpoint save of a real model will fail
BYTES_PER_PARAM_ADAM = 12       # fp32 weight + Adam exp_avg + exp_avg_sq
SHOWN = 150                     # characters of an error message shown per line
LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               b"size 83908614\n")
FULL_DEVICE = "/dev/full"
FULL_SAVE = (
    "import torch\n"
    "with open(%r, 'wb') as f:\n"
    "    torch.save({'w': torch.zeros(1 << 16)}, f)\n"
)


def _size(n: float) -> str:
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB else f"{n / MIB:.1f} MiB"


def _first_line(error: BaseException) -> str:
    """The exception as it would end a traceback, cut to one readable line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _line_with(error: BaseException, needle: str) -> str | None:
    for raw in str(error).splitlines():
        if needle in raw:
            line = raw.strip()
            return line if len(line) <= SHOWN else line[: SHOWN - 3] + "..."
    return None


def _tiny(torch: ModuleType, hidden: int = 32) -> Any:
    nn = torch.nn
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))


def _load(torch: ModuleType, path: Path) -> Any:
    return torch.load(path, map_location="cpu", weights_only=True)


# --- free space ---------------------------------------------------------------------------------

def check_free_space(report: Report, directories: list[Path]) -> None:
    seen: set[int] = set()
    for directory in directories:
        try:
            device = directory.stat().st_dev
            usage = shutil.disk_usage(directory)
        except OSError as error:
            report.skip(f"free space of {directory}: cannot stat it ({error.strerror})")
            continue
        if device in seen:
            report.info(f"{directory} is on the same filesystem as above")
            continue
        seen.add(device)
        used = 100 * (usage.total - usage.free) / usage.total if usage.total else 100.0
        report.check(usage.free >= MIN_FREE,
                     f"{directory}: {_size(usage.free)} free of {_size(usage.total)} "
                     f"({used:.0f}% used)" + ("" if usage.free >= MIN_FREE else
                                              f": less than {_size(MIN_FREE)}, the next "
                                              "checkpoint save will fail with ENOSPC"))
    report.info(f"a model + Adam checkpoint takes about {BYTES_PER_PARAM_ADAM} bytes per fp32 "
                "parameter (1B parameters: ~12 GB per save); keep room for two")


# --- round trip ---------------------------------------------------------------------------------

def save_atomically(torch: ModuleType, state: dict[str, Any], path: Path) -> None:
    """torch.save to a temporary name, fsync, then os.replace: a crash never leaves half a file."""
    partial = path.with_name(path.name + ".tmp")
    torch.save(state, partial)
    with open(partial, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(partial, path)


def _round_trip(torch: ModuleType, report: Report, folder: Path) -> Path | None:
    torch.manual_seed(0)
    model = _tiny(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(8, 16)).pow(2).mean().backward()
    optimizer.step()
    path = folder / "ckpt.pt"
    try:
        save_atomically(torch, {"model": model.state_dict(),
                                "optimizer": optimizer.state_dict(), "step": 1}, path)
    except Exception as error:  # the probe reports whatever the save raised
        report.check(False, f"torch.save to {folder} failed: {_first_line(error)}")
        return None
    report.check(path.is_file() and not path.with_name(path.name + ".tmp").exists(),
                 f"torch.save + os.replace wrote {path.name} ({path.stat().st_size} bytes) "
                 "atomically")
    try:
        state = _load(torch, path)
    except Exception as error:
        report.check(False, f"torch.load(weights_only=True) failed: {_first_line(error)}")
        return None
    report.check(True, "torch.load(..., weights_only=True) reads a state_dict checkpoint")

    restored = _tiny(torch)
    result = restored.load_state_dict(state["model"], strict=True)
    report.check(not result.missing_keys and not result.unexpected_keys,
                 "load_state_dict(strict=True): all keys matched")
    same = all(torch.equal(a, b) for a, b in
               zip(model.state_dict().values(), restored.state_dict().values(), strict=True))
    report.check(same, "every reloaded tensor equals the saved one")
    restored_optimizer = torch.optim.Adam(restored.parameters(), lr=1e-3)
    try:
        restored_optimizer.load_state_dict(state["optimizer"])
        report.check(True, "optimizer.load_state_dict restores the Adam state")
    except ValueError as error:
        report.check(False, f"optimizer.load_state_dict failed: {_first_line(error)}")
    bad = zip_crc_error(path)
    report.check(bad is None, "zipfile CRC check of every record passes" if bad is None
                 else f"zipfile CRC check failed: {bad}")
    return path


def _state_dict_mismatches(torch: ModuleType, report: Report, path: Path) -> None:
    state = _load(torch, path)["model"]
    try:
        _tiny(torch, hidden=64).load_state_dict(state)
        report.check(False, "a model of another width accepted the checkpoint")
    except RuntimeError as error:
        line = _line_with(error, "size mismatch for")
        report.check(line is not None, "another width fails loudly (state-dict-mismatch):")
        report.info(line or _first_line(error))
    prefixed = {f"module.{key}": value for key, value in state.items()}
    try:
        _tiny(torch).load_state_dict(prefixed)
        report.check(False, "a module.-prefixed state dict loaded without an error")
    except RuntimeError as error:
        report.check("Missing key(s)" in str(error),
                     "DataParallel/DDP's module. prefix gives missing/unexpected keys")
    stripped = {key.removeprefix("module."): value for key, value in prefixed.items()}
    result = _tiny(torch).load_state_dict(stripped, strict=True)
    report.check(not result.missing_keys and not result.unexpected_keys,
                 "stripping the module. prefix makes it load with strict=True")


# --- weights_only -------------------------------------------------------------------------------

def _weights_only(torch: ModuleType, report: Report, folder: Path) -> None:
    path = folder / "with-args.pt"
    torch.save({"model": _tiny(torch).state_dict(), "args": argparse.Namespace(lr=0.1)}, path)
    try:
        _load(torch, path)
        report.check(False, "a pickled argparse.Namespace loaded with weights_only=True "
                     "(this torch does not restrict weights_only loads)")
        return
    except Exception as error:  # UnpicklingError on 2.x, the type varies
        line = _line_with(error, "WeightsUnpickler error") or _first_line(error)
        report.check("Weights only load failed" in str(error),
                     "a pickled argparse.Namespace is refused by weights_only=True "
                     "(torch-load-weights-only):")
        report.info(line)
    finder = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)
    if finder is not None:
        report.info(f"get_unsafe_globals_in_checkpoint lists: {', '.join(finder(str(path)))}")
    scoped = getattr(torch.serialization, "safe_globals", None)
    if scoped is None:
        report.skip("torch.serialization.safe_globals: not in this torch (added in 2.5)")
        return
    try:
        with scoped([argparse.Namespace]):
            args = _load(torch, path)["args"]
        report.check(args.lr == 0.1, "with safe_globals([argparse.Namespace]) it loads "
                     "and weights_only stays on")
    except Exception as error:
        report.check(False, f"safe_globals did not allow it: {_first_line(error)}")


# --- damaged files ------------------------------------------------------------------------------

def zip_crc_error(path: Path) -> str | None:
    """None when every record's CRC matches; otherwise what is wrong (zip checkpoints only)."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        return f"not a readable zip archive ({error})"
    return None if bad is None else f"CRC mismatch in record {bad}"


def _tensor_data_offset(path: Path) -> tuple[int, int] | None:
    """Start and size of the largest tensor record's bytes inside a zip checkpoint."""
    with zipfile.ZipFile(path) as archive:
        records = [i for i in archive.infolist() if "/data/" in i.filename]
    if not records:
        return None
    record = max(records, key=lambda i: i.file_size)
    with open(path, "rb") as handle:
        handle.seek(record.header_offset)
        header = handle.read(30)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return record.header_offset + 30 + name_length + extra_length, record.file_size


def _expect_failure(torch: ModuleType, report: Report, path: Path, what: str) -> None:
    try:
        _load(torch, path)
        report.check(False, f"{what}: torch.load accepted it")
    except Exception as error:  # each damage raises its own type
        report.check(True, f"{what} fails to load:")
        report.info(_first_line(error))
        detail = _line_with(error, "Unsupported operand") or _line_with(error, "WeightsUnpickler")
        if detail:
            report.info(detail)


def _damaged(torch: ModuleType, report: Report, folder: Path, good: Path) -> None:
    data = good.read_bytes()
    cases = [("a copy cut in half (interrupted save or download)", data[: len(data) // 2]),
             ("a copy missing its last 30 bytes", data[:-30]),
             ("an empty file (save killed before writing)", b""),
             ("a Git LFS pointer saved as the checkpoint", LFS_POINTER)]
    for index, (what, content) in enumerate(cases):
        path = folder / f"damaged-{index}.pt"
        path.write_bytes(content)
        _expect_failure(torch, report, path, what)

    located = _tensor_data_offset(good)
    if located is None:
        report.skip("zeroed tensor bytes: no tensor record found in the zip")
        return
    start, size = located
    garbled = bytearray(data)
    middle = start + size // 2
    garbled[middle: middle + 16] = bytes(16)
    path = folder / "garbled.pt"
    path.write_bytes(bytes(garbled))
    try:
        _load(torch, path)
        report.info("16 zeroed bytes inside tensor data: torch.load accepted the file silently")
    except Exception as error:
        report.info(f"16 zeroed bytes inside tensor data: torch.load refused it "
                    f"({_first_line(error)})")
    bad = zip_crc_error(path)
    report.check(bad is not None, "zipfile's CRC check catches the damaged tensor bytes"
                 + (f" ({bad})" if bad else ""))


def _full_device(report: Report) -> None:
    if not (sys.platform.startswith("linux") and os.access(FULL_DEVICE, os.W_OK)):
        report.skip(f"save to a full device: {FULL_DEVICE} is not available on this system")
        return
    try:
        done = subprocess.run([sys.executable, "-c", FULL_SAVE % FULL_DEVICE],
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        report.skip(f"save to a full device: could not run a child python ({error})")
        return
    errors = [line.strip() for line in done.stderr.splitlines()
              if line.strip() and not line.startswith((" ", "\t", "Traceback", "During"))
              and ("Error" in line or "error" in line)]
    full = ("No space left on device", "file write failed", "unexpected pos", "iostream error")
    loud = done.returncode != 0 and any(word in done.stderr for word in full)
    report.check(loud, f"a full device makes torch.save fail loudly (disk-full), exit code "
                 f"{done.returncode}:" if loud else
                 f"saving to {FULL_DEVICE} did not report a write error (exit code "
                 f"{done.returncode})")
    for line in errors[-2:]:
        report.info(line if len(line) <= SHOWN else line[: SHOWN - 3] + "...")


# --- a user's own file --------------------------------------------------------------------------

def _sniff(head: bytes, size: int) -> str:
    if size == 0:
        return "empty"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(b"version https://git-lfs"):
        return "lfs-pointer"
    if head.lstrip().startswith((b"<", b"{\"error")):
        return "html-or-json"
    if head[:1] == b"\x80":
        return "legacy-pickle"
    if len(head) >= 9 and head[8:9] == b"{":
        header_size = struct.unpack("<Q", head[:8])[0]
        if 0 < header_size <= size - 8:
            return "safetensors"
    return "unknown"


def verify_file(torch: ModuleType, report: Report, path: Path) -> None:
    """Checks one existing checkpoint: size, format, zip CRCs, and a weights_only load."""
    if not path.is_file():
        report.check(False, f"{path}: no such file")
        return
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(64)
    kind = _sniff(head, size)
    report.info(f"{path}: {size} bytes, format: {kind}")
    check_free_space(report, [path.parent])
    if kind in ("empty", "lfs-pointer", "html-or-json", "unknown"):
        what = {"empty": "the file is empty (an interrupted save)",
                "lfs-pointer": "this is a Git LFS pointer, not the weights (run git lfs pull)",
                "html-or-json": "this is a web page or an error response, not a checkpoint",
                "unknown": "this is not a PyTorch or safetensors checkpoint"}[kind]
        report.check(False, what)
        return
    if kind == "safetensors":
        report.skip("safetensors: load it with safetensors.torch.load_file to verify the data")
        return
    if kind == "zip":
        bad = zip_crc_error(path)
        report.check(bad is None, "zip structure and every record's CRC are intact"
                     if bad is None else f"the file is damaged: {bad}")
        if bad is not None:
            return
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True,
                            **({"mmap": True} if kind == "zip" else {}))
    except Exception as error:
        message = str(error)
        if "Weights only load failed" in message and "Unsupported operand" not in message:
            finder = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)
            names = ", ".join(finder(str(path))) if finder and kind == "zip" else "see above"
            report.check(False, f"weights_only=True refuses it; globals to allowlist: {names}")
        else:
            report.check(False, f"torch.load failed: {_first_line(error)}")
        return
    keys = list(loaded)[:8] if isinstance(loaded, dict) else [type(loaded).__name__]
    report.check(True, "torch.load(weights_only=True) reads it; top-level: "
                 + ", ".join(map(str, keys)))


def run(path: str | None = None) -> int:
    torch = import_torch("checkpoint saving and loading")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    report.info(f"torch {torch.__version__}")
    check_free_space(report, [Path.cwd(), Path(tempfile.gettempdir())])
    with tempfile.TemporaryDirectory(prefix="trainmedic-ckpt-") as temporary:
        folder = Path(temporary)
        good = _round_trip(torch, report, folder)
        if good is not None:
            _state_dict_mismatches(torch, report, good)
            _weights_only(torch, report, folder)
            _damaged(torch, report, folder, good)
        else:
            report.skip("failure demonstrations: no good checkpoint to start from")
    _full_device(report)
    if path:
        verify_file(torch, report, Path(path))
    else:
        report.info("to check one of your own checkpoint files the same way: "
                    "trainmedic probe checkpoint FILE")
    return report.code

"""The CUDA stack on this machine: torch build vs driver vs GPU architecture, cuDNN/cuBLAS, asserts.

Without a GPU (or with a CPU-only torch build) the GPU checks are reported as SKIP with the reason,
and the device-assert triage still runs on the CPU: the same out-of-range label or token id that a
GPU reports only as "device-side assert triggered" raises a readable IndexError there.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "CUDA build vs driver vs GPU architecture, cuDNN/cuBLAS smoke test, device-assert triage"

DRIVER_PROC = Path("/proc/driver/nvidia/version")
RERUN_HINTS = (
    "to locate a device-side assert or illegal memory access, rerun the failing step on the GPU "
    "node with",
    "  CUDA_LAUNCH_BLOCKING=1 python train.py ...         "
    "(synchronous launches: the traceback names the failing op)",
    "  compute-sanitizer --tool memcheck python train.py  "
    "(exact kernel and address of an illegal memory access)",
    "  TORCH_USE_CUDA_DSA=1 is a build-time flag: it only helps with a PyTorch compiled with it",
)


def _version(code: int) -> str:
    """CUDA version integer (12040) as text (12.4)."""
    return f"{code // 1000}.{(code % 1000) // 10}"


def _arch_supports(arch_list: list[str], major: int, minor: int) -> bool:
    """Whether a build with these architectures has code the GPU of capability major.minor can run.

    A cubin for sm_XY runs on sm_XZ with Z >= Y (same major); PTX for compute_XY is compiled by the
    driver for any GPU of capability >= X.Y.
    """
    capability = major * 10 + minor
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        digits = "".join(ch for ch in digits if ch.isdigit())
        if not digits:
            continue
        code = int(digits)
        if kind == "sm" and code // 10 == major and code % 10 <= minor:
            return True
        if kind == "compute" and code <= capability:
            return True
    return False


def _driver_checks(torch: Any, report: Report) -> bool:
    """Report the driver and whether torch can use the GPU; True when CUDA is usable."""
    visible = DRIVER_PROC.exists() or shutil.which("nvidia-smi") is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
    messages = [str(w.message).strip() for w in caught
                if "CUDA initialization" in str(w.message)]
    if torch.version.cuda is None:
        report.skip("CPU-only torch build: the driver vs CUDA runtime check needs the CUDA "
                    "build of torch used for training (pip install torch --index-url "
                    "https://download.pytorch.org/whl/cu126, for example)")
        if visible:
            report.info("an NVIDIA driver is visible, but this torch cannot use it")
        return False
    if available:
        driver = _version(int(torch._C._cuda_getDriverVersion()))
        runtime = torch.version.cuda
        same_major = driver.split(".")[0] == runtime.split(".")[0]
        newer = tuple(map(int, driver.split("."))) >= tuple(map(int, runtime.split(".")[:2]))
        report.check(newer or same_major,
                     f"the driver supports CUDA {driver}; this torch needs CUDA {runtime}"
                     + ("" if newer else " (works only through minor-version compatibility)"))
        return True
    for message in messages:
        report.check(False, f"torch cannot initialize CUDA: {message.splitlines()[0]}")
    if not messages:
        if visible:
            report.check(False, "an NVIDIA driver is visible but torch.cuda.is_available() is "
                         "False: check CUDA_VISIBLE_DEVICES and the container's GPU access "
                         "(--gpus all)")
        else:
            report.skip("no NVIDIA driver visible (no /proc/driver/nvidia/version, no "
                        "nvidia-smi): cannot check driver vs runtime here; run `nvidia-smi` and "
                        "this probe on the GPU node")
    return False


def _gpu_checks(torch: Any, report: Report, arch_list: list[str]) -> None:
    for index in range(torch.cuda.device_count()):
        name = torch.cuda.get_device_name(index)
        major, minor = torch.cuda.get_device_capability(index)
        report.check(_arch_supports(arch_list, major, minor),
                     f"GPU{index} {name} (sm_{major}{minor}) is covered by the compiled "
                     "architectures (otherwise: 'no kernel image is available for execution on "
                     "the device')")
    device = torch.device("cuda", 0)
    try:
        a = torch.randn(64, 64, device=device)
        product = (a @ a).sum() + (a.half() @ a.half()).float().sum()
        torch.cuda.synchronize()
        report.check(bool(torch.isfinite(product)), "cuBLAS: fp32 and fp16 matmul run on the GPU")
    except RuntimeError as error:
        report.check(False, f"cuBLAS matmul failed: {str(error).splitlines()[0]}")
    try:
        x = torch.randn(2, 3, 16, 16, device=device)
        conv = torch.nn.Conv2d(3, 4, 3).to(device)
        out = conv(x).sum()
        torch.cuda.synchronize()
        report.check(bool(torch.isfinite(out)),
                     f"cuDNN {torch.backends.cudnn.version()}: a convolution runs on the GPU")
    except RuntimeError as error:
        report.check(False, f"cuDNN convolution failed: {str(error).splitlines()[0]}")


def _assert_triage(torch: Any, report: Report) -> None:
    """Show on the CPU the readable errors behind the usual device-side asserts."""
    functional = torch.nn.functional
    try:
        functional.cross_entropy(torch.randn(2, 3), torch.tensor([0, 5]))
        report.check(False, "an out-of-range label was not rejected on the CPU")
    except (IndexError, RuntimeError) as error:
        report.check(True, f"label 5 with 3 classes on the CPU raises {type(error).__name__}: "
                     f"{str(error).splitlines()[0]} (on a GPU: 'device-side assert triggered', "
                     "Assertion `t >= 0 && t < n_classes` failed)")
    try:
        torch.nn.Embedding(10, 4)(torch.tensor([3, 12]))
        report.check(False, "an out-of-range token id was not rejected on the CPU")
    except (IndexError, RuntimeError) as error:
        report.check(True, f"token id 12 with a 10-entry embedding on the CPU raises "
                     f"{type(error).__name__}: {str(error).splitlines()[0]} (on a GPU: "
                     "Assertion `srcIndex < srcSelectDimSize` failed)")


def run() -> int:
    torch = import_torch("the CUDA setup")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    runtime = torch.version.cuda or "none (CPU-only build)"
    report.info(f"torch {torch.__version__}, CUDA runtime {runtime}, cuDNN {cudnn or 'none'}")
    arch_list = list(torch.cuda.get_arch_list())
    report.info("compiled GPU architectures: " + (" ".join(arch_list) or "none"))

    if _driver_checks(torch, report):
        _gpu_checks(torch, report, arch_list)
    else:
        report.skip("GPU architecture vs torch.cuda.get_arch_list() (the no-kernel-image check), "
                    "cuBLAS matmul and cuDNN convolution: no usable GPU here; on the GPU node run "
                    "python -c \"import torch; print(torch.version.cuda, "
                    "torch.cuda.get_arch_list(), torch.cuda.get_device_capability())\"")

    _assert_triage(torch, report)
    for line in RERUN_HINTS:
        report.info(line)
    return report.code

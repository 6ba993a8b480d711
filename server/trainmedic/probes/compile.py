"""torch.compile on this machine: the recompile limit, dynamic shapes, and the inductor toolchain.

Runs on the CPU: a counting backend shows a function hitting the recompile limit with static
shapes and compiling once with dynamic=True; then inductor compiles a tiny function for real
(the C++ compiler path), and, when a GPU is visible, checks Triton's requirements.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "torch.compile: recompile limit and dynamic shapes, inductor C++/Triton toolchain"
SHAPES = 12
DEMO_LIMIT = 4


def _limit_name(config: Any) -> str:
    return "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"


def _count_compiles(torch: Any, dynamic: bool | None) -> int:
    compiles = []

    def counting_backend(gm: Any, example_inputs: Any) -> Callable[..., Any]:
        compiles.append(1)
        forward: Callable[..., Any] = gm.forward
        return forward

    def scale(x: Any) -> Any:
        return x * 2 + 1

    torch._dynamo.reset()
    compiled = torch.compile(scale, backend=counting_backend, dynamic=dynamic)
    for size in range(2, 2 + SHAPES):
        compiled(torch.ones(size))
    torch._dynamo.reset()
    return len(compiles)


def _recompile_checks(torch: Any, report: Report) -> None:
    config = torch._dynamo.config
    name = _limit_name(config)
    accumulated = "accumulated_" + name
    report.info(f"torch._dynamo.config.{name} = {getattr(config, name)}"
                + (f", {accumulated} = {getattr(config, accumulated)}"
                   if hasattr(config, accumulated) else "")
                + (f", fail_on_recompile_limit_hit = {config.fail_on_recompile_limit_hit}"
                   if hasattr(config, "fail_on_recompile_limit_hit") else ""))
    dynamo_log = logging.getLogger("torch._dynamo")
    level = dynamo_log.level
    dynamo_log.setLevel(logging.ERROR)  # the limit warning is the expected outcome here
    try:
        with config.patch(**{name: DEMO_LIMIT}):
            static = _count_compiles(torch, dynamic=False)
            dynamic = _count_compiles(torch, dynamic=True)
    finally:
        dynamo_log.setLevel(level)
    report.check(static == DEMO_LIMIT,
                 f"static shapes ({SHAPES} input sizes, {name}={DEMO_LIMIT}): compiled {static} "
                 "times, then hit the limit and ran the rest in eager mode")
    report.check(dynamic == 1,
                 f"dynamic=True: compiled {dynamic} time(s) for all {SHAPES} sizes "
                 "(or torch._dynamo.mark_dynamic(x, dim) on the varying dimension)")
    report.info("see every guard failure with TORCH_LOGS=recompiles python train.py")


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _cxx_compiler() -> tuple[str | None, str]:
    """The C++ compiler inductor will use, or None and why not."""
    try:
        from torch._inductor import cpp_builder

        return str(cpp_builder.get_cpp_compiler()), ""
    except Exception as error:
        return None, _describe(error)


def _inductor_cpu(torch: Any, report: Report) -> None:
    compiler, why = _cxx_compiler()
    if compiler is None:
        report.check(False, "no working C++ compiler for inductor "
                     f"(torch._inductor.config.cpp.cxx = {torch._inductor.config.cpp.cxx}; {why}): "
                     "CPU kernels cannot compile; install one (apt-get install -y g++ python3-dev) "
                     "or set CXX to a working compiler")
        return
    report.info(f"inductor's C++ compiler: {compiler}")

    def fused(x: Any) -> Any:
        return torch.sin(x) + torch.cos(x) * 2

    x = torch.linspace(-3, 3, 64)
    torch._dynamo.reset()
    try:
        result = torch.compile(fused, backend="inductor")(x)
    except Exception as error:
        report.check(False, f"inductor failed to compile a tiny CPU function: {_describe(error)}")
        return
    finally:
        torch._dynamo.reset()
    report.check(bool(torch.allclose(result, fused(x), atol=1e-5)),
                 "backend='inductor' compiled and ran a tiny function on the CPU; it matches eager")


def _inductor_gpu(torch: Any, report: Report) -> None:
    if not torch.cuda.is_available():
        report.skip("GPU kernels (Triton): no GPU visible here; Triton needs a GPU of compute "
                    "capability >= 7.0 and the triton version pinned by this torch")
        return
    major, minor = torch.cuda.get_device_capability(0)
    report.check((major, minor) >= (7, 0),
                 f"GPU0 compute capability {major}.{minor} (Triton needs >= 7.0; below that use "
                 "backend='aot_eager')")
    report.check(importlib.util.find_spec("triton") is not None,
                 "triton is installed (inductor generates GPU kernels with it)")


def run() -> int:
    torch = import_torch("torch.compile")
    if torch is None:
        return CANNOT_CHECK
    import torch._dynamo
    import torch._inductor.config

    report = Report()
    report.info(f"torch {torch.__version__}; default backend 'inductor'")
    _recompile_checks(torch, report)
    _inductor_cpu(torch, report)
    _inductor_gpu(torch, report)
    return report.code

"""Model-code errors on this machine: device, dtype, shape, in-place ops and backward twice.

Each check first triggers the real error on a tiny model (so the probe shows the exact message
this torch prints) and then runs the fix the catalogue recommends, which must succeed. On the GPU
the device check mixes cuda and cpu; without a GPU it mixes the meta device and the cpu, which
exercises the same device check but not CUDA itself (the probe says so).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "device/dtype/shape mismatches, in-place autograd and backward-twice on a tiny model"

SHOWN = 150
IN_FEATURES, HIDDEN, OUT = 16, 32, 4
BATCH = 4


def _short(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _raises(action: Callable[[], Any], needle: str) -> tuple[bool, str]:
    """(raised an error containing `needle`, the error line) for `action`."""
    try:
        action()
    except Exception as error:  # each check expects its own error type
        return needle in str(error), _short(error)
    return False, "no error was raised"


def _works(action: Callable[[], Any]) -> tuple[bool, str]:
    try:
        action()
    except Exception as error:
        return False, _short(error)
    return True, ""


def _expect(report: Report, action: Callable[[], Any], needle: str, what: str) -> None:
    ok, line = _raises(action, needle)
    report.check(ok, what)
    report.info(line)


def _fixed(report: Report, action: Callable[[], Any], what: str) -> None:
    ok, line = _works(action)
    report.check(ok, what + ("" if ok else f": {line}"))


def _devices(torch: ModuleType, report: Report, model: Any, device: Any) -> None:
    places = {t.device for t in [*model.parameters(), *model.buffers()]}
    report.check(len(places) == 1, "every parameter and buffer is on one device: "
                 + ", ".join(sorted(str(d) for d in places)))
    param_device = next(model.parameters()).device
    if device.type == "cuda":
        stray = torch.randn(BATCH, IN_FEATURES)                       # left on the CPU
        _expect(report, lambda: model(stray), "same device",
                "a CPU batch into a CUDA model fails (device-mismatch):")
    else:
        stray = torch.randn(BATCH, IN_FEATURES, device="meta")
        _expect(report, lambda: model(stray), "device",
                "a batch on another device fails (device-mismatch, shown with meta vs cpu):")
        report.skip("cuda vs cpu mixing: no GPU visible, the same check ran with the meta device")
    _fixed(report, lambda: model(torch.randn(BATCH, IN_FEATURES).to(param_device)),
           "x.to(next(model.parameters()).device) fixes it")


def _dtypes(torch: ModuleType, report: Report, model: Any, device: Any) -> None:
    low = torch.randn(BATCH, IN_FEATURES, device=device, dtype=torch.bfloat16)
    _expect(report, lambda: model(low), "dtype",
            "a bfloat16 batch into a float32 model fails (dtype-mismatch):")

    def autocast() -> Any:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            return model(low)

    _fixed(report, autocast, "the same forward under torch.autocast(dtype=torch.bfloat16) works")
    param_dtype = next(model.parameters()).dtype
    _fixed(report, lambda: model(low.to(param_dtype)),
           f"casting the input to the parameters' dtype ({param_dtype}) works")


def _shapes(torch: ModuleType, report: Report, model: Any, device: Any) -> None:
    width = model[0].in_features
    narrow = torch.randn(BATCH, width // 2, device=device)
    _expect(report, lambda: model(narrow), "cannot be multiplied",
            f"an input of width {width // 2} into Linear({width}, ...) fails (shape-mismatch):")
    _fixed(report, lambda: model(torch.randn(BATCH, width, device=device)),
           f"an input of width in_features={width} works")
    a, b = torch.randn(BATCH, 3, device=device), torch.randn(BATCH, 5, device=device)
    _expect(report, lambda: a + b, "must match the size",
            "tensors that do not broadcast name both sizes:")


def _inplace(torch: ModuleType, report: Report, device: Any) -> None:
    x = torch.randn(BATCH, device=device, requires_grad=True)

    def in_place() -> None:
        y = x.sigmoid()
        y.mul_(2)                      # overwrites the output sigmoid saved for backward
        y.sum().backward()

    _expect(report, in_place, "modified by an inplace operation",
            "modifying a saved tensor in place breaks backward (inplace-autograd):")
    _fixed(report, lambda: (x.sigmoid() * 2).sum().backward(),
           "the out-of-place version (y = x.sigmoid() * 2) backpropagates")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            _raises(in_place, "inplace")
    named = [str(w.message).split(". Traceback")[0] for w in caught
             if "Error detected in" in str(w.message)]
    report.check(bool(named), "anomaly detection names the forward op: "
                 + (named[0] if named else "no 'Error detected in' warning was printed"))


def _backward_twice(torch: ModuleType, report: Report, device: Any) -> None:
    x = torch.randn(BATCH, device=device, requires_grad=True)

    def twice(retain: bool) -> None:
        loss = x.exp().sum()
        loss.backward(retain_graph=retain)
        loss.backward()

    _expect(report, lambda: twice(False), "second time",
            "backward() twice on one graph fails (backward-twice):")
    _fixed(report, lambda: twice(True), "retain_graph=True on the first call lets the second run")
    rnn = torch.nn.GRU(IN_FEATURES, IN_FEATURES).to(device)

    def carried(detach: bool) -> None:
        hidden = torch.zeros(1, 1, IN_FEATURES, device=device)
        for _ in range(3):
            if detach:
                hidden = hidden.detach()
            out, hidden = rnn(torch.randn(2, 1, IN_FEATURES, device=device), hidden)
            out.sum().backward()

    _expect(report, lambda: carried(False), "second time",
            "an RNN hidden state carried across steps without detach() fails:")
    _fixed(report, lambda: carried(True), "hidden = hidden.detach() each step fixes it")


def run() -> int:
    torch = import_torch("device, dtype and shape handling")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU (no GPU visible)"
    report.info(f"torch {torch.__version__} on {name}")
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUT)).to(device)
    _devices(torch, report, model, device)
    _dtypes(torch, report, model, device)
    _shapes(torch, report, model, device)
    _inplace(torch, report, device)
    _backward_twice(torch, report, device)
    return report.code

"""Mixed precision here: does dynamic loss scaling move, does fp16 overflow, is bf16 usable."""

from __future__ import annotations

from trainmedic.probes._torch import CANNOT_CHECK, Report, import_torch

SUMMARY = "fp16/bf16 autocast and GradScaler: scale moves on overflow, bf16 support"
STEPS = 6


def run() -> int:
    torch = import_torch("mixed precision and loss scaling")
    if torch is None:
        return CANNOT_CHECK
    report = Report()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (no GPU visible)"
    report.info(f"torch {torch.__version__} on {name}")

    big = torch.tensor(70000.0)
    report.check(bool(torch.isinf(big.to(torch.float16))),
                 "fp16 overflows above 65504 (70000 -> inf): fp16 needs loss scaling")
    report.check(bool(torch.isfinite(big.to(torch.bfloat16))),
                 "bf16 keeps fp32's exponent range (70000 stays finite): no loss scaling needed")

    if device == "cuda":
        supported = bool(torch.cuda.is_bf16_supported())
        major, minor = torch.cuda.get_device_capability(0)
        verdict = ("supported, prefer it over fp16" if supported
                   else "NOT supported: use fp16 with GradScaler")
        report.check(True, f"compute capability {major}.{minor}: bf16 {verdict}")
    else:
        report.skip("GPU bf16 support: no GPU visible (run this on the training node)")

    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    scales = [scaler.get_scale()]
    data = torch.randn(4, 8, device=device)
    for step in range(STEPS):
        optimizer.zero_grad()
        with torch.autocast(device, dtype=torch.float16):
            loss = model(data).float().mean()
        if step == 0:
            loss = loss * 1e30  # a deliberate overflow: dynamic scaling must halve and skip
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    report.info("loss scale per step: " + " -> ".join(f"{s:g}" for s in scales))
    report.check(scales[1] < scales[0], "an overflowing step halves the scale and is skipped")
    report.check(scales[-1] > scales[1], "the scale grows back after clean steps (it is dynamic)")
    return report.code

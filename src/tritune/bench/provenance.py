"""Where a measurement came from: GPU, driver, CUDA, torch, triton, tritune, date, command."""

from __future__ import annotations

import datetime as _dt
import functools
import shutil
import subprocess
import sys
from typing import Any


@functools.cache
def gpu_and_driver() -> tuple[str | None, str | None]:
    """The first GPU's name and the driver's version, asked of nvidia-smi once per process, without importing torch
    (a benchmark's parent process that must not touch CUDA can call it); ``(None, None)`` without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, None
    try:
        out = subprocess.run([exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines:  # (a failing nvidia-smi prints its complaint on stdout)
        return None, None
    name, _, driver = lines[0].rpartition(",")
    return (name.strip() or None, driver.strip() or None) if name else (driver.strip() or None, None)


def driver_version() -> str | None:
    return gpu_and_driver()[1]


#: What timings depend on besides the code and the libraries: results of two runs count together only where these agree.
MACHINE = ("gpu", "driver", "torch", "triton")


def machine_differences(then: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Where an earlier run's machine (``then``: a provenance, or its :data:`MACHINE` fields) differs from this one's,
    one phrase each ("gpu 'X' there, 'Y' here"); empty when they agree."""
    return [f"{k} {then.get(k)!r} there, {now.get(k)!r} here" for k in MACHINE if then.get(k) != now.get(k)]


def installed_version(dist: str) -> str | None:
    """A distribution's installed version from its metadata (``fla-core`` for the module ``fla``), without importing
    it; None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def provenance(**extra: Any) -> dict[str, Any]:
    import torch
    import triton

    from tritune._version import __version__

    d: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": triton.__version__,
        "tritune": __version__,
    }
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        d.update(gpu=p.name, capability=f"{p.major}.{p.minor}", sm_count=p.multi_processor_count,
                 cuda=torch.version.cuda, driver=driver_version())
    d.update(extra)
    return d


def measure_ceilings() -> dict[str, Any]:
    """Hardware ceilings measured on this device: device-to-device copy bandwidth and an fp16 cuBLAS matmul."""
    import torch

    from tritune.bench import bench

    n = 1 << 28  # 1 GiB of fp32 each way
    a = torch.randn(n, device="cuda")
    b = torch.empty_like(a)
    copy = bench(lambda: b.copy_(a), budget_s=0.5)
    copy_gbps = 2 * 4 * n / (copy.median_ms * 1e-3) / 1e9

    m = 8192
    x = torch.randn(m, m, device="cuda", dtype=torch.float16)
    y = torch.randn(m, m, device="cuda", dtype=torch.float16)
    mm = bench(lambda: torch.matmul(x, y), budget_s=0.5)
    tflops = 2 * m**3 / (mm.median_ms * 1e-3) / 1e12
    return {
        "device": torch.cuda.get_device_name(),
        "copy_gbps": round(copy_gbps, 1),
        "copy_bytes": 2 * 4 * n,
        "matmul_tflops": round(tflops, 1),
        "matmul": f"torch.matmul fp16 {m}x{m}x{m}",
        "copy_ms": copy.to_json(),
        "matmul_ms": mm.to_json(),
    }

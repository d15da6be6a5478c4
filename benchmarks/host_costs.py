"""Microseconds per call of the host primitives a cached launch is made of, under the installed Triton and torch:
where a dispatch's time goes when neither engine's own code is the cost (a grid lambda's ``triton.cdiv``, a
tensor's ``data_ptr``, the current-stream query). Both engines pay these alike; the numbers say how much of an
op's "inside the autotuner's run" time (benchmarks/real_libraries.py) is the caller's grid and the launch.

    PYTHONPATH=src python3 benchmarks/host_costs.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any


def per_call_us(fn: Callable[[], Any], n: int = 200_000, repeats: int = 5) -> float:
    """The fastest of ``repeats`` loops of ``n`` calls (interference only adds time), in microseconds a call."""
    return min(timeit.repeat(fn, number=n, repeat=repeats)) / n * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("-n", type=int, default=200_000)
    a = p.parse_args()
    import torch
    import triton
    from triton import knobs

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    t = torch.empty(16, device=dev)
    M, N = 4096, 1000
    grid2 = lambda m: (triton.cdiv(M, m["BLOCK_M"]) * triton.cdiv(N, m["BLOCK_N"]),)  # noqa: E731
    meta = {"BLOCK_M": 64, "BLOCK_N": 128}
    rows: dict[str, Callable[[], Any]] = {
        "empty lambda (the loop's own cost)": lambda: None,
        "triton.cdiv(4096, 64)": lambda: triton.cdiv(4096, 64),
        "(4096 + 63) // 64 (plain Python)": lambda: (M + 63) // 64,
        "grid lambda with two triton.cdiv": lambda: grid2(meta),
        "tensor.data_ptr()": t.data_ptr,
        "tensor.dtype": lambda: t.dtype,
        "tensor.numel()": t.numel,
        "knobs.runtime.launch_enter_hook": lambda: knobs.runtime.launch_enter_hook,
    }
    if dev == "cuda":
        from triton.runtime import driver

        rows["torch._C._cuda_getDevice()"] = torch._C._cuda_getDevice
        rows["torch.cuda.current_device()"] = torch.cuda.current_device
        rows["driver.active.get_current_stream(0)"] = lambda: driver.active.get_current_stream(0)
        # The incremental mode's racing call (CudaClock): a stream look-up, an idle query, the spin's launch, two
        # event records; and the driver's own calls through ctypes.PyDLL (no release of the interpreter's lock).
        import ctypes

        stream = torch.cuda.current_stream()
        ev = torch.cuda.Event(enable_timing=True)
        ev.record(stream)
        torch.cuda.synchronize()
        rows["torch.cuda.current_stream()"] = torch.cuda.current_stream
        rows["stream.query() (idle)"] = stream.query
        rows["torch.cuda._sleep(1)"] = lambda: torch.cuda._sleep(1)
        rows["event.record(stream)"] = lambda: ev.record(stream)
        rows["event.query()"] = ev.query
        rows["torch._C._cuda_getCurrentRawStream(0)"] = lambda: torch._C._cuda_getCurrentRawStream(0)
        try:
            lib = ctypes.PyDLL("libcuda.so.1")
            rec, query, sq = lib.cuEventRecord, lib.cuEventQuery, lib.cuStreamQuery
            rec.argtypes, query.argtypes, sq.argtypes = [ctypes.c_void_p] * 2, [ctypes.c_void_p], [ctypes.c_void_p]
            h, s_h = ev.cuda_event, stream.cuda_stream
            rows["PyDLL cuEventRecord(ev, stream)"] = lambda: rec(h, s_h)
            rows["PyDLL cuEventQuery(ev)"] = lambda: query(h)
            rows["PyDLL cuStreamQuery(stream)"] = lambda: sq(s_h)
            rows["ev.cuda_event (attribute)"] = lambda: ev.cuda_event
        except (OSError, AttributeError) as e:
            print(f"# no driver calls: {e}")
    got = {name: round(per_call_us(fn, a.n), 4) for name, fn in rows.items()}
    prov = {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "device": torch.cuda.get_device_name() if dev == "cuda" else platform.processor() or "cpu",
            "cdiv_type": type(triton.cdiv).__name__}  # fmt: skip
    print(f"# host costs, {prov}")
    for name, us in got.items():
        print(f"{us:9.3f} us  {name}")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "host_costs.json").write_text(json.dumps({"provenance": prov, "us_per_call": got}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Host microseconds per timed call of the incremental mode's CUDA-event clocks, A/B in one process on a GPU:
torch's calls (``CudaClock``, session 11's), torch's spans resolved with the driver's calls (``CudaClock`` with
``driver``: ``ready_ms``), the incremental mode's default (``cuda_clock()``, now the same as ``torch+ready``),
``torch+ready`` with the stream object found by its raw handle (``cached stream``: session 12's call 6 ran it as
``default``), and the driver's calls throughout (``DriverClock``, gated or with the spin), against the same launch untimed.

Each timed call is what a racing call's span is: ``start`` (stream look-up, idle query, the spin), a launch (a
one-element ``torch`` op: a few microseconds of host, a ~2 us kernel), ``stop``, and the handle submitted to a
running resolver thread whose callback keeps the milliseconds (``driver, polled``: no thread, resolved after the
round: the clock's own cost without the thread's share of the interpreter's lock; ``driver, spin``: the idle
spin instead of the gate, ``DriverClock(gate=False)``). Each clock counts its spins, its gated spans and its late
spans (``CudaClock.late``: the start event passed before the launch returned: host time inside; a gated span
cannot be late). ``--host-us``: host work of that many microseconds inside each span (a busy-wait between the
start and the launch, as another thread holding the interpreter's lock would make): a clock whose spans hold
host time shows it in the spans' median. Rounds of ``--calls`` calls per variant,
interleaved (``--rounds`` times, the order rotated), each ended by a synchronize and a pause for the resolver
to drain; per variant the median and the best round. The spans' median milliseconds show the clocks time alike.

``--sync-each``: a synchronize after every call (``benchmarks/serving.py``'s stream: every start finds the
stream idle and spins; the per-call figure then holds the device's time too); ``--numel``: the timed op's size.

    PYTHONPATH=src python3 benchmarks/clock_cost.py [--calls 4000] [--rounds 7] [--sync-each] [--numel N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

CFG = object()  # the timed op's config stand-in (clocks tell configs by identity)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--host-us", type=float, default=0.0)
    p.add_argument("--sync-each", action="store_true",
                   help="synchronize after every call, as benchmarks/serving.py's stream does (an idle stream at "
                   "every start: every span spins)")
    p.add_argument("--numel", type=int, default=1, help="elements of the timed op (longer kernels: 2**22 ~ 10 us)")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    hold_s = a.host_us / 1e6
    clock_now = time.perf_counter

    def hold() -> None:
        if hold_s > 0:
            end = clock_now() + hold_s
            while clock_now() < end:
                pass
    import torch
    import triton

    from tritune.serving.runtime import CudaClock, DriverClock, Resolver, cuda_clock, driver_event_calls

    if not torch.cuda.is_available():
        print("clock_cost: needs a GPU (CUDA events); nothing measured")
        return 1
    drv = driver_event_calls()
    assert drv is not None, "no CUDA driver library"
    x = torch.zeros(a.numel, device="cuda")
    sync = torch.cuda.synchronize if a.sync_each else (lambda: None)
    variants: dict[str, Any] = {
        "untimed": None,
        "torch": CudaClock(spin_idle=True, detect_late=True, cache_stream=False),  # session 11's clock
        "torch+ready": CudaClock(spin_idle=True, driver=drv, detect_late=True, cache_stream=False),
        "default": cuda_clock(spin_idle=True, detect_late=True),
        "cached stream": CudaClock(spin_idle=True, driver=drv, detect_late=True),  # the stream by its raw handle
        "driver": DriverClock(drv, spin_idle=True, detect_late=True),
        "driver, polled": DriverClock(drv, spin_idle=True, detect_late=True),  # no resolver thread: after the round
        "driver, spin": DriverClock(drv, spin_idle=True, detect_late=True, gate=False),
    }
    spans: dict[str, list[float]] = {n: [] for n in variants}
    resolvers = {n: Resolver(c, thread="polled" not in n) for n, c in variants.items() if c is not None}
    us: dict[str, list[float]] = {n: [] for n in variants}
    names = list(variants)
    for r in range(a.rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            clock, res, keep = variants[n], resolvers.get(n), spans[n].append
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if clock is None:
                for _ in range(a.calls):
                    hold()
                    x.add_(1.0)
                    sync()
            else:
                for _ in range(a.calls):
                    t = clock.start(CFG)  # one config throughout (DriverClock gates a config's spans after its first)
                    hold()
                    x.add_(1.0)
                    res.submit(clock.stop(t), keep)  # type: ignore[union-attr]
                    sync()
            us[n].append((time.perf_counter() - t0) / a.calls * 1e6)
            torch.cuda.synchronize()
            if res is not None and res._thread is None:
                res.poll()
            time.sleep(0.05)
    for res in resolvers.values():
        res.close()
    base = statistics.median(us["untimed"])
    rows = {n: {"median_us": round(statistics.median(v), 2), "best_us": round(min(v), 2),
                "over_untimed_us": round(statistics.median(v) - base, 2),
                "span_median_ms": round(statistics.median(spans[n]), 5) if spans[n] else None,
                "span_p90_ms": round(sorted(spans[n])[int(0.9 * len(spans[n]))], 5) if spans[n] else None,
                "spins": getattr(variants[n], "spins", None), "late": getattr(variants[n], "late_spans", None),
                "gates": getattr(variants[n], "gates", None),
                "launch_us": round(getattr(variants[n], "_launch_us", 0.0), 2),
                "errors": [repr(e) for e in resolvers[n].errors[:3]] if n in resolvers else []}
            for n, v in us.items()}  # fmt: skip
    prov = {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "device": torch.cuda.get_device_name(), "calls": a.calls, "rounds": a.rounds,
            "host_us": a.host_us, "sync_each": a.sync_each, "numel": a.numel}  # fmt: skip
    print(f"# clock cost per timed call, {prov}")
    for n, row in rows.items():
        print(f"{n:12s} {row}")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "clock_cost.json").write_text(json.dumps({"provenance": prov, "rows": rows, "us": us}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

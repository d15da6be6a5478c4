"""Timing helpers shared by the benchmarks: the host-side loop and command line of the dispatch benchmarks
(``dispatch.py``, ``compat_dispatch.py``: wall time per call of a cached kernel, median over rounds), and the
paired device-time comparison of two contestants (``timer_agreement.py``, ``search_tune.py``'s cuBLAS ratio)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch


def per_call_us(fn: Callable[[], Any], calls: int, rounds: int) -> float:
    """Median over ``rounds`` of the wall time per call, in microseconds, of ``calls`` back-to-back calls of
    ``fn`` followed by one GPU synchronize; 50 untimed calls warm up first."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        res.append((time.perf_counter() - t) / calls * 1e6)
    return sorted(res)[len(res) // 2]


def dispatch_args() -> argparse.Namespace:
    """``--out DIR`` (required), ``--n`` elements (1024), ``--calls`` per round (2000), ``--rounds`` (7)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    return ap.parse_args()


class Plain:
    """CUDA events around single calls after a 256 MB memset (``matmul_probe.py``'s ``Timer``), optionally with a
    GPU spin between the memset and the start event; the median of ``reps`` calls."""

    def __init__(self, pad_us: float = 0.0) -> None:
        self.buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        self.pad_cycles = 0
        if pad_us > 0:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1_000_000)
            s.record()
            torch.cuda._sleep(1_000_000)
            e.record()
            e.synchronize()
            self.pad_cycles = int(pad_us * 1_000_000 / max(s.elapsed_time(e) * 1e3, 1.0))

    def __call__(self, fn: Any, reps: int = 20) -> float:
        fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.buf.zero_()
            if self.pad_cycles:
                torch.cuda._sleep(self.pad_cycles)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def paired(a: Any, b: Any, pairs: int, pad_us: float = 20.0) -> tuple[list[float], list[float]]:
    """Times of ``a`` and ``b`` in ``pairs`` adjacent pairs (order alternating), each call after a 256 MB memset
    and a ``pad_us`` spin, in batches of 50 pairs between synchronizations."""
    plain = Plain(pad_us=pad_us)
    a(), b()
    ta: list[float] = []
    tb: list[float] = []
    done = 0
    while done < pairs:
        n = min(50, pairs - done)
        evs = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(n)]
        for i, (s0, e0, s1, e1) in enumerate(evs):
            first, second = (a, b) if (done + i) % 2 == 0 else (b, a)
            for fn, s, e in ((first, s0, e0), (second, s1, e1)):
                plain.buf.zero_()
                torch.cuda._sleep(plain.pad_cycles)
                s.record()
                fn()
                e.record()
        torch.cuda.synchronize()
        for i, (s0, e0, s1, e1) in enumerate(evs):
            x, y = s0.elapsed_time(e0), s1.elapsed_time(e1)
            if (done + i) % 2:
                x, y = y, x
            ta.append(x)
            tb.append(y)
        done += n
    return ta, tb


def paired_ratio(a: Any, b: Any, pairs: int) -> tuple[float, list[float], float, list[float], list[float]]:
    """``b``'s time / ``a``'s, pair by pair (:func:`paired`): the median ratio, its 99% interval (ranks of the
    median) and that interval's coverage, and both contestants' times."""
    from tritune.bench import median_ci_ranks

    t_a, t_b = paired(a, b, pairs)
    r = sorted(y / x for x, y in zip(t_a, t_b))
    lo, hi, cover = median_ci_ranks(len(r), 0.99)
    return statistics.median(r), [r[lo], r[hi]], cover, t_a, t_b

"""The host-side timing loop and command line shared by the dispatch benchmarks (``dispatch.py``,
``compat_dispatch.py``): wall time per call of a cached kernel, median over rounds."""

from __future__ import annotations

import argparse
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

"""The serving benchmark's stream, replayed on a FAKE clock with the H200's timings of every key.

``h200_landscapes.json`` holds what tritune's normal mode measured on an H200 on 2026-12-01 for
every config at each of the 24 keys of the serving benchmark's matmul and RMSNorm: 18-436 us
and 3-28 us. The stream is the benchmark's (6,000 calls, Zipf s=1.1 over 24 buckets, seed 0: hot buckets of
1744, 870, 541, 389, 324 and 267 calls). The real :class:`~tritune.serving.incremental.Incremental` (state
machine, per-key budgets, checks, pruning, promotion) serves it; no kernel runs (FAKE launch), and the FAKE
clock says what each event pair measured:

- a real call or a scratch run: the config's H200 time, +-4% noise, plus ``gap_ms`` (an idle device's event
  pair also times the launch's host work after its first mark);
- a check's copies span and its comparison span: ``gap_ms`` plus the bytes they move (the outputs twice each)
  at 3 TB/s (honest spans: launches only, prepared outside; the resolver kept out of them);
- ``host_check_ms``, when given, is added to a check as the H200 run's spans measured it (0.5-1 ms each:
  Triton's binding of the comparison, torch's allocations and the resolver's Python inside the spans);
- ``stall``, when given, is the chance that a span (a real call's or a check's) is *stretched* by 0.5-5 ms
  while the background compiles run (the first ``stall_calls`` calls): another thread held the interpreter's
  lock when the launch gave it up, and on an idle device the event pair measured the wait. The FAKE host clock
  (``StreamClock.host``) advances by the same wait, as the caller's ``perf_counter`` would.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
from incremental_fakes import FakeCompiles

import tritune
from tritune.serving.incremental import Incremental
from tritune.serving.state import IncrementalOptions
from tritune.store import MemoryStore

DATA = json.loads((Path(__file__).parent / "h200_landscapes.json").read_text())
BLOCKS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)  # stand-ins for the 8 configs, in declared order
CALLS = 6000


@triton.jit
def pair_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr):  # never launched (FAKE launch): a (M, N) key
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < m * n), mask=offs < m * n)


def zipf_stream(n_buckets: int, calls: int, seed: int, s: float = 1.1) -> list[int]:
    """The serving benchmark's stream (the same generator)."""
    rng = random.Random(seed)
    order = list(range(n_buckets))
    rng.shuffle(order)
    weights = [1.0 / (r + 1) ** s for r in range(n_buckets)]
    return [order[i] for i in rng.choices(range(n_buckets), weights=weights, k=calls)]


class StreamClock:
    """FAKE clock for the stream (see the module docstring); ``bucket`` is set by the test before each call."""

    def __init__(self, times: list[list[float]], out_bytes: list[int], gap_ms: float, host_check_ms: float,
                 seed: int = 0) -> None:  # fmt: skip
        self.times, self.out_bytes, self.gap_ms, self.host_check_ms = times, out_bytes, gap_ms, host_check_ms
        self.rng = random.Random(seed)
        self.bucket = 0
        self.spans = 0  # spans of a check (copies and comparison) measured
        self.stall, self.stall_calls, self.calls = 0.0, 0, 0
        self.now = 0.0  # FAKE host seconds (advanced only by stalls)
        self.stalls = random.Random(seed + 1)

    def host(self) -> float:
        return self.now

    def start(self, cfg: Any) -> Any:
        return (cfg, self.bucket)

    def stop(self, token: Any) -> float:
        cfg, b = token
        wait = 0.0
        if self.calls < self.stall_calls and self.stalls.random() < self.stall:
            wait = self.stalls.uniform(0.5, 5.0)  # FAKE: another thread held the interpreter's lock
            self.now += wait / 1e3
        if cfg is None:  # a check's copies or comparison: the outputs' bytes twice at 3 TB/s, one launch
            self.spans += 1
            return self.gap_ms + 2 * self.out_bytes[b] / 3e9 + self.host_check_ms / 2 + wait
        t = self.times[b][BLOCKS.index(cfg.kwargs["BLOCK"])]
        return t * (1 + self.rng.uniform(-0.04, 0.04)) + self.gap_ms + wait

    def elapsed_ms(self, handle: Any) -> float:
        return float(handle)

    def capturing(self) -> bool:
        return False


def serve(kernel: str, gap_ms: float = 0.004, host_check_ms: float = 0.0, seed: int = 0,
          options: IncrementalOptions | None = None, pool: bool = True, stall: float = 0.0,
          stall_calls: int = 3000) -> dict[str, Any]:  # fmt: skip
    d = DATA["kernels"][kernel]
    sizes = [(s, 4096) if isinstance(s, int) else tuple(s) for s in d["sizes"]]
    out_bytes = [m * n * 2 for m, n in sizes]  # float16 outputs [M, 4096] or [M, N]
    clock = StreamClock(d["times_ms"], out_bytes, gap_ms, host_check_ms, seed)
    clock.stall, clock.stall_calls = stall, stall_calls
    comp = FakeCompiles()
    inc = Incremental(options or IncrementalOptions(), clock=clock, compiler=comp, thread=False)
    inc.host_clock = clock.host  # FAKE host time: stalls only
    if not pool:  # INSTRUMENTED: no key spends from the kernel's pool (each only from its own bucket)
        inc._frequent = lambda st: False  # type: ignore[method-assign]
    k = tritune.autotune(configs=[triton.Config({"BLOCK": b}) for b in BLOCKS], key=["m", "n"],
                         store=MemoryStore(), incremental=inc)(pair_kernel)  # fmt: skip
    k.launch = lambda *a, **kw: None  # FAKE launch: the fake clock alone says what a call took
    x, out = torch.zeros(64), torch.zeros(64)
    stream = zipf_stream(len(sizes), CALLS, 0)
    for i, b in enumerate(stream):
        clock.bucket, clock.calls = b, i
        k[(1,)](x, out, *sizes[b])
        comp.finish()  # the background compiles are done by the next call (they take ~1 s of 6,000 calls)
        inc.resolver().poll()
    hot = [b for b, n in Counter(stream).items() if n >= 200]
    conv = 0
    for b in hot:
        ch = next((c for key, c in inc.promoted.items() if tuple(key[:2]) == sizes[b]), None)
        times = d["times_ms"][b]
        if ch is not None and times[BLOCKS.index(ch.config.kwargs["BLOCK"])] <= 1.02 * min(times):
            conv += 1
    return {"hot_converged": conv / len(hot), "promoted": len(inc.promoted), "checks": clock.spans // 2,
            "extra": inc.budget.extra_fraction, "inc": inc, "hot": hot, "sizes": sizes}


@pytest.mark.parametrize("kernel", ["matmul", "rmsnorm"])
@pytest.mark.parametrize("gap_ms", [0.004, 0.010])
def test_the_h200_stream_converges_its_hot_buckets_within_the_bound(kernel, gap_ms):
    # Here: matmul 19 of 24 keys promoted, 91-93 checks, 8.5% extra; rmsnorm 7-8 keys, 79-92 checks, 8.4%
    # (with the kernel's pool as the sum of what keys saved, lent token by token, ~10 checks fewer than when
    # a frequent key could spend the whole unspent total; the starved runs below get 9-34).
    r = serve(kernel, gap_ms=gap_ms)
    assert r["extra"] <= 0.10 + 1e-9, r  # the bound holds at the end of the stream, not on average
    assert r["hot_converged"] == 1.0, r  # every hot bucket promoted, to within 2% of its best
    assert r["checks"] >= 75, r


def test_a_far_neighbour_no_longer_prunes_the_winner(monkeypatch):
    """The GEMM's best config at M = 96 and 128 (BM=16 / BM=32 tiles) is 2-3x slower from M = 320 up:
    pruning by any nearest tuned key at a flat ratio (the earlier rule) left 2 of the 6 hot buckets on a
    config 1.2-1.5x slower than their best. ``prune_distance=1`` (a factor of 2 in M) keeps them, and so does
    the ratio that grows with the distance (:func:`prune_threshold`), even with no distance limit."""
    import tritune.serving.state as ss

    assert serve("matmul")["hot_converged"] == 1.0
    assert serve("matmul", options=IncrementalOptions(prune_distance=100.0))["hot_converged"] == 1.0
    monkeypatch.setattr(ss, "PRUNE_NEAR", math.inf)  # a flat ratio at any distance
    far = serve("matmul", options=IncrementalOptions(prune_distance=100.0))
    assert far["hot_converged"] < 1.0, far


def test_the_prune_threshold_grows_with_the_distance():
    from tritune.serving.state import prune_threshold

    assert prune_threshold(1.3, 0.0) == prune_threshold(1.3, 0.5) == 1.3
    assert prune_threshold(1.3, 1.0) == pytest.approx(1.69)
    assert prune_threshold(1.3, 0.83) > 1.29 * 1.15  # H200: the winner at M = 1152 ran 1.29x at M = 2048


@pytest.mark.parametrize("kernel", ["matmul", "rmsnorm"])
def test_checks_charged_the_h200_runs_host_gaps_starve_the_stream(kernel):
    """The H200 run's accounting (0.7 ms a check; here: matmul 5 keys promoted, 34 checks; rmsnorm none, 9
    checks; on the H200: 3 and 1 keys, 42 and 46 checks): few checks, few promotions. The bound now holds
    even then (~10% here; 11.5% and 12.7% on the H200), as a first check is estimated from the others'."""
    r = serve(kernel, host_check_ms=0.7)
    honest = serve(kernel)
    assert r["extra"] <= 0.10 + 1e-9, r
    assert r["checks"] * 2 < honest["checks"], (r, honest)
    assert r["hot_converged"] < honest["hot_converged"], (r, honest)


@pytest.mark.parametrize(("kernel", "host_check_ms"), [("matmul", 0.2), ("rmsnorm", 0.05)])
def test_frequent_keys_spending_the_pool_converge_with_some_host_left_in_the_spans(kernel, host_check_ms):
    """If the GPU's spans still hold some host time (0.2 ms a check is 5-10 calls of the GEMM, 0.05 ms 2-15
    calls of the RMSNorm), the hot keys still converge: their checks may spend what rare keys earned and
    did not spend. Each key from its own bucket only: matmul 4 of 6 hot buckets, rmsnorm 3 of 6."""
    pooled = serve(kernel, host_check_ms=host_check_ms)
    own = serve(kernel, host_check_ms=host_check_ms, pool=False)
    assert pooled["extra"] <= 0.10 + 1e-9 and own["extra"] <= 0.10 + 1e-9, (pooled, own)
    assert pooled["hot_converged"] == 1.0, pooled
    assert own["hot_converged"] <= 4 / 6, own


@pytest.mark.parametrize("kernel", ["matmul", "rmsnorm"])
@pytest.mark.parametrize("stall", [0.02, 0.05])
def test_spans_stretched_by_another_thread_neither_stall_checks_nor_skew_the_race(kernel, stall):
    """The H200's stream: the compile thread's Python (loads, launcher builds) held the interpreter's lock
    while a launch inside an event span gave it up; a call waited 15 ms, and a check's copies span measured
    0.21 ms for ~10 us of copies. Charged at face value, one such check set its key's next estimate (and
    every new key's first) to milliseconds and put the key in debt: here the earlier code left 1-2 hot
    matmul buckets unpromoted (one with its last candidate, the winner, waiting for a check). Stretched spans
    are now found by the caller's clock: no sample, no estimate, the check charged its estimate."""
    r = serve(kernel, gap_ms=0.012, stall=stall)
    assert r["hot_converged"] == 1.0, r
    assert r["extra"] <= 0.10 + 1e-9, r
    inc = r["inc"]
    assert inc.stretched[0] > 0  # the FAKE stalls were seen

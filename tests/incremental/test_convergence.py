"""The incremental mode converges on short kernels within the calls a hot serving bucket gets.

Drives the real :class:`~tritune.tune.incremental.Incremental` (state machine, per-key budget, checks,
promotion) with a FAKE clock replaying recorded H200 timings and a FAKE launch (no kernel runs: the clock
says what each config "took"). The landscapes are ``benchmarks/serving.py``'s re-timed configs of its two
hottest buckets per kernel (run of 2026-12-01, quick mode); a check "costs" its scratch run plus copies and
comparison worth ``check_extra`` real calls, as measured for a memory-bound RMSNorm (its outputs are a
third of its traffic; a check copies them and reads both copies once more).
"""

from __future__ import annotations

import pytest
import torch
import triton
from incremental_fakes import FakeClock, FakeCompiles

import tritune
from kernels import scale_kernel
from tritune.store import MemoryStore
from tritune.tune.incremental import Incremental
from tritune.tune.serving_state import IncrementalOptions

BLOCKS = (64, 128, 256, 512, 1024, 2048)
# ms per config on the H200 (do_bench), the quick run's hot buckets 10 and 18 of each kernel.
LANDSCAPES = {
    "rmsnorm-3584": (0.015125, 0.014309, 0.013523, 0.014134, 0.013597, 0.012668),
    "rmsnorm-14336": (0.048309, 0.051362, 0.040043, 0.041366, 0.045690, 0.049799),
    "matmul-128": (0.0411, 0.0406, 0.0374, 0.0425, 0.0320, 0.0407),
    "matmul-1280": (0.0899, 0.1444, 0.0847, 0.1420, 0.2058, 0.2756),
}


def promote_within(times: tuple[float, ...], calls: int, seed: int, check_extra: float) -> tuple[int | None, int]:
    """Serve ``calls`` calls of one key; the promoted BLOCK (None: still tuning) and the call it came at."""
    t = dict(zip(BLOCKS, times))
    # FAKE: +-4% noise, a check's two spans add check_extra calls' worth of copies and comparison.
    clock = FakeClock(t, noise=0.04, seed=seed, span_ms=check_extra * t[BLOCKS[0]] / 2)
    comp = FakeCompiles()
    inc = Incremental(IncrementalOptions(), clock=clock, compiler=comp, thread=False)
    configs = [triton.Config({"BLOCK": b}) for b in BLOCKS]
    k = tritune.autotune(configs=configs, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    k._launch = lambda *a, **kw: None  # FAKE launch: the fake clock alone says what a call took
    x, out = torch.zeros(64), torch.zeros(64)
    for i in range(calls):
        k[(1,)](x, out, 64)
        if i == 0:
            comp.finish()
        inc.resolver().poll()
        if inc.promoted:
            (ch,) = inc.promoted.values()
            return ch.config.kwargs["BLOCK"], i
    return None, calls


@pytest.mark.parametrize("name", sorted(LANDSCAPES))
def test_hot_buckets_promote_within_200_calls_to_within_2_percent(name):
    times = LANDSCAPES[name]
    best = min(times)
    check_extra = 1.3 if name.startswith("rmsnorm") else 0.1
    results = [promote_within(times, 200, seed, check_extra) for seed in range(10)]
    good = [b for b, _ in results if b is not None and times[BLOCKS.index(b)] <= 1.02 * best]
    assert len(good) >= 9, results


def test_a_costly_check_under_the_old_accounting_would_not_fit():
    # The same short kernel with checks worth 8 calls (torch.isclose's ~15 kernels on a memory-bound
    # output): 5 checks need 40 calls' worth, 400 calls at 10%: no promotion within 200 calls.
    results = [promote_within(LANDSCAPES["rmsnorm-3584"], 200, seed, 7.0) for seed in range(3)]
    assert all(b is None for b, _ in results), results

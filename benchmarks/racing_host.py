"""Host microseconds per call of the incremental mode's racing path, on the CPU, without a GPU: what tritune's
own Python costs the caller's thread while a key races, against the cached fast path of the same kernel.

Everything the device would do is FAKE: a FAKE torch module for the CUDA-event clock (events that record
nothing; a stream that says "busy" or "idle" as asked), FAKE compiles (every candidate delivered at once)
and a FAKE fast launcher (a no-op where the real one calls cuLaunchKernel). So the numbers are the Python of
the dispatch, the state machine and the clock, and (with the resolver thread running) its share of the
interpreter's lock; the device calls' own host time (an event record ~2 us, a stream query, the spin's
launch) is not in them. The garbage collector is off in the timed loops (one collection of torch's objects
in a 160-call window would be most of its time). The H200's ``benchmarks/serving.py`` measures the whole thing (``host cost per
call``). ``--profile`` prints cProfile's top entries of the racing loop.

    PYTHONPATH=src python3 benchmarks/racing_host.py [--rounds N] [--idle] [--profile] [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")  # no GPU needed: nothing is launched

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # never launched (FAKE launcher)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


class FakeTorch:
    """FAKE torch module for :class:`~tritune.serving.runtime.CudaClock`: events that record nothing, an
    event pair that "took" 10 us +-10% (seeded: every config alike, so the race stays open), and a stream whose
    query says ``idle`` (idle: the clock queues its spin, here a no-op)."""

    def __init__(self, idle: bool, seed: int = 0) -> None:
        rng = random.Random(seed)

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                pass

            def record(self, stream: Any = None) -> None:
                pass

            def synchronize(self) -> None:
                pass

            def query(self) -> bool:
                return False  # the span's start not passed yet when the launch returned: not late

            def elapsed_time(self, other: Any) -> float:
                return 0.01 * (0.9 + 0.2 * rng.random())

        class Stream:
            def query(self) -> bool:
                return idle

        stream = Stream()
        self.cuda = SimpleNamespace(Event=Event, current_stream=lambda: stream, _sleep=lambda cycles: None,
                                    is_current_stream_capturing=lambda: False)  # fmt: skip


class FakeCompiles:
    """FAKE compile service: every candidate compiles at once."""

    def start(self, tuned: Any, configs: Any, args: Any, kwargs: Any, grid: Any, deliver: Any) -> None:
        for c in configs:
            deliver(c, None)


class FakeFast:
    """FAKE fast launcher (what :func:`tritune.decorator.dispatch.make_fast` returns): launching does nothing."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        self.launch = lambda args, grid: None


BLOCKS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)


def build(idle: bool, thread: bool, seed: int = 0, resolve: str = "thread") -> tuple[Any, Any, tuple[Any, ...]]:
    """A kernel of 8 configs in incremental mode, FAKE device, every candidate checked and racing: the
    options are the defaults but ``rel_tol`` (1e-9: no tie, so the race stays open until the budget rule
    at ``max_samples``) and ``gpu_fraction`` (1.0: the checks come at once)."""
    import torch

    import tritune
    import tritune.decorator.dispatch as dispatch
    import tritune.serving.incremental as incmod
    from tritune.serving.incremental import Incremental
    from tritune.serving.runtime import CudaClock
    from tritune.serving.state import IncrementalOptions

    dispatch.make_fast = FakeFast  # type: ignore[assignment]  # FAKE: no binary to launch on the CPU
    incmod._empty_like = lambda t: t  # FAKE scratch buffers (checks only)
    incmod.plan_comparison = lambda *a, **kw: (lambda: None, lambda: None)  # type: ignore[assignment]
    configs = [triton.Config({"BLOCK": b}) for b in BLOCKS]
    args = (torch.zeros(1024), torch.zeros(1024), 1024)
    opts = IncrementalOptions(gpu_fraction=1.0, rel_tol=1e-9, resolve=resolve)
    clock = CudaClock(spin_idle=True, torch_module=FakeTorch(idle, seed), detect_late=opts.drop_late)  # FAKE device
    inc = Incremental(opts, clock=clock, compiler=FakeCompiles(), thread=thread, outputs=["out_ptr"])
    inc.host_clock = time.perf_counter
    k = tritune.autotune(configs=configs, key=["n"], store=False, incremental=inc)(scale_kernel)
    k._fast_ok = True  # FAKE: as on a GPU (the fast launchers are the FAKE ones above)
    k.launch = lambda *a, **kw: None  # type: ignore[method-assign]  # FAKE launch for Triton's path (first call, checks' reference)
    for _ in range(400):  # first call, checks, until all eight race
        k[(1,)](*args)
        if thread:
            time.sleep(0.0005)
        else:
            inc.resolver().poll()
        st = next(iter(inc.states.values()))
        if len(st.applied.racing) == len(BLOCKS):
            break
    assert len(st.applied.racing) == len(BLOCKS), st.diagnose()["blocked"]
    return k, inc, args


def cached_kernel(args: tuple[Any, ...]) -> Any:
    import tritune
    from tritune.decorator.choice import Choice

    configs = [triton.Config({"BLOCK": b}) for b in BLOCKS]
    k = tritune.autotune(configs=configs, key=["n"], store=False)(scale_kernel)
    k._fast_ok = True
    k._call_key = k.key_spec.compiled_call_key(args)
    k._hot[k._call_key(args)] = (Choice(configs[0], "untuned"), FakeFast().launch)
    return k


def racing_round(idle: bool, seed: int, calls: int = 160, chunk: int = 16) -> tuple[float, float, float, float]:
    """One fresh key racing ``calls`` calls (fewer than 8 x max_samples: it stays open): the caller's
    microseconds per call (resolver polled between chunks, untimed), the resolver's per event pair, per
    call with the resolver thread running (a second fresh key), and per call with ``resolve="inline"`` (a
    third: each call resolves the pairs before it, the thread lingering)."""
    k, inc, args = build(idle, thread=False, seed=seed)
    run, res = k[(1,)], inc.resolver()
    gc.collect()
    gc.disable()  # a collection of torch's objects inside a 160-call window would be most of its time
    caller = resolver = 0.0
    pairs = 0
    for _ in range(calls // chunk):
        t0 = time.perf_counter()
        for _ in range(chunk):
            run(*args)
        t1 = time.perf_counter()
        pairs += res.poll()
        resolver += time.perf_counter() - t1
        caller += t1 - t0
    gc.enable()
    assert not inc.promoted, "the race closed early: the measurement would include cached calls"
    threaded = threaded_us(idle, seed, calls, "thread")
    inline = threaded_us(idle, seed, calls, "inline")  # each call resolves what is done
    return caller / calls * 1e6, resolver / max(pairs, 1) * 1e6, threaded, inline


def threaded_us(idle: bool, seed: int, calls: int, resolve: str) -> float:
    """Microseconds per call of a fresh racing key with the resolver thread running and ``resolve`` as given."""
    k, inc, args = build(idle, thread=True, seed=seed, resolve=resolve)
    run = k[(1,)]
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    for _ in range(calls):
        run(*args)
    us = (time.perf_counter() - t0) / calls * 1e6
    gc.enable()
    assert not inc.promoted, "the race closed early: the measurement would include cached calls"
    return us


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15, help="fresh keys measured (the median is printed)")
    p.add_argument("--idle", action="store_true", help="the FAKE stream says idle: the clock queues its spin")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    rows = [racing_round(a.idle, seed) for seed in range(a.rounds)]
    _, _, args = build(a.idle, thread=False)
    cached = cached_kernel(args)
    run = cached[(1,)]
    t0 = time.perf_counter()
    for _ in range(20000):
        run(*args)
    cached_us = (time.perf_counter() - t0) / 20000 * 1e6
    res = {"idle": a.idle, "rounds": a.rounds, "cached_us": cached_us,
           "racing_caller_us": statistics.median(r[0] for r in rows),
           "resolver_us_per_pair": statistics.median(r[1] for r in rows),
           "racing_with_thread_us": statistics.median(r[2] for r in rows),
           "racing_inline_us": statistics.median(r[3] for r in rows)}  # fmt: skip
    print(f"per call (CPU, FAKE device, stream {'idle' if a.idle else 'busy'}, median of {a.rounds} keys): cached "
          f"{cached_us:.2f} us; racing: caller {res['racing_caller_us']:.2f} us + resolver "
          f"{res['resolver_us_per_pair']:.2f} us per event pair; racing with the resolver thread running "
          f"{res['racing_with_thread_us']:.2f} us; resolved inline by the calls {res['racing_inline_us']:.2f} us")  # fmt: skip
    if a.profile:
        import cProfile
        import pstats

        k, inc, args = build(a.idle, thread=False)
        run = k[(1,)]
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(160):
            run(*args)
        inc.resolver().poll()
        pr.disable()
        pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(18)
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "racing_host.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

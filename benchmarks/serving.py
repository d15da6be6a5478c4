"""A serving simulation: a skewed stream of calls over many shape buckets, for every way of tuning, in one run.

    PYTHONPATH=src python3 benchmarks/serving.py --out DIR            # the H200: 6,000 calls, 24 buckets (~1.5 min)
    PYTHONPATH=src python3 benchmarks/serving.py --out DIR --tiny     # the earlier, host-bound shapes
    PYTHONPATH=src python3 benchmarks/serving.py --out DIR --quick    # 2,000 calls, 20 buckets, 6 configs
    PYTHONPATH=src python3 benchmarks/serving.py --out DIR --dry-run  # CPU, Triton's interpreter, tiny shapes
    ... --engines incremental --watchdog-ms 20   # attribution: a traceback of every thread when a call is slow

Two kernels at serving shapes (:func:`workloads`: a projection GEMM of M = 16..2048 tokens by 4096x4096, keyed
on M, N, K; a chunked RMSNorm of M = 16..2048 rows of hidden 4096 or 8192, keyed on M, N), each fed one seeded Zipf stream
(s = 1.1) of ``--calls`` calls over ``--buckets`` shape buckets. Engines, each on fresh decorator objects, in
this order: ``tritune`` (normal mode, fresh store: it runs first, so Triton's cache is warm for the others,
as the 50 ms worst-call target assumes), ``untuned`` (plain ``triton.jit`` launches of the first
config: no autotuner at all), ``triton`` (``triton.autotune``), ``incremental`` (``incremental=True``, fresh
store), ``pretuned`` (tritune on the store the ``tritune`` engine wrote: every key a hit, the ideal).

Per call: the host time until the launch returned, the time until the device finished it (one synchronize
per call), the garbage collector's pauses inside it, and for ``incremental`` the phase (``first``: a new
key; ``check``; ``race``; ``fast``: promoted) and the background work (compiles, loads, checks,
promotions: ``Incremental.start_trace``) that overlapped the worst call. After the streams, on every bucket
with >= 200 calls, every config is re-timed *interleaved* (rounds over all configs in rotated order, median of
rounds) by two judges: ``warm`` (tritune's ``EventTimer.for_policy("warm")``: no L2 flush, the same tensors run
after run) and ``cold`` (``do_bench``, L2 flushed before every run). Which one matches the stream is a fact of
the stream, decided before any result by one rule (:func:`primary_judge`): a bucket's data stays in L2 between
its calls only if the kernel's whole stream working set (every bucket's distinct tensors) fits in L2; when it does
not, the calls of the other buckets in between evict it, and the stream reads cold. On the H200 both kernels'
working sets are far larger than its 50 MB L2 (24 GEMM weights of 32 MB each; the RMSNorm's inputs and outputs),
so the cold judge is primary for both (the GEMM's weight is not shared between buckets: each has its own). Both
verdicts are printed,
and where the two disagree on a bucket's best, a config may be "slower" only under the other judge.
A third judge is primary: the ``stream`` judge (:func:`stream_judge`) replays the stream's first
calls (``--stream-judge-calls``, 30,000) once per set of picks, each bucket on a config some engine ended on, every
call timed by events, so each pick runs in the cache state the stream really leaves it (the warm and cold judges
bracket that state; the L2 rule above picks one bracket for every bucket, and a hot bucket of 128 KB is in
neither). It times only the engines' picks, so it scores against the pretuned pick, not against all configs; the
L2 rule's judge still gives that stricter score, and its "vs pretuned" verdict is printed beside the primary one.
Each engine's final config is scored two ways under a judge: against the pretuned ideal's pick, round by
round (:func:`paired_ratio`: the target "<= 1.02x of the pretuned best"), and, stricter, against the smallest
of all configs' medians (:func:`ratio_interval`), a minimum over noisy medians that the pretuned ideal itself
misses on several buckets of these 5-10 us kernels (on an H200: 20-23 of 24).
For ``incremental``, each hot bucket it did not promote is diagnosed as the stream left it
(``Incremental.diagnose``: every candidate's phase, samples and median, checks waiting, the bucket's tokens,
the pool, the rule that holds it back, and at which of the key's calls its candidates compiled and were
checked). ``incremental`` counts as converged on a bucket only if it promoted there, to a config
<= 1.02x the pretuned best (or, strict, the best). Also measured: the compile time of one config (a fresh cache), the largest difference
between configs' outputs in units of the check's default tolerance (what justifies it), the check's
comparison on the GPU (integers bit-exact), and the host cost per call of the incremental mode while a key
races (real launches, real CUDA events, the resolver thread running) against the cached fast path.
``--repeat N`` runs the three cheap engines (``untuned``, ``incremental``, ``pretuned``) N times in all, each time on
fresh decorator objects (a fresh incremental store; the pretuned store the ``tritune`` engine wrote), the order
rotated by one each time; the total's verdict is then the median of the repetitions' incremental / untuned
ratios, each repetition's convergence scored by the same judges. On the H200 the host's speed drifts by tens of
percent between processes and within one (the untuned engine's cached calls' host p50 0.0141-0.0230
ms between six runs of one code, the pretuned engine's 0.0073-0.0113 ms), so one engine run after another is
a noisy ratio; rotating the order spreads the drift over all three. ``--interleave N`` runs the cheap engines
of each repetition together instead (:func:`run_interleaved`): chunks of N calls in turn, so every engine meets the
same host; an incremental engine is charged its background threads' CPU time during the others' chunks.
Writes DIR/serving.json (raw, with provenance) and prints every target with its verdict: the stream's total at most
1.1x the untuned first config's, at least 90% of hot buckets within 1.02x of the pretuned pick, no call over 50 ms,
extra GPU time within the 10% bound.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "--dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl
from real_libraries import GpuHold  # (a benchmark script beside this one)

import tritune


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rows[:, None] * K + (k0 + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k0 + ks)[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(b_ptr + (k0 + ks)[:, None] * N + cols[None, :],
                    mask=((k0 + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)  # fmt: skip
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))  # fmt: skip


@triton.jit
def rms_kernel(x_ptr, w_ptr, y_ptr, M, N, eps, BLOCK: tl.constexpr):  # M: rows (one program each; a key part)
    row = tl.program_id(0)
    sq = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        sq += x * x
    inv = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / N + eps)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + cols, (x * inv * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def mm_configs(dry: bool, quick: bool) -> list[Any]:
    if dry:
        return [triton.Config({"BM": m, "BN": 16, "BK": 16}, num_warps=1) for m in (16, 32)]
    shapes = [(128, 128, 64, 8, 3), (64, 64, 32, 4, 4), (64, 128, 64, 4, 3), (128, 64, 32, 4, 4),
              (32, 64, 64, 4, 4), (16, 64, 128, 4, 4), (128, 256, 64, 8, 3), (16, 128, 64, 4, 5)]  # fmt: skip
    shapes = shapes[:6] if quick else shapes
    return [triton.Config({"BM": m, "BN": n, "BK": k}, num_warps=w, num_stages=s) for m, n, k, w, s in shapes]


class Plain:
    """The ``untuned`` engine: ``kernel[grid](...)`` launches the JIT directly with one config's values."""

    def __init__(self, jit: Any, cfg: Any) -> None:
        self.jit, self.cfg = jit, cfg
        self.meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *a: self.jit[grid](*a, **self.meta)


def rms_configs(dry: bool, quick: bool) -> list[Any]:
    if dry:
        return [triton.Config({"BLOCK": b}, num_warps=1) for b in (16, 64)]
    grid = [(1024, 4), (512, 4), (2048, 8), (4096, 8), (1024, 8), (2048, 4), (4096, 16), (8192, 16)]
    return [triton.Config({"BLOCK": b}, num_warps=w) for b, w in (grid[:6] if quick else grid)]


class Workload:
    """One kernel's buckets: ``make(i)`` gives the call's tensors, ``launch(k, t)`` calls a decorated kernel."""

    def __init__(self, name: str, jit: Any, key: list[str], configs: list[Any], sizes: list[Any],
                 make: Callable[[Any], tuple[Any, ...]], launch: Callable[[Any, tuple[Any, ...]], Any],
                 outputs: list[str]) -> None:  # fmt: skip
        self.name, self.jit, self.key, self.configs, self.sizes = name, jit, key, configs, sizes
        self.make, self.launch, self.outputs = make, launch, outputs


#: Serving shapes (the default): token counts of batch/sequence buckets, as a server pads to.
TOKENS = [16, 24, 32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1152, 1280,
          1536, 1792, 2048]  # fmt: skip


def workloads(dev: str, dry: bool, quick: bool, n_buckets: int, tiny: bool = False) -> list[Workload]:
    """The two kernels' buckets. Default (serving): a projection GEMM ``[M, 4096] x [4096, 4096]`` with M the
    bucket's token count (16..2048), and an RMSNorm over M = 16..2048 rows of hidden 4096 and 8192 (buckets
    alternate: 12 token counts x 2 hidden sizes when there are 24), keyed on (M, N): the device time of a
    call is ~10-150 us (GEMM) and ~3-20 us (RMSNorm), as in a server, so the first config's slowness
    shows in the stream's total. ``tiny``: the earlier stream (GEMM M = 1..4096, RMSNorm of 4096 rows keyed
    on hidden 256..32768), whose hot buckets were short enough to be host-bound."""
    dt = torch.float32 if dry else torch.float16
    nk = 32 if dry else 4096
    if dry:
        ms = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 72, 80, 96, 128][:n_buckets]
    elif tiny:
        ms = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024, 1280, 1536, 2048, 2560,
              3072, 4096][:n_buckets]  # fmt: skip
    else:
        ms = [TOKENS[round(i * (len(TOKENS) - 1) / max(1, n_buckets - 1))] for i in range(n_buckets)]
    if dry or tiny:
        rows = 4 if dry else (2048 if quick else 4096)
        ns = ([8, 12, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
               896, 1024] if dry else
              [256, 384, 512, 768, 1024, 1280, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240,
               12288, 14336, 16384, 20480, 24576, 28672, 32768])[:n_buckets]  # fmt: skip
        rms_sizes: list[Any] = [(rows, n) for n in ns]
        rms_key = ["N"]
    else:
        half = (n_buckets + 1) // 2
        toks = [TOKENS[round(i * (len(TOKENS) - 1) / max(1, half - 1))] for i in range(half)]
        rms_sizes = [(toks[i // 2], (4096, 8192)[i % 2]) for i in range(n_buckets)]
        rms_key = ["M", "N"]

    def mm_make(m: int) -> tuple[Any, ...]:
        return (torch.randn(m, nk, device=dev, dtype=dt) / 8, torch.randn(nk, nk, device=dev, dtype=dt) / 8,
                torch.empty(m, nk, device=dev, dtype=dt), m, nk, nk)  # fmt: skip

    def mm_launch(k: Any, t: tuple[Any, ...]) -> Any:
        return k[lambda meta: (triton.cdiv(t[3], meta["BM"]), triton.cdiv(t[4], meta["BN"]))](*t)

    def rms_make(size: tuple[int, int]) -> tuple[Any, ...]:
        rows, n = size
        return (torch.randn(rows, n, device=dev, dtype=dt), torch.rand(n, device=dev, dtype=dt) + 0.5,
                torch.empty(rows, n, device=dev, dtype=dt), rows, n, 1e-6)  # fmt: skip

    def rms_launch(k: Any, t: tuple[Any, ...]) -> Any:
        return k[(t[3],)](*t)

    return [
        Workload(
            "matmul", mm_kernel, ["M", "N", "K"], mm_configs(dry, quick), ms, mm_make, mm_launch, ["c_ptr"]
        ),
        Workload("rmsnorm", rms_kernel, rms_key, rms_configs(dry, quick), rms_sizes, rms_make, rms_launch, ["y_ptr"]),
    ]


def zipf_stream(n_buckets: int, calls: int, seed: int, s: float = 1.1) -> list[int]:
    rng = random.Random(seed)
    order = list(range(n_buckets))
    rng.shuffle(order)  # which bucket is popular is not the size order
    weights = [1.0 / (r + 1) ** s for r in range(n_buckets)]
    return [order[i] for i in rng.choices(range(n_buckets), weights=weights, k=calls)]


class HostClock:
    """For --dry-run only: under Triton's interpreter a launch runs synchronously on the CPU, so host time
    around it IS the kernel's time. Not a GPU measurement."""

    def start(self, cfg: Any) -> float:
        return time.perf_counter()

    def stop(self, token: float) -> float:
        return (time.perf_counter() - token) * 1e3

    def elapsed_ms(self, handle: float) -> float:
        return handle

    def capturing(self) -> bool:
        return False


#: Incremental mode's CUDA-event spans start behind a GPU spin when the device is idle
#: (``IncrementalOptions.spin_idle``, the default); ``--no-spin-idle`` turns it off (the comparison run).
SPIN_IDLE = True
#: ``--drop-late``: IncrementalOptions(drop_late=True) (late spans no samples; off by default until measured).
DROP_LATE = False
#: ``--sample-stacks-ms N``: the incremental engine's stream runs with a StackSampler (every N ms; calls past
#: ``--sample-after-ms``), written to stacks-KERNEL-incremental.json.
SAMPLE_MS = 0.0
SAMPLE_AFTER_MS = 2.0
#: ``--no-wait-leader``: IncrementalOptions(wait_leader=False), an A/B of the leader rule.
WAIT_LEADER = True
#: ``--resolve``: IncrementalOptions(resolve=...), who resolves the event pairs (an A/B of the two).
RESOLVE: str | None = None
#: ``--watchdog-ms`` below this is refused (faulthandler's watchdog crashed the process at 3 ms on an H200).
WATCHDOG_MIN_MS = 20.0
#: ``--profile``: the default incremental engine's calls run under cProfile (the caller's thread; the profiler's
#: own cost inflates every call, so its totals mean nothing; only the attribution), PROFILE-KERNEL-incremental.txt.
PROFILE = False
#: ``--variant NAME:opt=value,...``: more incremental engines, ``incremental@NAME``, run beside ``incremental``
#: in the same process and rotated with it in every repetition (an A/B that the host's drift between processes
#: cannot decide). Each value is an :class:`IncrementalOptions` field, or ``clock=torch|cached|uncached|driver``
#: (the default clock; ``CudaClock(cache_stream=True)``, the default's look-up;
#: ``CudaClock(cache_stream=False)``, the stream looked up through torch on every span; ``DriverClock(gate=False)``: spans made with the
#: driver's calls, the idle spin kept), or ``late=1`` (the clock counts late spans without dropping them).
VARIANTS: dict[str, dict[str, str]] = {}


def parse_variant(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME:opt=value,...`` -> (NAME, {opt: value}); a bad spec names the expected form."""
    name, _, rest = spec.partition(":")
    if not name or not name.replace("_", "").isalnum():
        raise SystemExit(f"--variant {spec!r}: expected NAME:opt=value,... with a NAME of letters and digits")
    opts: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        k, eq, v = item.partition("=")
        if not eq:
            raise SystemExit(f"--variant {spec!r}: {item!r} is not opt=value")
        opts[k.strip()] = v.strip()
    return name, opts


def variant_options(overrides: dict[str, str]) -> tuple[dict[str, Any], str, bool]:
    """A variant's IncrementalOptions overrides (typed as the fields are), its clock kind and late counting."""
    import dataclasses

    from tritune.serving.state import IncrementalOptions

    types = {f.name: f.type for f in dataclasses.fields(IncrementalOptions)}
    out: dict[str, Any] = {}
    clock, late = "torch", False
    for k, v in overrides.items():
        if k == "clock":
            if v not in ("torch", "cached", "uncached", "driver"):
                raise SystemExit(f"--variant clock={v!r}: expected torch, cached, uncached or driver")
            clock = v
        elif k == "late":
            late = v not in ("0", "false", "")
        elif k in types:
            t = str(types[k])
            out[k] = (v.lower() in ("1", "true")) if "bool" in t else int(v) if "int" in t else float(v) \
                if "float" in t else v
        else:
            raise SystemExit(f"--variant option {k!r}: not an IncrementalOptions field, clock or late")
    return out, clock, late


def make_clock(kind: str, late: bool, spin: bool | None = None) -> Any:
    """The incremental engine's clock of ``kind``; ``spin``: its ``spin_idle`` (default ``--no-spin-idle``'s)."""
    from tritune.serving.runtime import CudaClock, DriverClock, cuda_clock, driver_event_calls

    detect = DROP_LATE or late
    spin = SPIN_IDLE if spin is None else spin
    if kind in ("cached", "uncached"):  # (cached: the default clock; uncached: torch's look-up per span)
        return CudaClock(spin_idle=spin, detect_late=detect, driver=driver_event_calls(), cache_stream=kind == "cached")
    if kind == "driver":
        drv = driver_event_calls()
        if drv is None:
            raise SystemExit("--variant clock=driver: the CUDA driver library could not be opened")
        return DriverClock(drv, spin_idle=spin, detect_late=detect, gate=False)
    return cuda_clock(spin_idle=spin, detect_late=detect) if late else None


def decorate(engine: str, w: Workload, out: Path, dry: bool) -> Any:
    if engine == "triton":
        return triton.autotune(configs=w.configs, key=w.key)(w.jit)
    if engine == "untuned":
        return Plain(w.jit, w.configs[0])
    store = out / f"{w.name}.tritune.sqlite"
    if engine == "tritune":
        store.unlink(missing_ok=True)
        return tritune.autotune(configs=w.configs, key=w.key, store=str(store))(w.jit)
    if engine == "pretuned":
        return tritune.autotune(configs=w.configs, key=w.key, store=str(store))(w.jit)
    from tritune.serving.incremental import Incremental

    inc_store = out / f"{w.name}.{engine.replace('@', '-')}.sqlite"
    inc_store.unlink(missing_ok=True)
    from tritune.serving.state import IncrementalOptions

    overrides, kind, late = variant_options(VARIANTS.get(engine.partition("@")[2], {}))
    opts = IncrementalOptions(**{"spin_idle": SPIN_IDLE, "drop_late": DROP_LATE, "wait_leader": WAIT_LEADER,
                                 **({"resolve": RESOLVE} if RESOLVE else {}), **overrides})  # fmt: skip
    clock: Any = HostClock() if dry else make_clock(kind, late, opts.spin_idle)
    inc = Incremental(opts, outputs=w.outputs, clock=clock)
    inc.start_trace()
    return tritune.autotune(configs=w.configs, key=w.key, store=str(inc_store), incremental=inc)(w.jit)


def pct(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * (len(ys) - 1) + 0.5))]


class StackSampler:
    """Attribution of slow calls without faulthandler (whose 3 ms watchdog crashed a run on an H200): a
    daemon thread wakes every ``every_ms`` and, while the stream's current call has run longer than
    ``after_ms``, keeps the top frames of every other thread (``sys._current_frames``). It needs the
    interpreter's lock to look, so a sample shows the thread that held it just before: what the caller was
    waiting for. Perturbs the stream a little (one more thread); for attribution runs only."""

    def __init__(self, every_ms: float, after_ms: float, depth: int = 8) -> None:
        import threading

        self.every_s, self.after_s, self.depth = every_ms / 1e3, after_ms / 1e3, depth
        self.call: tuple[int, float] | None = None  # (index, start) of the call in flight, set by the stream
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._main = threading.get_ident()
        self._thread = threading.Thread(target=self._loop, name="serving-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import threading
        import traceback

        me = threading.get_ident()
        names = {}
        while not self._stop.wait(self.every_s):
            c = self.call
            if c is None or time.perf_counter() - c[1] < self.after_s:
                continue
            names.update({t.ident: t.name for t in threading.enumerate()})
            frames = sys._current_frames()
            stacks = {}
            for tid, fr in frames.items():
                if tid == me:
                    continue
                st = traceback.extract_stack(fr)[-self.depth:]
                stacks[f"{names.get(tid, 'thread')}#{tid}"] = [f"{Path(f.filename).name}:{f.lineno} {f.name}: {(f.line or '')[:60]}"
                                                     for f in st]
            self.samples.append({"call": c[0], "at_ms": round((time.perf_counter() - c[1]) * 1e3, 2),
                                 "stacks": stacks})

    def close(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(1.0)
        return self.samples


class GcPauses:
    """The garbage collector's pauses (``gc.callbacks``): total seconds so far, and every pause."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self.pauses: list[tuple[float, float, int]] = []  # (start, seconds, generation)
        self._t = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._t = now
        else:
            self.total_s += now - self._t
            self.pauses.append((self._t, now - self._t, int(info.get("generation", -1))))


def engine_threads(inc: Any) -> list[Any]:
    """An incremental engine's own threads in this process (compile, resolver, store writer, helpers)."""
    got = [getattr(inc.compiler, "_thread", None), getattr(inc._resolver, "_thread", None), inc._writer,
           *inc._helpers]  # fmt: skip
    return [t for t in got if t is not None and t.ident is not None]


def threads_cpu_s(threads: list[Any]) -> dict[int, float]:
    """CPU seconds each of ``threads`` has used so far, by ident (Linux: the thread's CPU clock); an ended thread
    is left out (asked first: a joined thread's id may still give a clock, or another thread's)."""
    got: dict[int, float] = {}
    for t in threads:
        if not t.is_alive():
            continue
        try:
            got[t.ident] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except (OSError, AttributeError, OverflowError):  # ended (its clock is gone), or no such clock here
            pass
    return got


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the threads used between two :func:`threads_cpu_s` snapshots (a new thread: all of its time)."""
    return sum(max(0.0, t - before.get(i, 0.0)) for i, t in after.items())


class StreamRun:
    """One engine's run of the stream, call by call, in one piece (:func:`run_engine`) or in chunks interleaved
    with other engines' (:func:`run_interleaved`). ``elapsed_s`` sums the chunks' wall time; ``charged_s`` is the
    CPU time this engine's own background threads used while *other* engines' chunks ran, added to its total
    (its work, wherever it ran; the other engine's chunk is not credited for it, so the charge can only count
    against this engine; that work may also have slowed the other engine's chunk, by at most the charge)."""

    def __init__(self, engine: str, w: Workload, tensors: list[tuple[Any, ...]], stream: list[int], out: Path,
                 dry: bool, watchdog_ms: float) -> None:  # fmt: skip
        self.engine, self.w, self.tensors, self.stream, self.out = engine, w, tensors, stream, out
        self.sync = (lambda: None) if dry else torch.cuda.synchronize
        self.k = k = decorate(engine, w, out, dry)
        self.inc = getattr(k, "_incremental", None)
        self.lat: list[float] = []
        self.host: list[float] = []
        self.gcs: list[float] = []
        self.phases: list[str] = []
        self.starts: list[float] = []
        self.seen: set[int] = set()
        self.pauses = GcPauses()
        self.sampler = (StackSampler(SAMPLE_MS, SAMPLE_AFTER_MS) if SAMPLE_MS > 0 and engine.startswith("incremental")
                        else None)  # fmt: skip
        self.wd_fd = None
        if watchdog_ms > 0:  # a traceback of every thread when a call runs past watchdog_ms (no GIL needed)
            self.wd_fd = os.open(out / f"watchdog-{w.name}-{engine}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self.watchdog_ms = watchdog_ms
        self.elapsed_s = 0.0
        self.charged_s = 0.0
        self.t_all: float | None = None
        #: ``--profile``: the engine's calls under cProfile (the caller's thread only), written by :meth:`finish`.
        self.profile = None
        if PROFILE and engine == "incremental":
            import cProfile

            self.profile = cProfile.Profile()

    def background_cpu(self) -> dict[int, float]:
        return threads_cpu_s(engine_threads(self.inc)) if self.inc is not None else {}

    def run(self, lo: int, hi: int) -> None:
        """Calls ``lo`` to ``hi`` (exclusive) of the stream."""
        k, w, tensors, inc, pauses, sampler, wd_fd = (self.k, self.w, self.tensors, self.inc, self.pauses,
                                                       self.sampler, self.wd_fd)  # fmt: skip
        lat, host, gcs, phases, starts, seen, sync = (self.lat, self.host, self.gcs, self.phases, self.starts,
                                                      self.seen, self.sync)  # fmt: skip
        stream = self.stream
        gc.callbacks.append(pauses)
        t_run = time.perf_counter()
        if self.t_all is None:
            self.t_all = t_run
        if self.profile is not None:
            self.profile.enable()
        try:
            for i in range(lo, hi):
                b = stream[i]
                if inc is not None:
                    inc.last_phase = None
                if wd_fd is not None:
                    os.write(wd_fd, f"== call {i} bucket {b}\n".encode())
                    faulthandler.dump_traceback_later(self.watchdog_ms / 1e3, file=wd_fd)
                g0 = pauses.total_s
                t0 = time.perf_counter()
                if sampler is not None:
                    sampler.call = (i, t0)
                w.launch(k, tensors[b])
                t1 = time.perf_counter()
                sync()
                t2 = time.perf_counter()
                if sampler is not None:
                    sampler.call = None
                if wd_fd is not None:
                    faulthandler.cancel_dump_traceback_later()
                starts.append(t0)
                lat.append((t2 - t0) * 1e3)
                host.append((t1 - t0) * 1e3)
                gcs.append((pauses.total_s - g0) * 1e3)
                if inc is not None:
                    phases.append(inc.last_phase or "fast")
                else:
                    phases.append("first" if b not in seen else "cached")
                seen.add(b)
        finally:
            if self.profile is not None:
                self.profile.disable()
            self.elapsed_s += time.perf_counter() - t_run
            gc.callbacks.remove(pauses)

    def finish(self) -> dict[str, Any]:
        """The run's result (after its last chunk): totals, percentiles, phases, and the incremental engine's state."""
        engine, w, tensors, stream, out, k, inc = (self.engine, self.w, self.tensors, self.stream, self.out, self.k,
                                                   self.inc)  # fmt: skip
        lat, host, gcs, phases, starts, pauses, sampler = (self.lat, self.host, self.gcs, self.phases, self.starts,
                                                           self.pauses, self.sampler)  # fmt: skip
        t_all = self.t_all if self.t_all is not None else time.perf_counter()
        if self.profile is not None:  # where the caller's time went: the slowest functions, own and cumulative
            import io
            import pstats

            buf = io.StringIO()
            st = pstats.Stats(self.profile, stream=buf)
            st.sort_stats("tottime").print_stats(45)
            st.sort_stats("cumulative").print_stats("tritune", 60)
            st.print_callees(r"_checked_call|\(_timed\)|drain_ready|serving_runtime.py:\d+\(start\)|incremental.py:\d+\(_run\)")
            (out / f"profile-{w.name}-{engine}.txt").write_text(buf.getvalue())
        if self.wd_fd is not None:
            os.close(self.wd_fd)
        if sampler is not None:  # every sample with its call's phase, for the slow calls' attribution
            got = sampler.close()
            for smp in got:
                smp["phase"] = phases[smp["call"]] if smp["call"] < len(phases) else None
            (out / f"stacks-{w.name}-{engine}.json").write_text(json.dumps(got))
            idle = ("wait(", "get(", "sleep(", "select(", "poll(", "join(", "acquire(")
            busy: dict[str, int] = {}
            for smp in got:  # what the other threads were doing (not waiting) while a call ran long
                for name, st in smp["stacks"].items():
                    if st and not any(x in st[-1].split(": ", 1)[-1] for x in idle):
                        k2 = f"{smp['phase']} | {name.split('#')[0]} | " + " < ".join(
                            f.split(": ", 1)[0] for f in reversed(st[-4:]))
                        busy[k2] = busy.get(k2, 0) + 1
            print(f"{w.name} {engine}: {len(got)} stack samples in calls past {SAMPLE_AFTER_MS} ms; busy frames:")
            for k2, n in sorted(busy.items(), key=lambda kv: -kv[1])[:15]:
                print(f"   {n:5d}  {k2}")
        total = self.elapsed_s + self.charged_s
        worst = max(range(len(lat)), key=lat.__getitem__)
        res: dict[str, Any] = {
            "total_s": total, "elapsed_s": self.elapsed_s, "charged_s": self.charged_s, "p50_ms": pct(lat, 0.5), "p99_ms": pct(lat, 0.99), "worst_ms": lat[worst],
            "worst": {"call": worst, "bucket": stream[worst], "phase": phases[worst], "host_ms": host[worst],
                      "device_wait_ms": lat[worst] - host[worst], "gc_ms": gcs[worst],
                      "calls_of_bucket_before": stream[:worst].count(stream[worst])},
            "latencies_ms": [round(x, 4) for x in lat], "host_ms": [round(x, 4) for x in host],
            "gc_ms": [round(x, 3) for x in gcs], "phases": phases,
            "gc_pauses_over_5ms": [(round(s - t_all, 4), round(d * 1e3, 2), g) for s, d, g in pauses.pauses if d > 0.005],
        }  # fmt: skip
        by_phase: dict[str, list[float]] = {}
        host_by: dict[str, list[float]] = {}
        for p, x, h in zip(phases, lat, host):
            by_phase.setdefault(p, []).append(x)
            host_by.setdefault(p, []).append(h)
        # the host part (until the launch returned) and the mean, by phase: where a phase's time goes
        res["by_phase"] = {p: {"n": len(xs), "p50_ms": pct(xs, 0.5), "p99_ms": pct(xs, 0.99), "max_ms": max(xs),
                               "sum_ms": sum(xs), "mean_ms": sum(xs) / len(xs), "host_p50_ms": pct(host_by[p], 0.5),
                               "host_mean_ms": sum(host_by[p]) / len(xs)} for p, xs in by_phase.items()}  # fmt: skip
        res["final"] = {str(b): final_config(engine, k, w, tensors[b]) for b in sorted(set(stream))}
        if inc is not None:
            res["diagnose"] = diagnose(k, inc, w, tensors, stream)  # as the stream left it, before the drain
            time.sleep(0.5)  # let the resolver drain
            res["promoted_after_drain"] = sorted(b for b, d in res["diagnose"].items()
                                                 if final_config(engine, k, w, tensors[int(b)])[:7] != "tuning:")  # fmt: skip
            res["extra_gpu_fraction"] = inc.budget.extra_fraction
            parts = list(inc.check_parts)  # every key's checks, promoted keys' too: where a check's time goes
            res["check_parts_median_ms"] = [pct([p[i] for p in parts], 0.5) for i in range(3)] if parts else None
            res["checks_timed"] = len(parts)
            from tritune.serving.incremental import CHECK_STEPS

            res["host_split_us"] = {str(ph): {"n": int(v[0]), "call_us": round(v[1] / v[0] * 1e6, 2),
                                              "resolve_us": round(v[2] / v[0] * 1e6, 2)}
                                    for ph, v in dict(getattr(inc, "host_split", {})).items() if v[0]}  # fmt: skip
            hosts = list(getattr(inc, "check_host", []))  # each check call's host time by step (the caller's thread)
            res["check_host_median_ms"] = ({n: round(pct([h[i] for h in hosts], 0.5), 4) for i, n in
                                            enumerate(CHECK_STEPS)} if hosts else None)  # fmt: skip
            firsts = list(getattr(inc, "first_parts", []))  # each key's first call on the caller's thread, ms by part
            res["first_parts_median_ms"] = ({n: round(pct([f.get(n, 0.0) for f in firsts], 0.5), 4) for n in firsts[0]}
                                            if firsts else None)  # fmt: skip
            res["first_parts"] = firsts
            res["driver_fallbacks"] = int(getattr(inc.clock, "driver_fallbacks", 0))
            res["extra_gpu_ms"] = inc.budget.spent_ms
            res["tuning_gpu_ms"] = inc.budget.earned_from_ms
            res["promoted"] = len(inc.promoted)
            res["stretched_spans"], res["stretched_ms"] = int(inc.stretched[0]), float(inc.stretched[1])
            res["late_spans"] = int(inc.late_spans)  # spans holding host time (CudaClock.late): no sample
            res["timed_spans"] = int(getattr(inc._resolver, "resolved", 0))
            inc.flush()  # the promotions' store writes (the H200 run's incremental store had no tables)
            res["store_errors"] = [repr(e) for e in inc.store_errors]
            res["still_tuning"] = len(inc.states)
            r = inc._resolver
            res["resolver_us_per_handle"] = (r.busy_s / r.resolved * 1e6) if r is not None and r.resolved else None
            res["resolved_inline"] = int(getattr(r, "inline_resolved", 0))  # by the calls (resolve="inline")
            res["resolver_wakes"] = int(getattr(r, "wakes", 0))
            dec = list(getattr(inc, "decided", [0, 0.0, 0, 0.0]))  # decisions and promotions, with their seconds
            res["decisions"], res["decisions_ms"] = int(dec[0]), float(dec[1]) * 1e3
            res["promotions_ms"] = float(dec[3]) * 1e3
            c = inc.clock
            res["gates"], res["released_early"] = int(getattr(c, "gates", 0)), int(getattr(c, "released_early", 0))
            res["gate_off"] = str(getattr(c, "gate_off", ""))
            res["resolver_errors"] = [repr(e) for e in (r.errors if r is not None else [])]
            stop_threads(inc)  # this engine is done: a later engine of the run (--repeat) shares the host with none
            res["keys"] = {str(key): {"source": ch.source, "config": ch.config.id, "detail": ch.detail,
                                      "stats": dict(ch.stats or {})} for key, ch in k.choices().items()}  # fmt: skip
            res["disagreed"] = sorted({d for v in res["keys"].values() for d in v["stats"].get("disagreed", {})})
            trace = inc.trace or []
            t0w, t1w = starts[worst], starts[worst] + lat[worst] / 1e3
            res["worst"]["background"] = [(round((t - t0w) * 1e3, 2), th, ev, det) for t, th, ev, det in trace
                                          if t0w - 0.2 <= t <= t1w]  # fmt: skip
            res["trace"] = [(round(t - t_all, 5), th, ev, det) for t, th, ev, det in trace]
        return res


def run_engine(engine: str, w: Workload, tensors: list[tuple[Any, ...]], stream: list[int], out: Path,
               dry: bool, watchdog_ms: float) -> dict[str, Any]:  # fmt: skip
    """One engine's whole stream, alone."""
    r = StreamRun(engine, w, tensors, stream, out, dry, watchdog_ms)
    # As a server does once it is warm (vLLM, SGLang and Ray Serve freeze the heap after start-up: gen-2
    # collections walk every live object, 100-400 ms on a serving process's heap): the objects alive now
    # (torch, Triton, the earlier engines' state, this engine's decorated kernel and tensors) leave the
    # collector's scans, so a collection during the stream walks only what the stream itself allocated. Without
    # it, a 6,000-call run on an H200 had one 134 ms gen-2 pause inside an incremental RMSNorm call (its worst
    # call), with the earlier engines' heaps still tracked.
    gc.collect()
    gc.freeze()
    r.run(0, len(stream))
    return r.finish()


def run_interleaved(engines: list[str], w: Workload, tensors: list[tuple[Any, ...]], stream: list[int], out: Path,
                    dry: bool, chunk: int, seed: int) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Every engine's whole stream, in chunks of ``chunk`` calls taken in turn, the order rotated by one each
    chunk (``--interleave``): each engine's total is the sum of its chunks, so a drift of the host's speed on a
    scale longer than a round of chunks (the H200's host: the untuned engine's total moved 1.5-2.4 s between
    repetitions of one process) falls on every engine alike instead of on whichever ran then. An
    incremental engine's background threads may run during another engine's chunk: their CPU time then is
    added to the incremental engine's total (:class:`StreamRun`)."""
    torch.manual_seed(seed)
    runs = {e: StreamRun(e, w, tensors, stream, out, dry, 0.0) for e in engines}
    gc.collect()
    gc.freeze()
    n = len(stream)
    for j, lo in enumerate(range(0, n, chunk)):
        order = engines[j % len(engines):] + engines[: j % len(engines)]
        for e in order:
            others = [r for name, r in runs.items() if name != e and r.inc is not None]
            before = [r.background_cpu() for r in others]
            runs[e].run(lo, min(n, lo + chunk))
            for r, b in zip(others, before):
                r.charged_s += cpu_between(b, r.background_cpu())
    return {e: runs[e].finish() for e in engines}


def stop_threads(inc: Any) -> None:
    """Stop an incremental engine's threads (store writer, resolver, compile thread) once it is measured."""
    inc.close()
    if inc._resolver is not None:
        inc._resolver.close()
    stop = getattr(inc.compiler, "close", None)
    if stop is not None:
        stop()


def add_excess(runs: dict[str, Any]) -> None:
    """Where the incremental stream's time went: its latency less a reference engine's, call by call, summed by
    the incremental call's phase (``excess_vs_pretuned_ms``, ``excess_vs_untuned_ms``)."""
    for name, inc_r in runs.items():
        if not name.startswith("incremental"):
            continue
        for ref in ("pretuned", "untuned"):
            ref_r = runs.get(ref)
            if ref_r is not None:
                excess: dict[str, float] = {}
                for ph, x, y in zip(inc_r["phases"], inc_r["latencies_ms"], ref_r["latencies_ms"]):
                    excess[ph] = excess.get(ph, 0.0) + x - y
                inc_r[f"excess_vs_{ref}_ms"] = excess


def slim_run(r: dict[str, Any]) -> dict[str, Any]:
    """What a repetition keeps of an engine's run (``--repeat``): totals, percentiles, phases, finals."""
    keep = ("total_s", "elapsed_s", "charged_s", "p50_ms", "p99_ms", "worst_ms", "by_phase", "final", "extra_gpu_fraction", "promoted",
            "excess_vs_pretuned_ms", "excess_vs_untuned_ms", "decisions", "decisions_ms", "promotions_ms",
            "late_spans", "timed_spans", "gates", "released_early", "gate_off")  # fmt: skip
    return {k: r[k] for k in keep if k in r}


def diagnose(k: Any, inc: Any, w: Workload, tensors: list[tuple[Any, ...]], stream: list[int]) -> dict[str, Any]:
    """Bucket -> why the incremental mode has not promoted it (``Incremental.diagnose``: each candidate's
    phase, samples, median; checks waiting; the bucket's tokens and the next check's estimate; the pool; the
    rule that holds it back; when its candidates compiled and were checked, in the key's calls)."""
    diag = inc.diagnose(k)
    out = {}
    for b in sorted(set(stream)):
        pub = k.key_spec.public(k.key_spec.of(tensors[b], {}))
        if pub in diag:
            out[str(b)] = {**diag[pub], "stream_calls": stream.count(b)}
    return out


def print_diagnosis(kd: dict[str, Any], inc: dict[str, Any]) -> None:
    """The end-of-stream diagnosis of every hot bucket the incremental mode did not promote."""
    diag = inc.get("diagnose", {})
    late = set(inc.get("promoted_after_drain", []))
    for b in kd["hot_buckets"]:
        d = diag.get(str(b))
        if d is None:
            continue
        print(f"  not promoted: bucket {b} ({d['stream_calls']} calls in the stream, {d['calls']} tuning calls"
              f"{'; promoted in the 0.5 s drain after the stream' if str(b) in late else ''}): {d['blocked']}")  # fmt: skip
        print(f"     bucket {d['tokens_ms']:.4f} ms, pool {d['pool_ms']:.4f} ms, frequent {d['frequent']}, checks "
              f"{d['checks_ms']} ms (copies, scratch run, comparison: {d.get('check_parts_ms')}), resolver backlog "
              f"{d['resolver_backlog']}")  # fmt: skip
        for cid, c in d["candidates"].items():
            med = c.get("median_ms")
            ci = c.get("ci_ms")
            print(f"     {c['phase']:10s} n={c.get('samples', 0):3d} sent={c.get('dispatched', 0):4d} "
                  f"med={'-' if med is None else f'{med * 1e3:.1f}us':>9s} "
                  f"ci={'-' if ci is None else f'[{ci[0] * 1e3:.1f},{ci[1] * 1e3:.1f}]':>15s}  {cid}"
                  f"{'  ' + c['why'] if 'why' in c else ''}")  # fmt: skip
        tl = d.get("timeline", [])
        comp = [n for n, ev in tl if ev.startswith("compiled")]
        chk = [n for n, ev in tl if ev.startswith("checked")]
        print(f"     compiled at the key's calls {comp}; checked at {chk}")


def final_config(engine: str, k: Any, w: Workload, t: tuple[Any, ...]) -> str:
    """The config the engine dispatches this bucket to now (a tritune Config id); for ``incremental``,
    ``tuning:<provisional>`` while the bucket has not promoted (it still rotates among candidates)."""
    from tritune.decorator.triton_surface import from_triton

    if engine == "untuned":
        return from_triton(w.configs[0]).id
    if engine == "triton":
        key = tuple(v for n, v in zip(w.jit.arg_names, t) if n in w.key)
        hit = [c for kk, c in k.cache.items() if tuple(kk[: len(key)]) == key]
        return from_triton(hit[0]).id if hit else "?"
    pub = k.key_spec.public(k.key_spec.of(t, {}))
    ch = k.choices().get(pub)
    if ch is None:
        return "?"
    return f"tuning:{ch.config.id}" if ch.source == "provisional" else ch.config.id


def retime(w: Workload, t: tuple[Any, ...], dry: bool, rounds: int, policy: str = "warm",
           keep: dict[str, list[float]] | None = None) -> dict[str, float]:  # fmt: skip
    """Milliseconds of every config on one bucket, interleaved: ``rounds`` rounds, each timing every config
    once in an order rotated per round; the median of rounds. ``policy``: ``warm`` (the primary judge: no L2
    flush, tritune's ``EventTimer.for_policy("warm")``, as the stream runs: the same tensors call after call)
    or ``cold`` (``do_bench``, the L2 flushed before each run). ``keep`` receives every round's value per config
    (:func:`ratio_interval` reads them)."""
    from tritune.decorator.triton_surface import from_triton

    runs = {from_triton(c).id: (lambda p=Plain(w.jit, c): w.launch(p, t)) for c in w.configs}
    names = list(runs)
    for fn in runs.values():
        fn()
    timer = None
    if not dry and policy == "warm":
        from tritune.bench.event import EventTimer

        timer = EventTimer.for_policy("warm", reuse_graphs=False)  # each round captures afresh: independent looks
    got: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            if dry:
                t0 = time.perf_counter()
                runs[n]()
                got[n].append((time.perf_counter() - t0) * 1e3)
            elif timer is not None:
                m = timer.measure(runs[n], budget_s=0.004, min_samples=5, warmup_s=0.001)
                got[n].append(float(m.median_ms))
            else:
                got[n].append(float(triton.testing.do_bench(runs[n], warmup=1, rep=5, return_mode="median")))
    if keep is not None:
        keep.update(got)
    return {n: pct(xs, 0.5) for n, xs in got.items()}


def stream_picks(kd: dict[str, Any], hot: list[int]) -> dict[int, list[str]]:
    """Every config some engine ended on for each hot bucket, in the first pass or any repetition (promoted
    configs only: ``tuning:...`` and ``?`` are not configs), sorted: what :func:`stream_judge` times."""
    finals = [r.get("final", {}) for r in kd["engines"].values()]
    finals += [r.get("final", {}) for rep in kd.get("repeats", []) for e, r in rep.items() if e != "order"]
    return {b: sorted({c for f in finals if (c := f.get(str(b), "?")) != "?" and not c.startswith("tuning:")})
            for b in hot}


class HeldSpans:
    """The stream judge's device timer: one CUDA event pair around each call's launch, with the stream HELD
    ahead of the host, so a span holds the kernel and nothing of the host's launch.

    Without the hold, a short kernel's stream is host-bound: the device idles between calls, the start event
    passes at once, and the span then waits for the host to submit the launch, ~10-20 us on the H200 for
    kernels of 3-10 us (on an H200 the plain per-call spans rated the untuned RMSNorm config within 1.02x of
    the pretuned one on 23 of 24 buckets, where both retiming judges rated it slower on 21-23). Here each
    sub-batch of at most ``sub`` calls is queued behind ``torch.cuda._sleep`` (the hold: no memory traffic, so
    the cache state the calls leave each other is the stream's), and after queueing it the hold's own event
    must still be pending (``query()``): then every launch was queued before the device reached the first, and
    the device ran them back to back. If the hold had ended, the sub-batch runs again with the hold doubled
    (``redone``, the hold at most ``max_hold_ms``); after ``tries`` such runs its spans are kept and counted
    ``behind``. ``sub`` stays far below
    the driver's queue of pending launches, which would block the host until the hold ends.

    The device calls are methods (``_hold``, ``_ahead``, ``_record``, ``_sync``, ``_elapsed``) so that a FAKE
    in the tests drives the redo logic with no GPU."""

    def __init__(self, sub: int = 64, hold_ms: float = 2.0, tries: int = 6, max_hold_ms: float = 64.0) -> None:
        self.sub, self.hold_ms, self.tries, self.max_hold_ms = sub, hold_ms, tries, max_hold_ms
        self.redone = self.behind = self.subs = 0
        self._gate: Any = None
        self._events: list[tuple[Any, Any]] = []

    def run(self, launches: list[Callable[[], None]]) -> list[float]:
        """Every launch of ``launches`` once, in order, in sub-batches; each one's span in ms."""
        out: list[float] = []
        for lo in range(0, len(launches), self.sub):
            part = launches[lo: lo + self.sub]
            self.subs += 1
            for attempt in range(self.tries):
                self._hold(self.hold_ms)
                for i, f in enumerate(part):
                    self._record(i, 0)
                    f()
                    self._record(i, 1)
                if self._ahead():
                    break
                self.hold_ms = min(2 * self.hold_ms, self.max_hold_ms)
                if attempt < self.tries - 1:
                    self.redone += 1
            else:
                self.behind += 1
            self._sync()
            out += [self._elapsed(i) for i in range(len(part))]
        return out

    def stats(self) -> dict[str, Any]:
        return {"sub": self.sub, "hold_ms": self.hold_ms, "sub_batches": self.subs, "redone": self.redone,
                "behind": self.behind}  # fmt: skip

    # the device (a FAKE overrides these)
    def _hold(self, ms: float) -> None:
        if self._gate is None:
            self._gate = torch.cuda.Event()
            self._events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                            for _ in range(self.sub)]  # fmt: skip
        GpuHold.hold(torch, ms)  # (its cycles per ms measured at the first hold of the process)
        self._gate.record()

    def _ahead(self) -> bool:
        return not self._gate.query()

    def _record(self, i: int, which: int) -> None:
        self._events[i][which].record()

    def _sync(self) -> None:
        torch.cuda.synchronize()

    def _elapsed(self, i: int) -> float:
        return float(self._events[i][0].elapsed_time(self._events[i][1]))


def stream_judge(w: Workload, tensors: list[tuple[Any, ...]], stream: list[int], picks: dict[int, list[str]],
                 dry: bool, calls: int, chunk: int = 500, spans: HeldSpans | None = None,
                 stats: dict[str, Any] | None = None,
                 deadline_s: float | None = None) -> dict[str, dict[str, list[float]]]:
    """The stream judge: the picked configs timed on the stream itself, in the cache state it leaves them.

    The first ``calls`` calls of ``stream`` are replayed in chunks of ``chunk``. Each chunk runs once for every
    assignment ``j`` (the order rotated per chunk), which sends bucket ``b`` to ``picks[b][j % len(picks[b])]``
    and every other bucket likewise. Every call is timed by its own CUDA event pair, the stream held ahead of
    the host (:class:`HeldSpans`, or ``spans``: its counts go to ``stats``), so a span is the kernel's device
    time alone; on the CPU dry run, the host clock. So each config runs after the calls the stream really puts
    before it, between a bucket's calls the other buckets' traffic, partly evicting its data. Neither judge of
    :func:`retime` measures that: the warm judge keeps a bucket's data in L2, the cold judge flushes it. The L2
    rule (:func:`primary_judge`) picks one of them by the whole working set, and a 128 KB bucket taking 14% of
    the calls is neither (on an H200, bucket 0, 16 x 4096 rows, rated 1.09-1.13x by the cold judge and 1.03x by
    the warm one, for the config the race on the real calls picked). Returns ``{bucket: {config: [one value
    per chunk the bucket appears in: the median of that config's calls in the chunk, ms]}}``: paired by chunk,
    which is what :func:`paired_ratio` reads. ``deadline_s``: no chunk starts after that many seconds (the
    chunks done stay paired; ``stats["chunks"]`` and ``stats["cut_at_s"]`` say where it stopped), so a judge that
    runs slower than planned leaves the run's other results intact."""
    from tritune.decorator.triton_surface import from_triton

    by_id = {from_triton(c).id: Plain(w.jit, c) for c in w.configs}
    n_assign = max((len(v) for v in picks.values()), default=0)
    if n_assign == 0:
        return {}
    runs = [{b: by_id[v[j % len(v)]] for b, v in picks.items() if v} for j in range(n_assign)]
    plain0 = Plain(w.jit, w.configs[0])
    for b, cs in picks.items():  # loaded and warm: the replay times launches, not the first load
        for c in cs:
            w.launch(by_id[c], tensors[b])
    seq = stream[: max(0, calls)]
    got: dict[str, dict[str, list[float]]] = {str(b): {c: [] for c in v} for b, v in picks.items() if v}
    if spans is None and not dry:
        spans = HeldSpans()
    if not dry:
        torch.cuda.synchronize()
    t_start, done = time.perf_counter(), 0
    for ci, lo in enumerate(range(0, len(seq), chunk)):
        if ci and deadline_s is not None and time.perf_counter() - t_start > deadline_s:  # the first always runs
            if stats is not None:
                stats["cut_at_s"] = round(time.perf_counter() - t_start, 1)
            break
        done += 1
        part = seq[lo: lo + chunk]
        per: dict[tuple[int, str], list[float]] = {}
        for j in [(ci + r) % n_assign for r in range(n_assign)]:
            assign = runs[j]
            fns = [(lambda k=assign.get(b, plain0), t=tensors[b]: w.launch(k, t)) for b in part]
            if spans is not None:
                ms = spans.run(fns)
            else:
                ms = []
                for f in fns:
                    t0 = time.perf_counter()
                    f()
                    ms.append((time.perf_counter() - t0) * 1e3)
            for i, b in enumerate(part):
                if b in assign:
                    v = picks[b]
                    per.setdefault((b, v[j % len(v)]), []).append(ms[i])
        for (b, c), xs in per.items():
            got[str(b)][c].append(pct(xs, 0.5))
    if stats is not None:
        stats["chunks"] = done
        if spans is not None:
            stats.update(spans.stats())
    # A bucket absent from a chunk has no value there for any of its configs; a config of a bucket present in
    # a chunk has one (every assignment runs the whole chunk), so the lists of one bucket stay paired.
    return got


def ratio_interval(rounds: dict[str, list[float]], cfg: str, boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% interval of the judge's ratio "``cfg``'s median / the best config's median" on one bucket: the
    rounds are resampled together (a round times every config back to back, so its values are paired), and
    the best is chosen again in each resample (the smallest of several noisy medians is biased low: with the
    best fixed, a config equal to it would look slower by that bias). Printed beside the strict verdict:
    on 4-12 us kernels the judges' own spread is ~2% (on an H200 the pretuned ideal itself rated 1.033)."""
    if cfg not in rounds:
        return (math.inf, math.inf)
    n = min(len(v) for v in rounds.values())

    def ratio(idx: list[int]) -> float:
        med = {c: pct([xs[i] for i in idx], 0.5) for c, xs in rounds.items()}
        return med[cfg] / min(med.values())

    return bootstrap_interval(n, ratio, boot, seed)


def bootstrap_interval(n: int, stat: Callable[[list[int]], float], boot: int = 2000,
                       seed: int = 0) -> tuple[float, float]:  # fmt: skip
    """The 95% bootstrap interval of ``stat`` over ``n`` rounds: ``boot`` resamples of the rounds' indices."""
    rng = random.Random(seed)
    vals = sorted(stat([rng.randrange(n) for _ in range(n)]) for _ in range(boot))
    return (vals[int(0.025 * boot)], vals[int(0.975 * boot) - 1])


def paired_ratio(rounds: dict[str, list[float]], cfg: str, ref: str, boot: int = 2000,
                 seed: int = 0) -> tuple[float, float, float]:  # fmt: skip
    """``cfg`` against ``ref`` on one bucket, round by round: the median over the judge's rounds of
    ``cfg``'s time / ``ref``'s time in the same round (a round times them back to back, so each pair shares
    the GPU's state of that moment), and its 95% bootstrap interval. This is the target's measure, "<= 1.02x
    of the pretuned best" with ``ref`` the pretuned ideal's pick; unlike the ratio to the smallest of all
    configs' medians (:func:`ratio_interval`) no minimum over noisy medians biases it, so the pretuned
    ideal scores exactly 1 against itself and two near-tied picks score near 1. (inf, inf, inf) when either
    config was not re-timed (``cfg`` still tuning: ``tuning:...``)."""
    if cfg not in rounds or ref not in rounds:
        return (math.inf, math.inf, math.inf)
    n = min(len(rounds[cfg]), len(rounds[ref]))
    per = [rounds[cfg][i] / rounds[ref][i] for i in range(n)]
    lo, hi = bootstrap_interval(n, lambda idx: pct([per[i] for i in idx], 0.5), boot, seed)
    return (pct(per, 0.5), lo, hi)


def output_spread(w: Workload, t: tuple[Any, ...]) -> dict[str, float]:
    """Largest difference of any config's output from the first config's: absolute, relative, and as a
    fraction of the check's default tolerance (``atol + rtol*|ref|``: below 1 means the check agrees)."""
    from tritune.serving.check import default_tolerance

    outs = []
    for c in w.configs:
        w.launch(Plain(w.jit, c), t)
        outs.append(t[2].double().clone())
    ref = outs[0]
    atol, rtol = default_tolerance(t[2].dtype)
    d = max(float((o - ref).abs().max()) for o in outs[1:])
    r = max(float(((o - ref).abs() / ref.abs().clamp_min(1e-3)).max()) for o in outs[1:])
    f = max(float(((o - ref).abs() / (atol + rtol * ref.abs())).max()) for o in outs[1:])
    return {"max_abs_diff": d, "max_rel_diff": r, "max_over_tolerance": f, "atol": atol, "rtol": rtol}


def compile_one_ms(w: Workload, t: tuple[Any, ...]) -> float:
    """Milliseconds to compile (and load) one config from nothing: a fresh JIT object, a fresh cache dir."""
    old = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory() as d:
        os.environ["TRITON_CACHE_DIR"] = d
        try:
            fresh = triton.JITFunction(w.jit.fn)
            t0 = time.perf_counter()
            w.launch(Plain(fresh, w.configs[0]), t)
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) * 1e3
        finally:
            if old is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = old


def comparison_check(dev: str) -> dict[str, Any]:
    """The check's comparison on this device (the fused kernel where it loads): equal outputs agree, an
    integer off by one and a float beyond the tolerance differ, a float within it agrees."""
    from tritune.serving.check import compare_outputs, default_tolerance, prepare_fused

    res: dict[str, Any] = {}
    for dt in (torch.int32, torch.float16, torch.bfloat16, torch.float32):
        why = prepare_fused(str(dt), dev) if dev == "cuda" else None
        fused = {str(dt)} if why is None else set()
        x = (torch.arange(1 << 20, device=dev) % 1000).to(dt)
        atol, rtol = default_tolerance(dt)
        near, far, one = x.clone(), x.clone(), x.clone()
        if dt.is_floating_point:
            near[5] = (x[5].double() * (1 + rtol / 2)).to(dt)
            far[5] = (x[5].double() * (1 + 4 * rtol) + 4 * atol).to(dt)
        one[5] = one[5] + 1
        verdicts = {n: compare_outputs({"o": x}, {"o": y}, None, None, fused)()
                    for n, y in (("equal", x.clone()), ("near", near), ("far", far), ("plus_one", one))}  # fmt: skip
        ok = verdicts["equal"] is None and verdicts["plus_one"] is not None
        if dt.is_floating_point:
            ok = ok and verdicts["near"] is None and verdicts["far"] is not None
        res[str(dt)] = {"fused": why is None, "why_not_fused": why, "verdicts": verdicts, "as_expected": ok}
    return res


def overhead_us(dev: str, calls: int = 2000) -> dict[str, Any]:
    """Host microseconds per call on the caller's thread, same tiny kernel and shape, real launches:
    ``cached`` (a tuned key: the fast dispatch path), ``racing`` (a key of the incremental mode that never
    promotes, every candidate checked: it rotates among them with real CUDA events and the resolver thread
    running), and ``check`` (a call that also checks a candidate: copies, scratch run, comparison). Best of
    three rounds of ``calls`` calls, each round ended by one synchronize."""
    from tritune.serving.incremental import Incremental
    from tritune.serving.state import IncrementalOptions

    w = workloads(dev, dev == "cpu", True, 1, tiny=True)[1]
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (256, 512, 1024)]
    rows = 4
    x = torch.randn(rows, 1024, device=dev, dtype=torch.float16)
    t = (x, torch.ones(1024, device=dev, dtype=torch.float16), torch.empty_like(x), rows, 1024, 1e-6)

    def launch(k: Any) -> None:
        k[(rows,)](*t)

    def best(k: Any) -> float:
        b = math.inf
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                launch(k)
            torch.cuda.synchronize()
            b = min(b, (time.perf_counter() - t0) / calls * 1e6)
        return b

    cached = tritune.autotune(configs=configs, key=w.key, store=False)(w.jit)
    launch(cached)
    res: dict[str, Any] = {"cached_us": best(cached)}
    default = IncrementalOptions().resolve
    # The default's resolution first (its numbers are the keys without a suffix), then the other's.
    for mode in sorted(("thread", "inline"), key=lambda m: m != default):
        sfx = "" if mode == default else f"_{mode}"
        # never promotes
        forever = IncrementalOptions(gpu_fraction=1.0, min_samples=10**9, max_samples=10**9, resolve=mode)
        inc = Incremental(forever, outputs=w.outputs)
        k = tritune.autotune(configs=configs, key=w.key, store=False, incremental=inc)(w.jit)
        check_host: list[float] = []
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            inc.last_phase = None
            t0 = time.perf_counter()
            launch(k)
            dt = time.perf_counter() - t0
            torch.cuda.synchronize()
            if inc.last_phase == "check":
                check_host.append(dt * 1e6)
            (ch,) = k.choices().values()
            if ch.stats and not ch.stats["compiling"] and not ch.stats["unchecked"] and len(ch.stats["racing"]) == 3:
                break
            time.sleep(0.001)  # lets the resolver resolve this call's events
        (ch,) = k.choices().values()
        res["racing_state" + sfx] = dict(ch.stats or {})
        res["racing_us" + sfx] = best(k)
        res["overhead_us" + sfx] = res["racing_us" + sfx] - res["cached_us"]
        res["check_us" + sfx] = pct(check_host, 0.5) if check_host else None
        r = inc._resolver
        res["resolver_us_per_handle" + sfx] = (r.busy_s / r.resolved * 1e6) if r is not None and r.resolved else None
        stop_threads(inc)  # the other resolution is measured without this one's threads
    res["resolve_default"] = default
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--dry-run", action="store_true", help="CPU: Triton's interpreter, tiny shapes, few calls"
    )
    ap.add_argument("--tiny", action="store_true",
                    help="the earlier, host-bound stream (GEMM M = 1..4096, RMSNorm keyed on hidden 256..32768)")
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--buckets", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engines", default=None, help="comma-separated subset, in the default order")
    ap.add_argument("--kernels", default="matmul,rmsnorm")
    ap.add_argument("--watchdog-ms", type=float, default=0.0,
                    help="dump every thread's traceback into --out when a call runs past this (attribution; "
                         f">= {WATCHDOG_MIN_MS:g} ms)")
    ap.add_argument("--retime-rounds", type=int, default=None)
    ap.add_argument("--no-spin-idle", action="store_true",
                    help="incremental: IncrementalOptions(spin_idle=False), spans on an idle device start at once "
                         "(the default queues them behind a GPU spin)")  # fmt: skip
    ap.add_argument("--flat-prune", action="store_true",
                    help="incremental: a neighbour prunes at prune_ratio at any distance (serving_state.PRUNE_NEAR = "
                         "inf: a flat threshold), the A/B of the distance-scaled one")
    ap.add_argument("--no-wait-leader", action="store_true",
                    help="incremental: IncrementalOptions(wait_leader=False), waiting keys race timed round-robin")
    ap.add_argument("--drop-late", action="store_true",
                    help="incremental: IncrementalOptions(drop_late=True), a span whose start passed before its launch "
                         "returned is no sample (it still earns the budget at the config's median)")  # fmt: skip
    ap.add_argument("--sample-stacks-ms", type=float, default=0.0,
                    help="incremental: sample every thread's stack every N ms while a call runs past "
                         "--sample-after-ms (attribution of slow calls; stacks-KERNEL-incremental.json)")  # fmt: skip
    ap.add_argument("--sample-after-ms", type=float, default=2.0)
    ap.add_argument("--resolve", choices=["thread", "inline"], default=None,
                    help="incremental: IncrementalOptions(resolve=...), who resolves the event pairs (default: the "
                         "option's default)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the untuned, incremental and pretuned engines this many times in all, the order rotated "
                         "each time; the total's verdict is the median of the repetitions' ratios")  # fmt: skip
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:opt=value,...: one more incremental engine, incremental@NAME, with these "
                         "IncrementalOptions (or clock=torch|cached|uncached|driver, late=1), run and rotated beside "
                         "incremental in the same process (repeatable)")  # fmt: skip
    ap.add_argument("--profile", action="store_true",
                    help="the default incremental engine's calls under cProfile, written to DIR/profile-KERNEL-incremental.txt "
                         "(its totals are then the profiler's; run it apart from a measurement)")
    ap.add_argument("--interleave", type=int, default=0, metavar="N",
                    help="run the cheap engines (untuned, incremental and its variants, pretuned) interleaved, in "
                         "chunks of N calls taken in turn (run_interleaved), in the first pass and every repetition")
    ap.add_argument("--stream-judge-s", type=float, default=90.0, metavar="S",
                    help="the stream judge starts no chunk after S seconds (default 90): its chunks so far are kept")
    ap.add_argument("--stream-judge-calls", type=int, default=30000, metavar="N",
                    help="the stream judge (stream_judge) replays the first N calls with every engine's picks; 0: "
                         "off (the L2 rule's judge is then primary)")  # fmt: skip
    a = ap.parse_args()
    if 0 < a.watchdog_ms < WATCHDOG_MIN_MS:
        ap.error(f"--watchdog-ms {a.watchdog_ms:g}: at least {WATCHDOG_MIN_MS:g} ms (faulthandler's timer, re-armed "
                 f"every call, crashed a run on an H200 at 3 ms); use --sample-stacks-ms for shorter calls")
    if a.interleave < 0:
        ap.error(f"--interleave {a.interleave}: a chunk of calls is at least 1 (0: the engines one after another)")
    global SPIN_IDLE, DROP_LATE, WAIT_LEADER, SAMPLE_MS, SAMPLE_AFTER_MS, RESOLVE, PROFILE
    RESOLVE, PROFILE = a.resolve, a.profile
    for spec in a.variant:
        vname, vopts = parse_variant(spec)
        variant_options(vopts)  # a bad option fails now, not after the first streams
        VARIANTS[vname] = vopts
    SAMPLE_MS, SAMPLE_AFTER_MS = a.sample_stacks_ms, a.sample_after_ms
    SPIN_IDLE = not a.no_spin_idle
    DROP_LATE = a.drop_late
    WAIT_LEADER = not a.no_wait_leader
    if a.flat_prune:
        import tritune.serving.state as serving_state

        serving_state.PRUNE_NEAR = math.inf
    dry = a.dry_run
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    calls = a.calls or (120 if dry else 2000 if a.quick else 6000)
    n_b = a.buckets or (20 if dry or a.quick else 24)
    rounds = a.retime_rounds or (3 if dry else 5 if a.quick else 15)
    dev = "cpu" if dry else "cuda"
    order = ["tritune", "untuned", "triton", "incremental", "pretuned"]
    engines = ["untuned", "incremental"] if dry else order
    if a.engines:
        want = a.engines.split(",")
        engines = [e for e in order if e in want and (not dry or e in engines)]
    if VARIANTS and "incremental" in engines:  # each variant right after the default incremental engine
        at = engines.index("incremental") + 1
        engines[at:at] = [f"incremental@{v}" for v in VARIANTS]
    doc: dict[str, Any] = {"calls": calls, "buckets": n_b, "seed": a.seed, "dry_run": dry, "quick": a.quick,
                           "shapes": "tiny" if a.tiny else "serving", "spin_idle": SPIN_IDLE, "drop_late": DROP_LATE,
                           "wait_leader": WAIT_LEADER, "flat_prune": a.flat_prune, "resolve": RESOLVE,
                           "repeat": a.repeat, "variants": VARIANTS,
                           "engines": engines, "kernels": {}, "watchdog_ms": a.watchdog_ms}  # fmt: skip
    from tritune.bench.provenance import provenance

    doc["provenance"] = provenance()
    t_start = time.perf_counter()
    for w in workloads(dev, dry, a.quick, n_b, tiny=a.tiny):
        if w.name not in a.kernels.split(","):
            continue
        stream = zipf_stream(len(w.sizes), calls, a.seed)
        tensors = [w.make(s) for s in w.sizes]
        kd: dict[str, Any] = {"sizes": w.sizes, "stream": stream, "configs": [str(c) for c in w.configs],
                              "engines": {}}  # fmt: skip
        cheap = [e for e in engines if e in ("untuned", "pretuned") or e.startswith("incremental")]
        mixed = cheap if a.interleave and len(cheap) > 1 else []
        for e in engines:
            if e in mixed:
                continue
            torch.manual_seed(a.seed)
            kd["engines"][e] = run_engine(e, w, tensors, stream, out, dry, a.watchdog_ms)
            r = kd["engines"][e]
            print(f"{w.name:8s} {e:12s} total {r['total_s']:.2f} s  worst {r['worst_ms']:.1f} ms "
                  f"(call {r['worst']['call']}, {r['worst']['phase']})", flush=True)  # fmt: skip
        if mixed:  # after the others: the tritune engine has written the pretuned store
            kd["engines"].update(run_interleaved(mixed, w, tensors, stream, out, dry, a.interleave, a.seed))
            kd["engines"] = {e: kd["engines"][e] for e in engines}
            for e in mixed:
                r = kd["engines"][e]
                print(f"{w.name:8s} {e:12s} total {r['total_s']:.2f} s  worst {r['worst_ms']:.1f} ms "
                      f"(call {r['worst']['call']}, {r['worst']['phase']}; interleaved in chunks of {a.interleave}, "
                      f"background charged {r['charged_s'] * 1e3:.1f} ms)", flush=True)  # fmt: skip
        kd["interleave"] = a.interleave if mixed else 0
        add_excess(kd["engines"])
        # --repeat: the cheap engines again, on fresh decorators (a fresh incremental store; the pretuned one
        # the tritune engine wrote), the order rotated by one each time (see the module docstring); with
        # --interleave, all of them in one interleaved run, its chunks' order rotated by one more.
        kd["repeats"] = [{**{e: slim_run(kd["engines"][e]) for e in cheap}, "order": cheap}] if a.repeat > 1 else []
        for rep in range(1, a.repeat if cheap else 1):
            order_r = cheap[rep % len(cheap):] + cheap[: rep % len(cheap)]
            full: dict[str, Any] = {}
            if mixed:
                full = run_interleaved(order_r, w, tensors, stream, out, dry, a.interleave, a.seed)
            for e in order_r:
                if not mixed:
                    torch.manual_seed(a.seed)
                    full[e] = run_engine(e, w, tensors, stream, out, dry, 0.0)
                print(f"{w.name:8s} {e:12s} total {full[e]['total_s']:.2f} s  worst {full[e]['worst_ms']:.1f} ms "
                      f"(repetition {rep + 1}, order {','.join(order_r)}"
                      f"{', interleaved' if mixed else ''})", flush=True)  # fmt: skip
            add_excess(full)
            got: dict[str, Any] = {e: slim_run(r) for e, r in full.items()}
            got["order"] = order_r
            kd["repeats"].append(got)
        hot_min = 20 if dry else 200
        hot = [b for b in range(len(w.sizes)) if stream.count(b) >= hot_min]
        kd["hot_buckets"], kd["hot_min_calls"] = hot, hot_min
        kd["calls_per_bucket"] = {str(b): stream.count(b) for b in range(len(w.sizes))}
        kd["working_set_bytes"], kd["l2_bytes"] = working_set(tensors), l2_bytes(dev)
        kd["l2_rule_judge"] = primary_judge(kd["working_set_bytes"], kd["l2_bytes"])
        kd["retimed_cold_rounds"] = {str(b): {} for b in hot}
        kd["retimed_cold_ms"] = {str(b): retime(w, tensors[b], dry, rounds, "cold", kd["retimed_cold_rounds"][str(b)])
                                 for b in hot}  # fmt: skip
        kd["retimed_rounds"] = {str(b): {} for b in hot}
        try:
            kd["retimed_ms"] = {str(b): retime(w, tensors[b], dry, rounds, "warm", kd["retimed_rounds"][str(b)])
                                for b in hot}  # fmt: skip
        except Exception as e:  # the streams' results must not be lost; said loudly in the report
            kd["warm_judge_error"] = f"{type(e).__name__}: {e}"
            kd["retimed_ms"], kd["retimed_rounds"] = kd["retimed_cold_ms"], kd["retimed_cold_rounds"]
        kd["stream_judge_calls"] = min(len(stream), a.stream_judge_calls)
        kd["stream_picks"] = {str(b): v for b, v in stream_picks(kd, hot).items()}
        if kd["stream_judge_calls"] > 0 and hot:
            try:
                kd["stream_judge_spans"] = {}
                kd["stream_rounds"] = stream_judge(w, tensors, stream, stream_picks(kd, hot), dry,
                                                   kd["stream_judge_calls"], stats=kd["stream_judge_spans"],
                                                   deadline_s=a.stream_judge_s)  # fmt: skip
            except Exception as e:  # the streams' results must not be lost; said loudly in the report
                kd["stream_judge_error"] = f"{type(e).__name__}: {e}"
        # The stream judge when it ran (it times the calls as the stream runs them: stream_judge), else the L2
        # rule's; both verdicts are printed either way.
        kd["primary_judge"] = "stream" if kd.get("stream_rounds") else kd["l2_rule_judge"]
        kd["output_spread"] = {str(b): output_spread(w, tensors[b]) for b in hot}
        if not dry:
            kd["compile_one_config_ms"] = compile_one_ms(w, tensors[hot[0] if hot else 0])
        for r in kd["engines"].values():
            for judge, suffix in (("retimed_ms", ""), ("retimed_cold_ms", "_cold")):
                scores = []
                for b in hot:
                    times = kd[judge][str(b)]
                    c = r["final"].get(str(b), "?")
                    scores.append(times.get(c, math.inf) / min(times.values()))
                r["vs_best" + suffix] = scores
                rounds_of = kd[judge.replace("_ms", "_rounds")]
                r["vs_best_ci" + suffix] = [ratio_interval(rounds_of[str(b)], r["final"].get(str(b), "?"))
                                            for b in hot]  # fmt: skip
                r["converged_fraction" + suffix] = sum(s <= 1.02 for s in scores) / len(scores) if scores else None
                pre = kd["engines"].get("pretuned", {}).get("final", {})
                if pre:  # the target's measure: against the pretuned ideal's pick, round by round
                    pr = [paired_ratio(rounds_of[str(b)], r["final"].get(str(b), "?"), pre.get(str(b), "?"))
                          for b in hot]  # fmt: skip
                    r["vs_pretuned" + suffix] = [x[0] for x in pr]
                    r["vs_pretuned_ci" + suffix] = [(x[1], x[2]) for x in pr]
                    r["converged_vs_pretuned" + suffix] = (sum(x[0] <= 1.02 for x in pr) / len(pr)) if pr else None
            pre = kd["engines"].get("pretuned", {}).get("final", {})
            if kd.get("stream_rounds") and pre:  # the stream judge times only the picks: no "vs best" there
                pr = [paired_ratio(kd["stream_rounds"].get(str(b), {}), r["final"].get(str(b), "?"),
                                   pre.get(str(b), "?")) for b in hot]  # fmt: skip
                r["vs_pretuned_stream"] = [x[0] for x in pr]
                r["vs_pretuned_ci_stream"] = [(x[1], x[2]) for x in pr]
                r["converged_vs_pretuned_stream"] = (sum(x[0] <= 1.02 for x in pr) / len(pr)) if pr else None
        judges = {"cold": kd["retimed_cold_rounds"], "warm": kd["retimed_rounds"], "stream": kd.get("stream_rounds")}
        for rep in kd["repeats"]:
            pre_f = rep.get("pretuned", {}).get("final")
            for e in [e for e in rep if e.startswith("incremental")]:
                inc_f = rep[e].get("final")
                if inc_f and pre_f and hot:
                    for name, field in ((kd["primary_judge"], "converged_vs_pretuned"),
                                        (kd["l2_rule_judge"], "converged_vs_pretuned_rule")):  # fmt: skip
                        pr = [paired_ratio(judges[name].get(str(b), {}), inc_f.get(str(b), "?"),
                                           pre_f.get(str(b), "?"))[0] for b in hot]  # fmt: skip
                        rep[e][field] = sum(x <= 1.02 for x in pr) / len(pr)
        doc["kernels"][w.name] = kd
    for name, fn in (("comparison_check", lambda: comparison_check(dev)),
                     ("host_overhead", lambda: overhead_us(dev) if not dry else {"error": "needs a GPU"})):  # fmt: skip
        try:  # a failure here must not lose the stream's results above
            doc[name] = fn()
        except Exception as e:
            doc[name] = {"error": f"{type(e).__name__}: {e}"}
    doc["wall_s"] = time.perf_counter() - t_start
    (out / "serving.json").write_text(json.dumps(doc, indent=1, default=str))
    report(doc)


def working_set(tensors: list[tuple[Any, ...]]) -> int:
    """Bytes of every distinct tensor the stream's buckets pass (a bucket's tensors are its own)."""
    seen: dict[int, int] = {}
    for t in tensors:
        for a in t:
            if isinstance(a, torch.Tensor):
                seen[a.data_ptr()] = max(seen.get(a.data_ptr(), 0), a.numel() * a.element_size())
    return sum(seen.values())


def l2_bytes(dev: str) -> int | None:
    if dev != "cuda":
        return None
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or None


def primary_judge(ws: int, l2: int | None) -> str:
    """``cold`` when the stream's working set exceeds L2 (other buckets' calls evict a bucket's data between
    its calls), else ``warm``; ``cold`` where the L2 size is unknown (the CPU dry run)."""
    return "warm" if l2 is not None and ws <= l2 else "cold"


def print_variants(kd: dict[str, Any], reps: list[dict[str, Any]]) -> None:
    """``--variant``: each variant engine against the default incremental engine, repetition by repetition (the
    same process, the order rotated): its total / untuned, its excess over pretuned and the difference from the
    default's in the same repetition, convergence."""
    names = sorted({e for r in reps for e in r if e.startswith("incremental@")})
    for v in names:
        rows = [r for r in reps if v in r and "incremental" in r and "untuned" in r]
        if not rows:
            continue
        ratio = [r[v]["total_s"] / r["untuned"]["total_s"] for r in rows]
        ex = [sum((r[v].get("excess_vs_pretuned_ms") or {}).values()) for r in rows]
        ex0 = [sum((r["incremental"].get("excess_vs_pretuned_ms") or {}).values()) for r in rows]
        conv = [r[v].get("converged_vs_pretuned") for r in rows]
        diff = [a - b for a, b in zip(ex, ex0)]
        print(f"  variant {v} {VARIANTS.get(v.partition('@')[2], {})}: / untuned {[round(x, 3) for x in ratio]} "
              f"(median {statistics.median(ratio):.3f}); minus pretuned {[round(x) for x in ex]} ms; minus the "
              f"default's in the same repetition {[round(x) for x in diff]} ms (median {statistics.median(diff):+.0f}); "
              f"converged {['-' if c is None else f'{c:.0%}' for c in conv]}; racing calls "
              f"{[r[v].get('by_phase', {}).get('race', {}).get('n') for r in rows]} (default "
              f"{[r['incremental'].get('by_phase', {}).get('race', {}).get('n') for r in rows]})")  # fmt: skip
        for name in (v, "incremental"):
            race = [(r[name].get("excess_vs_pretuned_ms") or {}).get("race") for r in rows]
            race = [None if x is None else round(x) for x in race]
            host = [r[name].get("by_phase", {}).get("race", {}).get("host_p50_ms") for r in rows]
            print(f"    {name}: racing calls' excess over pretuned {race} ms, their host p50 "
                  f"{[None if h is None else round(h * 1e3, 1) for h in host]} us, decisions "
                  f"{[r[name].get('decisions') for r in rows]}, gated spans {[r[name].get('gates') for r in rows]} "
                  f"(opened by the watch {[r[name].get('released_early') for r in rows]}; gate off: "
                  f"{[r[name].get('gate_off') for r in rows]})")  # fmt: skip


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "MET" if ok else "MISSED"


def report(doc: dict[str, Any]) -> None:
    for name, kd in doc["kernels"].items():
        eng = kd["engines"]
        base = eng.get("untuned", {}).get("total_s")
        trit = eng.get("triton", {}).get("total_s")
        print(f"\n{name}: {doc['calls']} calls over {len(kd['sizes'])} buckets; hot buckets (>= {kd['hot_min_calls']} "
              f"calls): {len(kd['hot_buckets'])} {[kd['calls_per_bucket'][str(b)] for b in kd['hot_buckets']]}")  # fmt: skip
        print(f"{'engine':12s} {'total s':>8s} {'/untuned':>8s} {'/triton':>8s} {'p50 ms':>7s} {'p99 ms':>7s} "
              f"{'worst ms':>9s} {'worst at':>22s} {'conv warm':>9s} {'cold':>5s} {'stream/pre':>10s} "
              f"{'extra GPU':>9s}")  # fmt: skip
        for e, r in eng.items():
            rb = f"{r['total_s'] / base:8.3f}" if base else f"{'-':>8s}"
            rt = f"{r['total_s'] / trit:8.3f}" if trit else f"{'-':>8s}"
            conv, extra, cc = r.get("converged_fraction"), r.get("extra_gpu_fraction"), r.get("converged_fraction_cold")
            sp = r.get("converged_vs_pretuned_stream")  # the stream judge, against the pretuned pick (its teeth:
            # the untuned engine's row)
            wst = r["worst"]
            at = f"#{wst['call']} b{wst['bucket']} {wst['phase']}"
            print(f"{e:12s} {r['total_s']:8.2f} {rb} {rt} {r['p50_ms']:7.3f} {r['p99_ms']:7.3f} {r['worst_ms']:9.2f} "
                  f"{at:>22s} {'-' if conv is None else f'{conv:.0%}':>9s} {'-' if cc is None else f'{cc:.0%}':>5s} "
                  f"{'-' if sp is None else f'{sp:.0%}':>10s} {'-' if extra is None else f'{extra:.1%}':>9s}")  # fmt: skip
        inc = eng.get("incremental")
        if inc is None:
            continue
        wst = inc["worst"]
        print(f"incremental worst call: {wst['worst_ms'] if 'worst_ms' in wst else inc['worst_ms']:.2f} ms = host "
              f"{wst['host_ms']:.2f} + device wait {wst['device_wait_ms']:.2f} (gc {wst['gc_ms']:.2f}); call "
              f"{wst['calls_of_bucket_before'] + 1} of bucket {wst['bucket']}, phase {wst['phase']}")  # fmt: skip
        for ev in wst.get("background", [])[-12:]:
            print(f"   {ev[0]:+9.2f} ms  {ev[1]:24s} {ev[2]:10s} {ev[3]}")
        print("incremental by phase:", {p: f"n={v['n']} p50={v['p50_ms']:.3f} max={v['max_ms']:.2f} "
                                        f"sum={v.get('sum_ms', float('nan')):.0f}" for p, v in inc["by_phase"].items()})  # fmt: skip
        print("  host part by phase (ms, p50 / mean; the rest waited for the device):",
              {p: f"{v['host_p50_ms']:.4f} / {v['host_mean_ms']:.4f} of {v['p50_ms']:.4f} / {v['mean_ms']:.4f}"
               for p, v in inc["by_phase"].items() if "host_p50_ms" in v})  # fmt: skip
        for ref in ("pretuned", "untuned"):
            ex = inc.get(f"excess_vs_{ref}_ms")
            if ex:
                print(f"  incremental minus {ref}, call by call, summed by the incremental call's phase (ms): "
                      f"{ {p: round(v, 1) for p, v in ex.items()} }, total {sum(ex.values()):.0f}")  # fmt: skip
        c1 = kd.get("compile_one_config_ms")
        print(f"  worst single call {inc['worst_ms']:.1f} ms <= 50 ms (Triton's cache warm; one config compiles "
              f"from nothing in {c1 or float('nan'):.0f} ms): {verdict(inc['worst_ms'] <= 50.0)}")  # fmt: skip
        reps = [r for r in kd.get("repeats", []) if "incremental" in r and "untuned" in r]
        if reps:
            ratios = [r["incremental"]["total_s"] / r["untuned"]["total_s"] for r in reps]
            for i, r in enumerate(reps):
                cv = r["incremental"].get("converged_vs_pretuned")
                cr = r["incremental"].get("converged_vs_pretuned_rule")
                ex = r["incremental"].get("excess_vs_pretuned_ms") or {}
                print(f"  repetition {i + 1} ({','.join(r['order'])}): untuned {r['untuned']['total_s']:.2f} s, "
                      f"incremental {r['incremental']['total_s']:.2f} s ({ratios[i]:.3f}x untuned), pretuned "
                      f"{r.get('pretuned', {}).get('total_s', float('nan')):.2f} s; incremental minus pretuned "
                      f"{sum(ex.values()):.0f} ms {({p: round(v) for p, v in ex.items()})}; converged "
                      f"{'-' if cv is None else f'{cv:.0%}'} ({kd.get('primary_judge')} judge; "
                      f"{kd.get('l2_rule_judge')}: {'-' if cr is None else f'{cr:.0%}'})")  # fmt: skip
            med = statistics.median(ratios)
            how = f", each interleaved in chunks of {kd['interleave']} calls" if kd.get("interleave") else ""
            print(f"  total, median over {len(reps)} repetitions{how} of incremental / untuned: {med:.3f} <= 1.1: "
                  f"{verdict(med <= 1.1)} (each: {[round(x, 3) for x in ratios]})")  # fmt: skip
        print_variants(kd, reps or [{**eng, "order": list(eng)}])
        if base and trit:
            print(f"  total {inc['total_s']:.2f} s <= 1.1x untuned ({base:.2f} s): {verdict(inc['total_s'] <= 1.1 * base)}; "
                  f"<= 0.2x triton.autotune ({trit:.2f} s): {verdict(inc['total_s'] <= 0.2 * trit)}")  # fmt: skip
        warm_conv, cold = inc.get("converged_fraction"), inc.get("converged_fraction_cold")
        primary = kd.get("primary_judge", "warm")
        rule = kd.get("l2_rule_judge", primary)
        ws, l2 = kd.get("working_set_bytes"), kd.get("l2_bytes")
        print(f"  primary judge: {primary} (the L2 rule's: {rule}, the stream's working set {(ws or 0) / 2**20:.0f} "
              f"MB, L2 {'?' if not l2 else f'{l2 / 2**20:.0f} MB'}; the stream judge replays "
              f"{kd.get('stream_judge_calls', 0)} calls with the picks {kd.get('stream_picks', {})}; its spans, "
              f"the stream held ahead of the host: {kd.get('stream_judge_spans')})")  # fmt: skip
        if "stream_judge_error" in kd:
            print(f"  STREAM JUDGE FAILED ({kd['stream_judge_error']}): the L2 rule's judge is primary")
        sfx = {"cold": "_cold", "warm": "", "stream": "_stream"}
        how = {"stream": "the stream judge's chunks (the stream replayed with the picks)",
               "cold": "the cold judge's interleaved rounds", "warm": "the warm judge's interleaved rounds"}
        for jn in dict.fromkeys((primary, rule)):
            pconv = inc.get("converged_vs_pretuned" + sfx[jn])
            if pconv is None:
                continue
            print(f"  hot buckets converged to <= 1.02x the pretuned best ({'the target' if jn == primary else 'also'}"
                  f"'s measure: promoted, and the median over {how[jn]} of its time / the pretuned ideal's pick's "
                  f"in the same round <= 1.02): {pconv:.0%} >= 90%: "
                  f"{verdict(pconv >= 0.9) if jn == primary else '(not the primary judge)'} (vs pretuned: "
                  f"{[round(x, 3) for x in inc.get('vs_pretuned' + sfx[jn], [])]}; 95% intervals "
                  f"{[(round(lo, 3), round(hi, 3)) for lo, hi in inc.get('vs_pretuned_ci' + sfx[jn], [])]})")  # fmt: skip
        primary, sfx = rule, sfx[rule]  # below: against all configs, which only the retiming judges time
        pconv = inc.get("converged_vs_pretuned" + sfx)
        if pconv is not None:
            pre_self = eng.get("pretuned", {}).get("converged_fraction" + sfx)
            print(f"  stricter, against the best of ALL configs re-timed (the smallest of {len(kd['configs'])} noisy "
                  f"medians; the pretuned ideal itself scores {'-' if pre_self is None else f'{pre_self:.0%}'} here):")  # fmt: skip
        conv = inc.get("converged_fraction" + sfx)
        print(f"  hot buckets converged (promoted, <= 1.02x the best re-timed {primary}, interleaved; the L2 rule's "
              f"judge): {'-' if conv is None else f'{conv:.0%}'} >= 90%: {verdict(None if conv is None else conv >= 0.9)} "
              f"(vs best: {[round(x, 3) for x in inc.get('vs_best' + sfx, [])]}; final: "
              f"{[inc['final'][str(b)] for b in kd['hot_buckets']]})")  # fmt: skip
        ci = inc.get("vs_best_ci" + sfx, [])
        if ci:
            fine = sum(lo <= 1.02 for lo, _ in ci)  # an unpromoted bucket's interval is (inf, inf): never counted
            print(f"  the L2 rule's judge's 95% interval of each ratio (rounds resampled, best re-chosen): "
                  f"{[(round(lo, 3), round(hi, 3)) for lo, hi in ci]}; promoted and within the judge's resolution "
                  f"of <= 1.02x: {fine} of {len(ci)} (the target above is the strict count)")  # fmt: skip
        print(f"  the warm judge (EventTimer warm, no flush): {'-' if warm_conv is None else f'{warm_conv:.0%}'} "
              f"converged (vs best: {[round(x, 3) for x in inc.get('vs_best', [])]}); pretuned "
              f"{eng.get('pretuned', {}).get('vs_best', '-')}")  # fmt: skip
        print(f"  the cold judge (do_bench, L2 flushed): {'-' if cold is None else f'{cold:.0%}'} converged "
              f"(vs best: {[round(x, 3) for x in inc.get('vs_best_cold', [])]}); pretuned "
              f"{eng.get('pretuned', {}).get('vs_best_cold', '-')}")  # fmt: skip
        warm_best = [min(kd["retimed_ms"][str(b)], key=kd["retimed_ms"][str(b)].get) for b in kd["hot_buckets"]]
        cold_best = [min(kd["retimed_cold_ms"][str(b)], key=kd["retimed_cold_ms"][str(b)].get)
                     for b in kd["hot_buckets"]]  # fmt: skip
        print(f"  judges agree on the best config of {sum(a == c for a, c in zip(warm_best, cold_best))} of "
              f"{len(warm_best)} hot buckets")  # fmt: skip
        if inc.get("store_errors"):
            print(f"  STORE WRITES FAILED: {inc['store_errors'][:3]}")
        if "warm_judge_error" in kd:
            print(f"  WARM JUDGE FAILED ({kd['warm_judge_error']}): both verdicts above are the cold judge's")
        print_diagnosis(kd, inc)
        fp = inc.get("first_parts_median_ms")
        if fp:
            print(f"  a key's first call on the caller's thread, median of {len(inc['first_parts'])} keys (ms): {fp}; "
                  f"resolver pairs left to torch's calls: {inc.get('driver_fallbacks')}")  # fmt: skip
        cp = inc.get("check_parts_median_ms")
        if cp:
            print(f"  a check's event time, median of {inc['checks_timed']} (ms): copies {cp[0]:.4f}, scratch run "
                  f"{cp[1]:.4f}, comparison {cp[2]:.4f}; the kernel's untuned call p50 "
                  f"{eng.get('untuned', {}).get('p50_ms', float('nan')):.4f} (host and device)")  # fmt: skip
        ch = inc.get("check_host_median_ms")
        if ch:
            print(f"  a check call's host time by step, median (ms): {ch}")
        hs = inc.get("host_split_us")
        if hs:
            print(f"  the incremental path's host time per call by phase (us: the call, then resolving the pairs the "
                  f"device passed, with their decisions): {hs}")  # fmt: skip
        print(f"  extra GPU while tuning {inc['extra_gpu_fraction']:.1%} of {inc['tuning_gpu_ms']:.1f} ms "
              f"(bound 10%): {verdict(inc['extra_gpu_fraction'] <= 0.10)}; promoted {inc['promoted']} keys, "
              f"{inc['still_tuning']} still tuning; resolver {inc['resolver_us_per_handle'] or float('nan'):.1f} us "
              f"per event pair ({inc.get('resolved_inline', 0)} of {inc['timed_spans']} resolved by the calls, "
              f"{inc.get('resolver_wakes', 0)} thread wakes); disagreed: {inc['disagreed'] or 'none'}")  # fmt: skip
        if inc.get("decisions") is not None:
            n = inc["decisions"]
            print(f"  decisions without a promotion: {n}, {inc['decisions_ms']:.1f} ms "
                  f"({inc['decisions_ms'] * 1e3 / max(n, 1):.1f} us each); promotions {inc['promoted']}, "
                  f"{inc['promotions_ms']:.1f} ms (the caller's or the resolver's thread)")  # fmt: skip
        if inc.get("stretched_spans") is not None:
            upper = (inc["extra_gpu_ms"] + inc["stretched_ms"]) / max(inc["tuning_gpu_ms"], 1e-9)
            print(f"  spans stretched by another thread (caller > stall_ms inside a span): {inc['stretched_spans']}, "
                  f"{inc['stretched_ms']:.1f} ms of checks' event time not charged (charged plus all of it: "
                  f"{upper:.1%} of the tuning calls' device time)")  # fmt: skip
        if doc.get("drop_late") and inc.get("late_spans") is not None:
            print(f"  late spans (the start event passed before the launch returned: host time inside, no sample): "
                  f"{inc['late_spans']} of {inc['timed_spans']} event pairs resolved")  # fmt: skip
        sp = kd["output_spread"]
        if sp:
            worst_sp = max(sp.values(), key=lambda v: v["max_over_tolerance"])
            print(f"  output spread across configs (hot buckets): max |diff| {worst_sp['max_abs_diff']:.3g}, "
                  f"{worst_sp['max_over_tolerance']:.2f}x the default tolerance (atol=rtol={worst_sp['rtol']:g})")  # fmt: skip
    cc = doc.get("comparison_check", {})
    if "error" in cc:
        print(f"\ncomparison check: not run ({cc['error']})")
    else:
        print("\ncomparison check (equal agree, +1 on an integer differs, within/beyond tolerance):",
              {k: ("fused" if v["fused"] else "torch") + (" ok" if v["as_expected"] else f" WRONG {v['verdicts']}")
               for k, v in cc.items()})  # fmt: skip
    h = doc.get("host_overhead", {})
    if "error" in h:
        print(f"host cost per call: not measured ({h['error']})")
    else:
        print(f"host cost per call (caller's thread, real launches and events): cached {h['cached_us']:.1f} us, "
              f"racing {h['racing_us']:.1f} us (overhead {h['overhead_us']:+.1f} us), a check call "
              f"{h['check_us'] or float('nan'):.0f} us; resolver thread "
              f"{h['resolver_us_per_handle'] or float('nan'):.1f} us per event pair "
              f"(resolve={h.get('resolve_default', 'thread')})")  # fmt: skip
        for mode in ("thread", "inline"):
            if f"racing_us_{mode}" in h:
                print(f"  with resolve={mode}: racing {h[f'racing_us_{mode}']:.1f} us (overhead "
                      f"{h[f'overhead_us_{mode}']:+.1f} us), a check call {h[f'check_us_{mode}'] or float('nan'):.0f} us, "
                      f"{h[f'resolver_us_per_handle_{mode}'] or float('nan'):.1f} us per event pair")  # fmt: skip
    print(f"wall: {doc['wall_s']:.0f} s")


if __name__ == "__main__":
    main()

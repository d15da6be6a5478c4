"""The GPU timer: CUDA events around each run, L2 flushed between runs, repetitions that adapt.

Each sample is ``flush; record(start); fn(); record(end)``. The flush zeroes a buffer of at least twice
the device's L2 (size read from the device), so ``fn`` starts from a cold cache; being a kernel of its
own, it is outside the timed region, and while the GPU runs it the CPU queues ``fn``, so launch latency
stays hidden too. Sampling goes in batches until the median's 95% interval is within ``rel_tol`` of the
median or the budget is spent.

For kernels so short that launch overhead dominates even so, ``graph=True`` captures ``calls`` launches
(each preceded by its flush) into one CUDA graph and a second graph of the flushes alone; one sample is
``(t(graph) - t(flushes)) / calls``. Without the flush it is ``t(graph) / calls``.

``batch_short=True`` (what :meth:`EventTimer.for_policy` sets) does the same by itself for a kernel the
warm-up finds short (:func:`~tritune.measure.launches_per_sample` > 1), keeping the cache state of the
timer's policy: flush+launch pairs when flushing, back-to-back launches when not.
"""

from __future__ import annotations

import ctypes
import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from tritune.bench.stats import Measurement, relative_halfwidth
from tritune.bench.timer import Runnable
from tritune.device import gpu_unavailable_reason
from tritune.errors import ConfigError, TimingUnavailableError
from tritune.measure import SHORT_KERNEL_MS, MeasurePolicy, launches_per_sample

#: Used only when neither torch nor the CUDA driver reports the L2 size (Triton's own flush size).
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024
_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38


def _import_torch() -> Any:
    """torch, imported late (tests replace this to drive the timer with a simulated device)."""
    import torch

    return torch


def l2_cache_bytes(device_index: int) -> tuple[int, str]:
    """The device's L2 size in bytes and where it came from (``torch``, ``cuda-driver`` or ``default``)."""
    torch = _import_torch()
    size = getattr(torch.cuda.get_device_properties(device_index), "L2_cache_size", 0)
    if size:
        return int(size), "torch"
    try:  # torch builds without the field: ask the driver (already initialized by torch).
        libcuda = ctypes.CDLL("libcuda.so.1")
        dev, value = ctypes.c_int(), ctypes.c_int()
        if libcuda.cuDeviceGet(ctypes.byref(dev), device_index) == 0 and (
            libcuda.cuDeviceGetAttribute(ctypes.byref(value), _CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) == 0
        ):
            if value.value > 0:
                return int(value.value), "cuda-driver"
    except OSError:
        pass
    return DEFAULT_FLUSH_BYTES // 2, "default"


def _fns(fn: Runnable) -> list[Callable[[], object]]:
    fns = [fn] if callable(fn) else list(fn)
    if not fns or not all(callable(f) for f in fns):
        raise TypeError("measure() needs a callable, or a non-empty list of callables (one per input copy)")
    return fns


class EventTimer:
    """Times GPU work with CUDA events (see the module docstring). Raises TimingUnavailableError without a GPU.

    ``fn`` may be a list of callables, one per copy of the inputs: runs cycle through them, so inputs
    that fit in L2 are still read cold without a flush (:meth:`copies_needed` says how many copies).
    """

    name = "event"

    def __init__(
        self,
        *,
        device: int | None = None,
        flush_l2: bool = True,
        graph: bool = False,
        warmup_s: float = 0.025,
        graph_ms: float = 2.0,
        batch_ms: float = 10.0,
        confidence: float = 0.95,
        batch_short: bool = False,
        short_ms: float = SHORT_KERNEL_MS,
        reuse_graphs: bool = False,
        recapture: bool = False,
    ) -> None:
        reason = gpu_unavailable_reason()
        if reason is not None:
            raise TimingUnavailableError(
                f"tritune cannot time kernels here: {reason}. Run on a machine with a CUDA GPU, or test "
                "tuning logic on CPU with tritune.bench.ReplayTimer and a recorded landscape."
            )
        torch = self._torch = _import_torch()
        self.device = torch.cuda.current_device() if device is None else int(device)
        self.device_name = torch.cuda.get_device_name(self.device)
        self.l2_bytes, self.l2_source = l2_cache_bytes(self.device)
        self.flush_l2 = flush_l2
        self.flush_bytes = max(2 * self.l2_bytes, 1 << 20) if flush_l2 else 0
        self.graph = graph
        self.batch_short = batch_short
        self.short_ms = short_ms
        self.reuse_graphs = reuse_graphs
        self.recapture = recapture
        self.warmup_s = warmup_s
        self.graph_ms = graph_ms
        self.batch_ms = batch_ms
        self.confidence = confidence
        self._cycles_per_us_cache: float | None = None
        self._flush_ms: float | None = None
        self.pad_us = 0.0
        self._step_cpu_us = 0.0  # set by each measurement's warm-up (see _launch_pad)
        # Captured graphs, by the ids of the callables (kept alive here so the ids stay theirs).
        self._graph_cache: dict[tuple[int, ...], tuple[list[Callable[[], object]], Any, Any, int]] = {}
        self._flush_graphs: dict[int, Any] = {}
        self._flush_buf = (
            torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=f"cuda:{self.device}")
            if flush_l2
            else None
        )

    @classmethod
    def for_policy(cls, policy: MeasurePolicy | str, *, device: int | None = None, **kwargs: Any) -> EventTimer:
        """The timer of a measurement policy, short kernels batched (see :mod:`tritune.measure`)."""
        p = MeasurePolicy.parse(policy)
        if not p.timed:
            raise ConfigError(f"measure={p.value!r} names where times came from, not a way to time: use 'cold', "
                              "'warm' or 'graph'")
        kwargs.setdefault("batch_short", True)
        kwargs.setdefault("reuse_graphs", True)
        kwargs.setdefault("recapture", True)
        # Shorter graphs than the plain graph mode's 2 ms: a capture costs the CPU one Python launch per
        # call (1000 calls of a 2 us kernel take ~20 ms to capture), and 0.5 ms samples are still ~1000x the
        # events' resolution.
        kwargs.setdefault("graph_ms", 0.5)
        return cls(device=device, flush_l2=p.flush_l2, graph=p.graph, **kwargs)

    @property
    def policy(self) -> MeasurePolicy:
        """The policy this timer measures under: ``cold`` when it flushes, else ``graph`` or ``warm``."""
        if self.flush_l2:
            return MeasurePolicy.COLD
        return MeasurePolicy.GRAPH if self.graph else MeasurePolicy.WARM

    # -- settings ------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        import triton

        return {
            "timer": self.name,
            "measure": self.policy.value,
            "device": self.device_name,
            "l2_bytes": self.l2_bytes,
            "l2_source": self.l2_source,
            "flush_l2": self.flush_l2,
            "flush_bytes": self.flush_bytes,
            "graph": self.graph,
            "batch_short": self.batch_short,
            "reuse_graphs": self.reuse_graphs,
            "recapture": self.recapture,
            "short_ms": self.short_ms,
            "graph_ms": self.graph_ms,
            "warmup_s": self.warmup_s,
            "batch_ms": self.batch_ms,
            "launch_pad_us": round(self.pad_us, 1),
            "confidence": self.confidence,
            "statistic": "median, distribution-free order-statistic interval",
            "torch": self._torch.__version__,
            "triton": triton.__version__,
        }

    def copies_needed(self, input_bytes: int) -> int:
        """How many copies of inputs of this size a rotation needs so each run reads them cold (> 2x L2)."""
        if input_bytes <= 0:
            raise ValueError("input_bytes must be positive")
        return max(1, math.ceil(2 * self.l2_bytes / input_bytes) + 1)

    # -- pieces --------------------------------------------------------------------------------------
    def _flush(self) -> None:
        if self._flush_buf is not None:
            self._flush_buf.zero_()

    def _event(self) -> Any:
        return self._torch.cuda.Event(enable_timing=True)

    def _time_loop(self, body: Callable[[], None], reps: int) -> float:
        """GPU ms of ``reps`` runs of ``body`` between two events (synchronizes)."""
        return self._time_steps(body, reps, None)[0]

    def _time_steps(self, body: Callable[[], None], reps: int, pad: Callable[[], None] | None) -> tuple[float, float]:
        """GPU ms of ``reps`` runs of ``body`` between two events, and the CPU ms spent enqueueing them.

        ``pad`` (a GPU spin) runs before the start event: while the GPU spins, the CPU queues the runs, so
        the events see the GPU time of the runs back to back, not the CPU's launch rate."""
        start, end = self._event(), self._event()
        if pad is not None:
            pad()
        t0 = time.perf_counter()
        start.record()
        for _ in range(reps):
            body()
        end.record()
        cpu_ms = (time.perf_counter() - t0) * 1e3
        end.synchronize()
        return float(start.elapsed_time(end)), cpu_ms

    def _can_spin(self) -> bool:
        return hasattr(self._torch.cuda, "_sleep")

    def _spin(self, ms: float) -> Callable[[], None] | None:
        """A GPU spin of about ``ms`` (None where torch has no spin primitive, e.g. a simulated device)."""
        torch = self._torch
        if not self._can_spin():
            return None
        cycles = max(1, int(ms * 1e3 * self._cycles_per_us()))
        return lambda: torch.cuda._sleep(cycles)

    def warm_device(self, seconds: float = 0.1) -> None:
        """Keep the GPU busy with flushes for ``seconds`` so its clocks ramp up before a tuning session."""
        deadline = time.perf_counter() + seconds
        buf = (
            self._flush_buf
            if self._flush_buf is not None
            else self._torch.empty(1 << 22, device=f"cuda:{self.device}")
        )
        while time.perf_counter() < deadline:
            for _ in range(10):
                buf.zero_()
            self._torch.cuda.synchronize(self.device)

    # -- the measurement -----------------------------------------------------------------------------
    def measure(
        self,
        fn: Runnable,
        *,
        budget_s: float = 1.0,
        rel_tol: float = 0.01,
        min_samples: int = 10,
        max_samples: int = 100_000,
        warmup_s: float | None = None,
    ) -> Measurement:
        """Time ``fn`` (see the class docstring); ``budget_s`` bounds sampling, warm-up comes on top."""
        fns = _fns(fn)
        if budget_s <= 0 or min_samples < 1 or max_samples < min_samples:
            raise ValueError("need budget_s > 0 and 1 <= min_samples <= max_samples")
        t0 = time.perf_counter()
        with self._torch.cuda.device(self.device):
            fn_ms, flush_ms = self._warm_up(fns, self.warmup_s if warmup_s is None else warmup_s)
            per_run_ms = fn_ms + flush_ms
            batched = self.batch_short and launches_per_sample(fn_ms, short_ms=self.short_ms) > 1
            fallback = None
            if self.graph or batched:
                samples, calls = self._sample_graph(
                    fns, per_run_ms, budget_s, rel_tol, min_samples, max_samples
                )
                if self._flush_buf is not None and min(samples) <= 0:
                    # A work graph (flush+launch pairs) came out no slower than the graph of the flushes
                    # alone: the difference did not resolve the kernel. Liger's DyT tests on an H200 gave a
                    # median of -51 us a launch, and a negative time reached the store and failed the
                    # user's call; one of fla's GLA kernels on an H100 (1.6 us) gave a positive median
                    # but samples down to -39 us, an interval below zero that no comparison can use. Time
                    # it one launch per sample instead: flush, spin, events around the launch, which
                    # cannot go below zero.
                    fallback = (
                        f"graph minus flushes gave {min(samples) * 1e3:.2f} us a launch at least "
                        f"(median {statistics.median(samples) * 1e3:.2f} us)"
                    )
                    samples, calls = self._sample_events(
                        fns, per_run_ms, budget_s, rel_tol, min_samples, max_samples
                    )
            else:
                samples, calls = self._sample_events(
                    fns, per_run_ms, budget_s, rel_tol, min_samples, max_samples
                )
        return Measurement.from_samples(
            samples,
            rel_tol=rel_tol,
            confidence=self.confidence,
            min_samples=min_samples,
            elapsed_s=time.perf_counter() - t0,
            calls_per_sample=calls,
            extra={
                "timer": "event-graph" if (self.graph or batched) and fallback is None else "event",
                **({"fallback": fallback} if fallback else {}),
                "measure": self.policy.value,
                "est_us": round(fn_ms * 1e3, 3),  # the warm-up's estimate of one run, which sized the samples
            },
        )

    def _warm_up(self, fns: Sequence[Callable[[], object]], warmup_s: float) -> tuple[float, float]:
        """Run every copy once, then flush+fn for ``warmup_s`` of wall time.

        Returns estimates of the GPU ms of one fn and of one flush. The fn estimate is the last warm-up
        loop's average: it only sizes the sample batches, so no extra runs are spent on it (at 8192^3 a
        matmul candidate's first look cost 12 runs with them, 7 without).

        A short kernel launched from Python is launch-bound: the GPU waits for the CPU (Triton's launcher
        costs ~20 us on the H200 machine), so a plain loop measures the CPU's launch rate, not the kernel.
        When a loop's GPU time kept pace with its CPU time, the next loop starts behind a GPU spin as long
        as the CPU needs to queue it, and the last loop is always such a one: the estimate is the kernel's
        own back-to-back time. Batched samples are sized from it (:meth:`_graphs`); sized from the launch
        rate instead, a 2 us kernel got ~25 launches per graph, and the graph's fixed replay cost, spread
        over a number of launches that varied with the CPU's jitter, moved configs by 1-2%."""
        for f in fns:
            f()
        self._torch.cuda.synchronize(self.device)
        k = 0

        def step() -> None:
            nonlocal k
            self._flush()
            fns[k % len(fns)]()
            k += 1

        deadline = time.perf_counter() + warmup_s
        reps = 1
        step_cpu_ms = 0.0  # the CPU's time to queue one step, from the last loop
        pad_next = False
        while True:
            pad = self._spin(1.5 * reps * step_cpu_ms + 0.01) if pad_next else None
            gpu_ms, cpu_ms = self._time_steps(step, reps, pad)
            both_ms = gpu_ms / reps  # the last loop's average is the estimate
            step_cpu_ms = cpu_ms / reps
            self._step_cpu_us = step_cpu_ms * 1e3  # the CPU's time to queue flush+fn: sizes the launch pad
            # A loop whose GPU time did not exceed the CPU's may have timed the launch rate: spin first next.
            pad_next = gpu_ms <= 1.2 * cpu_ms and self._can_spin()
            past = time.perf_counter() >= deadline
            if past and (pad is not None or not pad_next):
                break
            if not past:
                reps = min(reps * 2, 1000)
        if self._flush_buf is None:
            self._flush_ms = 0.0
        elif self._flush_ms is None or both_ms <= self._flush_ms:
            # The flush costs the same every time, so it is estimated once per timer, the way the steps were
            # (behind a spin, back to back); again whenever a warm-up's flush+fn comes out no slower than the
            # flush alone: the first estimate was taken while the clocks were still low (the first timings
            # of a process). Kept, it made every later short kernel look 0.1 us long.
            n = max(5, min(reps, 50))
            fpad = self._spin(1.5 * n * step_cpu_ms + 0.01) if self._can_spin() else None
            self._flush_ms = self._time_steps(self._flush, n, fpad)[0] / n
        return max(both_ms - self._flush_ms, 1e-4), self._flush_ms

    def _cycles_per_us(self) -> float:
        """GPU clock cycles per microsecond, measured once by timing ``torch.cuda._sleep``."""
        if self._cycles_per_us_cache is None:
            torch = self._torch
            cycles = 2_000_000
            torch.cuda._sleep(cycles)  # warm
            ms = self._time_loop(lambda: torch.cuda._sleep(cycles), 1)
            self._cycles_per_us_cache = cycles / max(ms * 1e3, 1.0)
        return self._cycles_per_us_cache

    def _launch_pad(self) -> Callable[[], None]:
        """A GPU spin placed after the flush and before the start event, long enough for the CPU to enqueue
        the start event and the kernel. Without it, a launcher slower than the flush (Triton's Python launch
        path costs 10-25 us) leaves the GPU idle between the start event and the kernel, and that idle time
        is counted as kernel time. Sized at 3x the CPU time the warm-up's last loop took to queue one flush and
        run (which covers a start event's record and a run; every measurement warms up first), at least 20 us.
        Sizing it by timing 8 more launches instead cost a 2.7 ms kernel 37 ms a measurement."""
        torch = self._torch
        if not hasattr(torch.cuda, "_sleep"):  # no spin primitive (e.g. the simulated device in tests)
            return lambda: None
        self.pad_us = max(20.0, 3.0 * self._step_cpu_us)
        cycles = int(self.pad_us * self._cycles_per_us())
        return lambda: torch.cuda._sleep(cycles)

    def _sample_events(
        self, fns: Sequence[Callable[[], object]], est_ms: float, budget_s: float, rel_tol: float,
        min_samples: int, max_samples: int,
    ) -> tuple[list[float], int]:  # fmt: skip
        samples: list[float] = []
        pad = self._launch_pad()
        # One sample costs the flush, the pad and the run on the GPU: size batches so that even the first
        # one stays within the budget (a brief look in a race is a few ms, not a 10 ms batch).
        sample_ms = est_ms + self.pad_us / 1000.0
        deadline = time.perf_counter() + budget_s
        batch = max(min_samples, min(1000, int(self.batch_ms / sample_ms), int(budget_s * 1000 / sample_ms)))
        k = 0
        while True:
            left_ms = max(0.0, (deadline - time.perf_counter()) * 1000)
            if samples:  # never plan past the deadline (at least one sample, so the loop ends)
                batch = min(batch, max(1, int(left_ms / sample_ms)))
            batch = max(1, min(batch, max_samples - len(samples)))
            starts = [self._event() for _ in range(batch)]
            ends = [self._event() for _ in range(batch)]
            for i in range(batch):
                self._flush()
                pad()
                starts[i].record()
                fns[k % len(fns)]()
                ends[i].record()
                k += 1
            ends[-1].synchronize()
            samples.extend(float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True))
            if _done(samples, rel_tol, min_samples, max_samples, self.confidence, deadline):
                return samples, 1
            batch = _next_batch(samples, rel_tol, self.confidence, batch)

    def _capture(self, body: Callable[[], None]) -> Any:
        torch = self._torch
        g = torch.cuda.CUDAGraph()
        # A Triton kernel finalized by the cyclic GC during capture would invalidate the graph.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.stream(torch.cuda.Stream()):
                with torch.cuda.graph(g):
                    body()
        finally:
            if gc_was_enabled:
                gc.enable()
        torch.cuda.synchronize(self.device)
        g.replay()
        torch.cuda.synchronize(self.device)
        return g

    def _graphs(self, fns: Sequence[Callable[[], object]], est_ms: float) -> tuple[Any, Any, int]:
        """The work graph of ``fns`` (each launch after its flush when flushing), the graph of the flushes
        alone (None without flush), and the launches in each. With ``reuse_graphs`` (what
        :meth:`for_policy` sets, for :class:`~tritune.bench.timer.TimerMeasure`, which keeps one callable per
        config) the work graph is captured on the first measurement of these callables and replayed by later
        ones: a race times each candidate many times, and capturing 1000 launches each time would cost more
        than timing them. A callable that launches something else on a later call must not be reused.
        With ``recapture`` (also set by :meth:`for_policy`) only the size is reused: every later look
        captures the work graph afresh at that size, skipping the warm-up sizing and its check."""
        ident = tuple(id(f) for f in fns)
        cached = self._graph_cache.get(ident) if self.reuse_graphs else None
        if cached is not None and cached[0] == list(fns):
            if not self.recapture:
                return cached[1], cached[2], cached[3]
            # The size is kept (checked once), the work graph captured afresh: each look sees a new
            # capture, as the judge and a deployment that captures its own graph do, so one capture's
            # luck (or the state of the device when it was made) is not kept for a whole race.
            work = self._capture_work(fns, cached[3])
            self._graph_cache[ident] = (cached[0], work, cached[2], cached[3])
            return work, cached[2], cached[3]
        calls = self._calls_for(est_ms)
        work = self._capture_work(fns, calls)
        for _ in range(3):
            # The check: time one replay. An estimate too high (a launch-bound warm-up without a spin to hide
            # the CPU) gives a graph too short for its fixed replay cost to vanish: capture it again, sized
            # from the replay (each of its launches preceded by its flush when flushing, as est_ms is). The
            # fixed cost inflates a tiny graph's per-run time, so a second resize may be needed.
            if calls >= MAX_GRAPH_CALLS:
                break
            start, end = self._event(), self._event()
            pad = self._spin(0.05)  # the GPU is idle after the capture: hide the replay's launch behind a spin
            if pad is not None:
                pad()
            start.record()
            work.replay()
            end.record()
            end.synchronize()
            better = self._calls_for(float(start.elapsed_time(end)) / calls)
            if better <= 1.5 * calls:
                break
            calls = better
            work = self._capture_work(fns, calls)
        flushes = None
        if self._flush_buf is not None:
            flushes = self._flush_graphs.get(calls)
            if flushes is None:
                n = calls

                def flush_body() -> None:
                    for _ in range(n):
                        self._flush()

                flushes = self._flush_graphs[calls] = self._capture(flush_body)
        if self.reuse_graphs:
            if len(self._graph_cache) >= _GRAPH_CACHE_SIZE:
                self._graph_cache.pop(next(iter(self._graph_cache)))
            self._graph_cache[ident] = (list(fns), work, flushes, calls)
        return work, flushes, calls

    def _calls_for(self, est_ms: float) -> int:
        """Launches in one work graph, from the GPU ms of one run (flush included when flushing): at least
        ``graph_ms`` of GPU work, and at least the launches a short kernel needs (kernel time only)."""
        calls = max(1, min(MAX_GRAPH_CALLS, int(self.graph_ms / max(est_ms, 1e-6))))
        if self.batch_short:
            calls = max(calls, launches_per_sample(est_ms - (self._flush_ms or 0.0), short_ms=self.short_ms))
        if self._flush_buf is not None:
            # Flushing, a launch costs its flush too, and the graph of the flushes alone is replayed as well:
            # bound the work graph by GPU time, not launches. Its fixed replay cost cancels against the
            # flush graph's, so more launches buy nothing; and the kernel's own estimate, the difference
            # of two numbers ~10x larger, may be ~0 (1000 launches of flush+fn, 60 ms a sample).
            calls = min(calls, max(1, int(MAX_FLUSH_GRAPH_MS / max(est_ms, 1e-6))))
        return calls

    def _capture_work(self, fns: Sequence[Callable[[], object]], calls: int) -> Any:
        def work_body() -> None:
            for i in range(calls):
                self._flush()
                fns[i % len(fns)]()

        return self._capture(work_body)

    def _sample_graph(
        self, fns: Sequence[Callable[[], object]], est_ms: float, budget_s: float, rel_tol: float,
        min_samples: int, max_samples: int,
    ) -> tuple[list[float], int]:  # fmt: skip
        work, flushes, calls = self._graphs(fns, est_ms)
        samples: list[float] = []
        deadline = time.perf_counter() + budget_s
        batch = max(1, min(min_samples, 100))
        while True:
            batch = max(1, min(batch, max_samples - len(samples)))
            ev = [(self._event(), self._event(), self._event(), self._event()) for _ in range(batch)]
            for s1, e1, s0, e0 in ev:
                s1.record()
                work.replay()
                e1.record()
                if flushes is not None:
                    s0.record()
                    flushes.replay()
                    e0.record()
            ev[-1][1 if flushes is None else 3].synchronize()
            for s1, e1, s0, e0 in ev:
                t = float(s1.elapsed_time(e1))
                if flushes is not None:
                    t -= float(s0.elapsed_time(e0))
                samples.append(t / calls)
            if _done(samples, rel_tol, min_samples, max_samples, self.confidence, deadline):
                return samples, calls
            batch = _next_batch(samples, rel_tol, self.confidence, batch)


def _done(
    samples: list[float],
    rel_tol: float,
    min_samples: int,
    max_samples: int,
    confidence: float,
    deadline: float,
) -> bool:
    if len(samples) >= max_samples or time.perf_counter() >= deadline:
        return True
    return len(samples) >= min_samples and relative_halfwidth(samples, confidence) <= rel_tol


def _next_batch(samples: list[float], rel_tol: float, confidence: float, batch: int) -> int:
    """The interval shrinks like 1/sqrt(n): aim straight for the n that should meet ``rel_tol``, at most doubling."""
    rel = relative_halfwidth(samples, confidence)
    n = len(samples)
    if not math.isfinite(rel):
        return min(2 * batch, 1000)
    needed = math.ceil(n * (rel / rel_tol) ** 2) - n
    return max(min(batch, 10), min(needed + 1, 2 * n, 5000))


#: Most launches one work graph holds (bounds capture time and memory).
MAX_GRAPH_CALLS = 1000

#: Most GPU ms of flush+launch pairs one work graph holds when flushing (plus as much again for the flushes
#: alone): ~65 launches of a 2.5 us kernel behind a 30 us flush.
MAX_FLUSH_GRAPH_MS = 2.0

#: Most work graphs one timer keeps (the oldest is dropped first).
_GRAPH_CACHE_SIZE = 512

_TIMERS: dict[tuple[int | None, bool, bool, bool], EventTimer] = {}


def shared_timer(*, device: int | None, flush_l2: bool, graph: bool = False, batch_short: bool = False) -> EventTimer:
    """The process's one timer of these settings, for callables timed once each (:func:`bench`, and each config in a
    library's own loop over ``_bench``): one L2 flush buffer (2x the L2: 120 MB on an H200) per device and setting,
    however many kernels time through it. It reuses no graphs: a callable may launch other work the next time."""
    key = (device, flush_l2, graph, batch_short)
    timer = _TIMERS.get(key)
    if timer is None:
        timer = _TIMERS[key] = EventTimer(device=device, flush_l2=flush_l2, graph=graph, batch_short=batch_short,
                                          reuse_graphs=False)  # fmt: skip
    return timer


def bench(
    fn: Runnable,
    *,
    budget_s: float = 1.0,
    rel_tol: float = 0.01,
    flush_l2: bool = True,
    graph: bool = False,
    warmup_s: float = 0.025,
    min_samples: int = 10,
    max_samples: int = 100_000,
    device: int | None = None,
    measure: MeasurePolicy | str | None = None,
) -> Measurement:
    """Time ``fn`` on the GPU, like ``triton.testing.do_bench`` but returning a :class:`Measurement`.

    >>> m = tritune.bench(lambda: kernel[grid](x, y, n, BLOCK=1024))   # doctest: +SKIP
    >>> m.median_ms, (m.ci_low_ms, m.ci_high_ms), m.stop                 # doctest: +SKIP

    Sampling stops when the median's 95% interval is within ``rel_tol`` or after ``budget_s`` seconds.
    ``fn`` may be a list of callables over different input copies (input rotation). Raises
    TimingUnavailableError, saying why, where there is no GPU.

    ``measure`` (``"cold"``, ``"warm"``, ``"graph"``) overrides ``flush_l2`` and ``graph`` with a
    measurement policy's settings and batches short kernels (:mod:`tritune.measure`).
    """
    batch = False
    if measure is not None:
        p = MeasurePolicy.parse(measure)
        flush_l2, graph, batch = p.flush_l2, p.graph, True
    timer = shared_timer(device=device, flush_l2=flush_l2, graph=graph, batch_short=batch)
    return timer.measure(
        fn,
        budget_s=budget_s,
        rel_tol=rel_tol,
        min_samples=min_samples,
        max_samples=max_samples,
        warmup_s=warmup_s,
    )

"""A FAKE, simulated CUDA device standing in for torch.cuda, to test the event timer's logic on CPU.

Work advances a simulated GPU clock (milliseconds, with seeded lognormal noise); events read that
clock; a CUDA graph records the work captured in it and replays it. It checks the timer's control flow
and arithmetic (warm-up, batches, stopping, graph-minus-flush), not real GPU behaviour.

A toy L2: a kernel run with ``warm_ms`` takes ``warm_ms`` when the previous op on the device was a
kernel (its data still cached) and ``ms`` after a flush (the buffer zeroing), so a test can tell
whether the timer kept the cache state of its measurement policy.

With ``launch_cpu_ms`` the host is modelled too, in real time (or on a virtual host clock with
``virtual_host``, which the code under test must read through :meth:`SimDevice.perf_counter`): each launch busy-waits that long on the
CPU, and no op starts on the GPU before the host enqueued it, so a short kernel launched in a loop is
launch-bound as on a real machine (the GPU clock then follows ``time.perf_counter``). ``replay_ms`` is a
fixed GPU cost of each graph replay, and ``spin=True`` offers ``torch.cuda._sleep`` (a GPU spin).
``slowdown`` scales every op (clocks not yet ramped up: the first timings of a process).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any


class SimDevice:
    def __init__(self, *, seed: int = 0, l2_bytes: int = 50 << 20, flush_ms_per_mb: float = 0.0003,
                 launch_cpu_ms: float = 0.0, replay_ms: float = 0.0, spin: bool = False,
                 virtual_host: bool = False) -> None:  # fmt: skip
        self.clock_ms = 0.0
        self.virtual_host = virtual_host
        self._vhost_ms = 0.0
        self.launch_cpu_ms = launch_cpu_ms
        self.replay_ms = replay_ms
        self.spin = spin
        self.cycles_per_ms = 1.98e6
        self.t0 = time.perf_counter()
        self.rng = random.Random(seed)
        self.l2_bytes = l2_bytes
        self.flush_ms_per_mb = flush_ms_per_mb
        self.capturing: list[tuple[float, float, float | None]] | None = None
        self.cached = False  # whether the last op was a kernel (toy L2 state)
        self.launches = 0
        self.graphs_captured = 0
        #: Every op takes this many times its time (a test sets 2.0 to model clocks not yet ramped up).
        self.slowdown = 1.0
        #: GPU ms of work executed (replays included), to check what a measurement cost the device.
        self.busy_ms = 0.0
        #: Extra GPU ms of each replay of a graph holding flushes alone: a test sets it to model the H200
        #: anomaly seen on an H200 (the flushes-alone graph slower than the flush+launch graph).
        self.flush_graph_extra_ms = 0.0
        #: Each replay of a graph of flushes alone also costs U(0, this) GPU ms more per flush it holds: a noisy
        #: flush graph whose difference from the work graph goes below zero on some samples only.
        self.flush_graph_jitter_ms = 0.0

    def host_ms(self) -> float:
        """The host's clock on the GPU's time axis (0 without a host model)."""
        if self.virtual_host:
            return self._vhost_ms
        return (time.perf_counter() - self.t0) * 1e3 if self.launch_cpu_ms else 0.0

    def perf_counter(self) -> float:
        """With ``virtual_host``: the host clock in seconds, for the code under test to read in place of
        ``time.perf_counter`` (a test patches it in). Host time advances only by launches (``launch_cpu_ms``),
        syncs, and 1 us a read (so a loop that polls a deadline ends): a busy machine cannot change a result."""
        self._vhost_ms += 0.001
        return self._vhost_ms / 1e3

    def _launch_cost(self, ms: float | None = None) -> None:
        cost = self.launch_cpu_ms if ms is None else ms
        if self.virtual_host:
            self._vhost_ms += cost
            return
        end = time.perf_counter() + cost / 1e3
        while time.perf_counter() < end:
            pass

    def _arrive(self) -> None:
        """An op enqueued now cannot start before now: an idle GPU waits for the host."""
        self.clock_ms = max(self.clock_ms, self.host_ms())

    def sync(self) -> None:
        """The host waits for the GPU (host time catches up with the GPU's clock)."""
        if self.virtual_host:
            self._vhost_ms = max(self._vhost_ms, self.clock_ms)
            return
        while self.launch_cpu_ms and self.host_ms() < self.clock_ms:
            pass

    def run(self, ms: float, noise: float = 0.0, warm_ms: float | None = None, cpu_ms: float | None = None) -> None:
        """One kernel of ``ms`` GPU milliseconds, ``warm_ms`` when L2 is warm (queued while capturing);
        ``cpu_ms`` overrides ``launch_cpu_ms`` for this launch."""
        if self.launch_cpu_ms:
            self._launch_cost(cpu_ms)
        if self.capturing is not None:
            self.capturing.append((ms, noise, warm_ms))
        else:
            self._exec(ms, noise, warm_ms)

    def flush(self, ms: float) -> None:
        """The L2 flush: ``ms`` of work, after which the next kernel runs cold."""
        if self.capturing is not None:
            self.capturing.append((ms, 0.01, -1.0))
        else:
            self._exec(ms, 0.01, -1.0)

    def _exec(self, ms: float, noise: float, warm_ms: float | None = None, queued: bool = False) -> None:
        if not queued:
            self._arrive()
        self.launches += 1
        is_flush = warm_ms is not None and warm_ms < 0
        base = warm_ms if (warm_ms is not None and warm_ms >= 0 and self.cached) else ms
        self.cached = not is_flush
        took = base * self.slowdown * (self.rng.lognormvariate(0.0, noise) if noise else 1.0)
        self.clock_ms += took
        self.busy_ms += took

    def torch(self) -> Any:
        dev = self

        class Tensor:
            def __init__(self, nbytes: int) -> None:
                self.nbytes = nbytes

            def zero_(self) -> None:
                dev.flush(self.nbytes / 2**20 * dev.flush_ms_per_mb)

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing
                self.t: float | None = None

            def record(self, stream: Any = None) -> None:  # one simulated stream: ``stream`` is not used
                assert dev.capturing is None, "events are not recorded inside a graph"
                dev._arrive()
                self.t = dev.clock_ms

            def synchronize(self) -> None:
                dev.sync()

            def query(self) -> bool:
                """Whether the device has passed this event (its GPU time is behind the host's clock)."""
                return self.t is not None and self.t <= dev.host_ms()

            def elapsed_time(self, end: Event) -> float:
                assert self.t is not None and end.t is not None
                return end.t - self.t

        class CUDAGraph:
            def __init__(self) -> None:
                self.ops: list[tuple[float, float, float | None]] = []

            def replay(self) -> None:
                dev._arrive()
                dev.clock_ms += dev.replay_ms
                if self.ops and all(w is not None and w < 0 for _, _, w in self.ops):
                    dev.clock_ms += dev.flush_graph_extra_ms  # a graph of flushes alone
                    dev.clock_ms += len(self.ops) * dev.rng.uniform(0.0, dev.flush_graph_jitter_ms)
                for op in self.ops:
                    dev._exec(*op, queued=True)

        @contextlib.contextmanager
        def graph(g: CUDAGraph) -> Iterator[None]:
            dev.capturing = g.ops
            dev.graphs_captured += 1
            try:
                yield
            finally:
                dev.capturing = None

        cuda = SimpleNamespace(
            current_device=lambda: 0,
            get_device_name=lambda i=0: "simulated GPU (fake)",
            get_device_properties=lambda i: SimpleNamespace(L2_cache_size=dev.l2_bytes),
            Event=Event,
            device=lambda i: contextlib.nullcontext(),
            synchronize=lambda i=None: dev.sync(),
            CUDAGraph=CUDAGraph,
            graph=graph,
            stream=lambda s: contextlib.nullcontext(),
            Stream=lambda: None,
            # the stream's queue is empty once the host's clock has caught up with the GPU's
            current_stream=lambda: SimpleNamespace(query=lambda: dev.clock_ms <= dev.host_ms()),
        )
        if dev.spin:

            def _sleep(cycles: int) -> None:
                dev._arrive()
                dev.clock_ms += cycles / dev.cycles_per_ms

            cuda._sleep = _sleep
        return SimpleNamespace(
            cuda=cuda,
            int32="int32",
            __version__="simulated",
            empty=lambda n, dtype=None, device=None: Tensor(4 * n),
        )

"""The I/O of incremental tuning: a clock that times launches without blocking the caller (CUDA events),
the resolver thread that reads them, and the background compile service (the engine's workers)."""

from __future__ import annotations

import atexit
import collections
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from tritune.config import Config

if TYPE_CHECKING:
    from tritune.decorator.autotuned import Autotuned

Deliver = Callable[[Config, "str | None"], None]


class CallClock(Protocol):
    """Times launches without blocking: ``start(cfg)`` before a launch of ``cfg``, ``stop(token)`` after;
    ``elapsed_ms(handle)`` (called by the resolver thread) may block until the device reached the stop mark.
    ``start(None)`` opens a span of other device work (a check's copies and comparison)."""

    def start(self, cfg: Config | None) -> Any: ...
    def stop(self, token: Any) -> Any: ...
    def elapsed_ms(self, handle: Any) -> float: ...
    def capturing(self) -> bool: ...


class CompileService(Protocol):
    """Compiles and loads ``configs`` off the caller's thread, calling ``deliver(cfg, None | why_not)`` for each."""

    def start(self, tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver) -> None: ...  # fmt: skip


#: Seconds the interpreter's exit waits, in all, for the background threads below to stop.
EXIT_WAIT_S = 5.0

#: Set once the interpreter exits (:func:`_stop_all`): background threads stop at their next step.
EXITING = threading.Event()

_STOPPERS: list[weakref.WeakMethod[Callable[[float], None]]] = []
_STOPPERS_LOCK = threading.Lock()


def stop_at_exit(stop: Callable[[float], None]) -> None:
    """Call the bound method ``stop(timeout_s)`` when the interpreter exits, before it finalizes (held weakly).

    The incremental mode's threads are daemons that wait inside CUDA calls (an event's ``synchronize``
    releases the interpreter's lock in PyTorch's C++). A daemon thread that returns from such a call after the
    interpreter began to finalize is ended by ``pthread_exit``, whose unwinding through C++ frames aborts the
    process: "terminate called without an active exception", exit status 134, after the server's last line
    (seen in the serving benchmark on an H200). ``atexit`` callbacks run while daemon threads
    still run, so each thread is told to stop there and joined (:data:`EXIT_WAIT_S` in all)."""
    with _STOPPERS_LOCK:
        if not _STOPPERS:
            atexit.register(_stop_all)
        _STOPPERS.append(weakref.WeakMethod(stop))  # type: ignore[arg-type]


def _stop_all() -> None:
    EXITING.set()
    deadline = time.monotonic() + EXIT_WAIT_S
    with _STOPPERS_LOCK:
        stoppers = [ref() for ref in _STOPPERS]
        _STOPPERS.clear()
    for stop in stoppers:
        if stop is not None:
            try:
                stop(max(0.0, deadline - time.monotonic()))
            except Exception:  # exiting: a failed stop must not hide the others
                pass


#: GPU clock cycles per microsecond assumed for the idle spin (an H200's SM clock is ~1.98 GHz; a slower clock
#: only makes the spin longer, and the spin has its 1.5x margin anyway).
SPIN_CYCLES_PER_US = 1900.0

#: Longest idle spin, in microseconds.
MAX_SPIN_US = 100.0


#: ``cuEventQuery``'s and ``cuStreamQuery``'s status while the device has not reached the event (or finished the
#: stream's work) yet.
CUDA_ERROR_NOT_READY = 600


class DriverEvents(NamedTuple):
    """The CUDA driver's event and stream calls of a span, through ``ctypes.PyDLL`` (:func:`driver_event_calls`)."""

    record: Callable[[int, int], int]  # cuEventRecord(event, stream)
    query: Callable[[int], int]  # cuEventQuery(event)
    elapsed: Callable[..., int]  # cuEventElapsedTime(float*, start, end)
    stream_query: Callable[[int], int]  # cuStreamQuery(stream)
    wait_value: Callable[[int, int, int, int], int] | None = None  # cuStreamWaitValue32(stream, addr, value, flags)


def driver_event_calls() -> DriverEvents | None:
    """The driver's calls a span makes, called through ``ctypes.PyDLL``: calls that keep the interpreter's lock
    (ctypes' ``CDLL``, torch's ``Event.record``/``synchronize``/``elapsed_time`` and ``torch.cuda._sleep`` release
    it, and a release with another thread waiting hands the lock over: a thread wake-up each way). None where
    the driver library cannot be opened.

    Cheaper for the caller's thread too (H200, torch 2.11):
    ``torch.cuda.current_stream()`` 5.4 us against 0.14 us for the raw handle
    (``torch._C._cuda_getCurrentRawStream``), ``Event.record`` 2.9 us against 1.9 us, ``Stream.query`` 1.1 us
    against 0.76 us: a racing call's span makes one look-up, one query and two records."""
    import ctypes

    try:
        lib = ctypes.PyDLL("libcuda.so.1")
        record, query, stream_query = lib.cuEventRecord, lib.cuEventQuery, lib.cuStreamQuery
        # CUDA 12.8 added the _v2 entry point (cuda.h maps the name to it from 13.0); older drivers have one.
        elapsed = getattr(lib, "cuEventElapsedTime_v2", None) or lib.cuEventElapsedTime
    except (OSError, AttributeError):
        return None
    # cuStreamWaitValue32 (CUDA 11.7's _v2 entry point: stream memory operations on by default)
    wait = getattr(lib, "cuStreamWaitValue32_v2", None) or getattr(lib, "cuStreamWaitValue32", None)
    if wait is not None:
        wait.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint]
        wait.restype = ctypes.c_int
    record.argtypes, record.restype = [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int
    query.argtypes, query.restype = [ctypes.c_void_p], ctypes.c_int
    stream_query.argtypes, stream_query.restype = [ctypes.c_void_p], ctypes.c_int
    elapsed.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]
    elapsed.restype = ctypes.c_int
    return DriverEvents(record, query, elapsed, stream_query, wait)


def cuda_clock(spin_idle: bool = True, detect_late: bool = False, gate: bool = False) -> CudaClock:
    """The incremental mode's clock: :class:`CudaClock` (torch's calls make the spans), whose resolver resolves
    the pairs the device has passed with the driver's calls where they can be made (:meth:`CudaClock.ready_ms`),
    and which finds the caller's stream by its raw handle (``cache_stream``, :meth:`CudaClock._stream`): a span
    9.5 us cheaper (16.1 against 25.5 us over an untimed launch, on an H200). Back to back, in a loop of spans with
    no work between them, the shorter span lets the previous span's spin run into the next start, which then finds
    the stream busy and queues no spin: 75% of such spans were late (median 11.0 us, host time inside) against 35%
    (median 3.3 us) without it. On the serving stream it is the better clock: on an H200 (the RMSNorm stream of
    60,000 calls, two processes, three repetitions each, every engine interleaved in chunks of 500 calls,
    ``benchmarks/serving.py --interleave 500 --variant cached:clock=cached``) it cut the incremental stream's total
    by 63-280 ms in all six repetitions (median 204 ms, 7-9% of the stream), its racing calls by 7-10%, and
    converged 92-100% of the hot buckets against the torch lookup's 83-96%. Late spans are samples all the same
    (``drop_late`` is off), and lateness depends on the work before a span, never on the config timed.

    Measured on an H200 (4,000 back-to-back spans x 7 rounds, the resolver thread running): torch's calls throughout
    cost 44.6 us of the caller's thread per span over an untimed launch; with the driver's resolution 34.5 us, the
    spans' statistics unchanged (median 3.42 against 3.36 us, the same late share). :class:`DriverClock` costs
    19-23 us, but is not the default: with its spin (``gate=False``) 76% of back-to-back spans were late (median
    15 us: host time inside) against torch's 39%, and its gate hangs the stream whenever anything inside a span
    synchronizes (see its docstring). An unwatched gate on the incremental mode's racing calls alone, through a
    direct launcher, hangs too: on an H200 the second call of a key's first launches never returned and its serving
    stream timed out.

    ``gate`` (``IncrementalOptions.gate``): :class:`DriverClock` with its gate, watched
    (:class:`GateWatch`: a gate the host does not open within :data:`GATE_TIMEOUT_US` is opened by the device),
    on the spans of configs timed before; the other spans spin. Where the driver has no ``cuStreamWaitValue32``
    or the watch cannot be loaded, the spin throughout."""
    drv = driver_event_calls()
    if gate and drv is not None and drv.wait_value is not None:
        return DriverClock(drv, spin_idle=spin_idle, detect_late=detect_late, gate=True)
    return CudaClock(spin_idle=spin_idle, detect_late=detect_late, driver=drv, cache_stream=True)


class CudaClock:
    """CUDA events recorded on the caller's current stream (pooled: an event is reused once resolved).

    ``spin_idle`` (``IncrementalOptions.spin_idle``, on by default): when the caller's stream has nothing queued
    (``Stream.query()``), the start event would be passed at once, and the span
    would time the rest of the launch's host work (10-20 us of Python and driver on the H200) before the
    kernel: a 3-20 us kernel's span is then mostly host time, which compresses the gaps between configs until
    they look tied (without the spin, RMSNorm buckets were promoted to configs 1.09-1.3x the best). With
    ``spin_idle``, such a start is queued behind a GPU spin of 1.5x the recent start-to-stop host time (at most
    :data:`MAX_SPIN_US`), so the kernel is already queued when the start event is passed. The spin runs on
    an otherwise idle device; it can delay the kernel by the margin (about half the launch's host time) and
    costs one more launch on the host. Not used while the device is busy (the start then waits its turn).
    A span is *late* (:meth:`late`) when its start event had already passed once the launch inside it returned
    (``Event.query()`` right after the launch, one driver call): the device then waited for the launch, and the
    span holds host time. That happens when the spin was shorter than this launch's host time (another thread
    held the interpreter's lock) or when a busy stream drained before the launch reached it; the event times
    say nothing about how much. Whether a span is late depends on the work before it, never on the kernel
    timed, so dropping late spans biases no config. Only with ``spin_idle`` (without it every idle span is late)
    and ``detect_late`` (the incremental mode sets it from ``IncrementalOptions.drop_late``).
    ``driver``: the driver's calls (:func:`driver_event_calls`) with which :meth:`ready_ms` resolves a pair
    without blocking; None: torch's calls only (:class:`DriverClock` makes the spans with them too).
    ``cache_stream``: see :meth:`_stream`.
    ``torch_module``, ``host`` and ``driver`` exist for tests (a FAKE device, clock and driver)."""

    def __init__(self, spin_idle: bool = True, torch_module: Any = None,
                 host: Callable[[], float] = time.perf_counter, detect_late: bool = False,
                 driver: DriverEvents | None = None, cache_stream: bool = True, gate: bool = False,
                 watch: Any = None) -> None:  # fmt: skip
        if torch_module is None:
            import torch as torch_module
        torch = torch_module
        c = getattr(torch, "_C", None)
        self._raw = getattr(c, "_cuda_getCurrentRawStream", None) if cache_stream else None
        self._dev = getattr(c, "_cuda_getDevice", None) if cache_stream else None
        self._streams: dict[tuple[int, int], Any] = {}
        self._drv = driver
        self._ready_ok = driver is not None  # False after a driver status other than ready / not ready
        if driver is not None:
            import ctypes

            self._ms = ctypes.c_float(0.0)
            self._ms_ref = ctypes.byref(self._ms)
        self.driver_fallbacks = 0  # pairs ready_ms left to torch's calls (a driver status other than ready/not ready)
        self._torch = torch
        self._free: list[Any] = []
        self._new = torch.cuda.Event
        self.spin_idle = spin_idle and hasattr(torch.cuda, "_sleep")
        self.detect_late = detect_late and self.spin_idle
        self._host = host
        self._t0 = 0.0
        self._launch_us = 20.0  # recent host time from start() to stop(), smoothed (a first guess until then)
        self._next_spin_us: float | None = None  # set by spin_next: the next start's spin, once
        self.spins = 0
        self.late_spans = 0  # spans found late (see the class docstring)
        self.gates = 0  # spans gated (DriverClock)
        self.released_early = 0  # gated spans whose gate was open before their stop (the watch's timeout)
        self.gate_off = ""  # why the gate was turned off for good ("" while it is on or was never on)
        self._seq = 0
        #: What releases a gate the host does not release in time (GateWatch; "auto": loaded at the first gate).
        #: No watch, no gate: a gate nothing else can open hangs the stream when a span's host work waits for
        #: the device.
        self._watch = watch
        self._gate_ok = bool(gate and driver is not None and driver.wait_value is not None and watch is not None)
        if self._gate_ok:
            import ctypes

            # Pinned (page-locked, mapped: the device reads it at the same address) and kept alive by the clock.
            self._flag_t = torch.zeros(1, dtype=torch.int32, pin_memory=True)
            self._flag_addr = int(self._flag_t.data_ptr())
            self._flag = ctypes.c_uint32.from_address(self._flag_addr)

    def _open_gate(self, raw: int) -> int:
        """Queue a wait for the next counter value on the raw stream ``raw`` and arm the watch for it; the value
        (never 0), or 0 (and no more gates) where there is no watch or the driver refuses the wait."""
        watch = self._watch
        if watch == "auto":
            watch = self._watch = GateWatch.load()
            if watch is None:
                self._off("the gate's watch could not be loaded (no CUDA driver, context or PTX JIT)")
                return 0
        seq = (self._seq + 1) & 0xFFFFFFFF or 1
        if self._drv.wait_value(raw, self._flag_addr, seq, CU_STREAM_WAIT_VALUE_GEQ) != 0:  # type: ignore[union-attr,misc]
            self._off("the driver refused cuStreamWaitValue32")
            return 0
        self._seq = seq
        self.gates += 1
        if not watch.arm(self._flag_addr, seq):
            self._release()  # no safety net for this span: open it at once, and gate no more
            self._off("the gate's watch could not be launched")
            return 0
        return seq

    def _off(self, why: str) -> None:
        self._gate_ok = False
        self.gate_off = why

    def _released_early(self, seq: int) -> bool:
        """Whether the gate of the span given ``seq`` was open before its stop (the watch's timeout, or a stop of
        a later span of another thread): its start may have passed before its launch was queued, so it may hold
        host time. Many of them (a quarter of at least 32 gated spans) turn the gate off for good: something
        inside the spans waits for the device (each then costs the watch's timeout)."""
        if (self._flag.value - seq) & 0xFFFFFFFF >= 0x80000000:  # the counter is still below seq: closed
            return False
        self.released_early += 1
        if self.released_early >= 8 and self.released_early * 4 >= self.gates >= 32:
            self._off(f"{self.released_early} of {self.gates} gated spans were released by the watch")
        return True

    def _release(self) -> None:
        """Release every gated span started so far (the counter goes to the latest value given out)."""
        self._flag.value = self._seq

    def _stream(self) -> Any:
        """The caller's current stream: torch's ``Stream`` object kept per (device, raw handle), found by the raw
        handle (``torch._C._cuda_getCurrentRawStream``, 0.14 us on the H200) instead of made anew by
        ``torch.cuda.current_stream()`` (5.4 us: a lazy-init check, a device index, a new ``Stream``): the same
        stream, so the same spans. Without those calls (a FAKE torch) or with ``cache_stream=False``: torch's."""
        raw, dev = self._raw, self._dev
        if raw is None or dev is None:
            return self._torch.cuda.current_stream()
        d = dev()
        k = (d, raw(d))
        stream = self._streams.get(k)
        if stream is None:
            stream = self._streams[k] = self._torch.cuda.current_stream()
        return stream

    def start(self, cfg: Config | None) -> Any:
        # The caller's stream, looked up once per span: Event.record() without a stream looks it up itself,
        # and a span made three such look-ups (the idle query and two records).
        stream = self._stream()
        if self.spin_idle:
            self._spin(stream.query())  # idle: nothing queued on the caller's stream
        # A pooled event: list.pop and list.extend are atomic under the interpreter's lock, so no lock of our own
        # on the caller's path (two per racing call), and no method call either (inlined here and in stop).
        try:
            e = self._free.pop()
        except IndexError:
            e = self._new(enable_timing=True)
        e.record(stream)
        return (e, stream, None)  # (None: not gated)

    def _spin(self, idle: bool) -> None:
        """Before a span's start event: on an ``idle`` stream, the spin (1.5x the recent launches' host time, or
        what :meth:`spin_next` set, at most :data:`MAX_SPIN_US`); then the host's mark for :meth:`_learn`."""
        nxt = self._next_spin_us
        if nxt is not None:
            self._next_spin_us = None
        if idle:
            us = min(1.5 * self._launch_us if nxt is None else nxt, MAX_SPIN_US)
            self._torch.cuda._sleep(max(1, int(us * SPIN_CYCLES_PER_US)))
            self.spins += 1
        self._t0 = self._host()  # shared by threads: only an estimate of the launch's host time

    def _learn(self) -> None:
        """After a spun span's stop event: its host time since :meth:`_spin`'s mark, into the smoothed estimate."""
        us = (self._host() - self._t0) * 1e6
        self._launch_us = 0.8 * self._launch_us + 0.2 * min(max(us, 1.0), MAX_SPIN_US)

    def abandon(self, token: Any) -> None:
        """Release the span of ``token`` (from :meth:`start`) without stopping it: its work
        raised. Nothing to undo for a span that is not gated."""
        if token[2] is not None:
            self._release()

    def spin_next(self, us: float) -> None:
        """The next :meth:`start` that finds the stream idle spins ``us`` (at most :data:`MAX_SPIN_US`), not 1.5x
        the recent launches' host time: for a span whose work costs the host more than a launch (a check's
        scratch copies are torch calls: on the H200 their span charged 0.05 ms median, ten times the 5 us
        scratch run, the device idle while the host queued them)."""
        self._next_spin_us = us

    def stop(self, token: Any) -> Any:
        a, stream, gated = token
        late = False
        if self.detect_late:  # (CudaClock's spans are never gated)
            late = bool(a.query())  # first: the launch has just returned (see the class docstring)
            if late:
                self.late_spans += 1
        try:  # a pooled event (see start)
            e = self._free.pop()
        except IndexError:
            e = self._new(enable_timing=True)
        e.record(stream)
        if gated is not None:
            self._release()
        elif self.spin_idle:
            self._learn()
        return (a, e, late)

    @staticmethod
    def late(handle: Any) -> bool:
        """Whether the span of ``handle`` (from :meth:`stop`) holds host time: its start passed before the launch
        returned (see the class docstring). A late span is no sample of the config it timed."""
        return bool(handle[2])

    def elapsed_ms(self, handle: Any) -> float:
        a, b, _ = handle
        b.synchronize()
        ms = float(a.elapsed_time(b))
        self._free.extend((a, b))
        return ms

    def ready_ms(self, handle: Any) -> float | None:
        """The span's milliseconds if the device has passed its stop event, else None, without releasing the
        interpreter's lock (:func:`driver_event_calls`); torch's :meth:`elapsed_ms` where there are no driver
        calls, and for a pair the driver answers otherwise (then the driver calls are not used again: torch's
        calls set the device the events belong to, and raise what is wrong). One resolver thread only (one
        result buffer)."""
        drv = self._drv
        if drv is None or not self._ready_ok:
            return self.elapsed_ms(handle)
        a, b, _ = handle
        status = drv.query(b.cuda_event)
        if status == 0:
            if drv.elapsed(self._ms_ref, a.cuda_event, b.cuda_event) == 0:
                self._free.extend((a, b))
                return float(self._ms.value)
        elif status == CUDA_ERROR_NOT_READY:
            return None
        self._ready_ok = False
        self.driver_fallbacks += 1
        return self.elapsed_ms(handle)

    def poll_ms(self, handle: Any) -> float | None:
        """:meth:`ready_ms` that never waits: None while the device has not passed the stop event, with the
        driver's calls or (without them) torch's ``Event.query``."""
        if self._drv is not None and self._ready_ok:
            return self.ready_ms(handle)
        if not handle[1].query():
            return None
        return self.elapsed_ms(handle)

    def capturing(self) -> bool:
        return bool(self._torch.cuda.is_current_stream_capturing())

    @staticmethod
    def prepare_thread() -> None:
        """Put the resolver's thread in *relaxed* stream-capture mode (the driver's per-thread
        ``cuThreadExchangeStreamCaptureMode``): waiting on an event is a "potentially unsafe" call that would
        otherwise invalidate a graph another thread is capturing in the default (global) mode."""
        import ctypes

        try:
            mode = ctypes.c_int(2)  # CU_STREAM_CAPTURE_MODE_RELAXED
            ctypes.CDLL("libcuda.so.1").cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
        except (OSError, AttributeError):  # no driver library by that name: capture in thread_local mode
            pass


#: The gate's watch (:class:`GateWatch`): one thread that waits, on a stream of its own, until the counter
#: reaches ``seq`` (the host released the gate) or ``ns`` nanoseconds of the GPU's global timer have passed,
#: and in that case writes ``seq`` itself. The counter is page-locked host memory, read and written through the
#: same address on the device (unified addressing); ``volatile`` makes every read go to it.
GATE_WATCH_PTX = """
.version 6.0
.target sm_70
.address_size 64

.visible .entry tritune_gate_watch(.param .u64 p_flag, .param .u32 p_seq, .param .u64 p_ns)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [p_flag];
    ld.param.u32 %r1, [p_seq];
    ld.param.u64 %rd2, [p_ns];
    mov.u64 %rd3, %globaltimer;
    add.s64 %rd4, %rd3, %rd2;
LOOP:
    ld.volatile.global.u32 %r2, [%rd1];
    sub.s32 %r3, %r2, %r1;
    setp.ge.s32 %p1, %r3, 0;
    @%p1 bra DONE;
    mov.u64 %rd5, %globaltimer;
    setp.lt.u64 %p2, %rd5, %rd4;
    @%p2 bra LOOP;
    st.volatile.global.u32 [%rd1], %r1;
DONE:
    ret;
}
"""

#: How long a gate may stay closed before its watch opens it, in microseconds: ``IncrementalOptions.stall_ms``'s
#: default (a span whose launch took the caller longer is no sample anyway).
GATE_TIMEOUT_US = 500.0


class GateWatch:
    """The safety net of :class:`DriverClock`'s gate: for every gated span, one thread of a tiny kernel
    (:data:`GATE_WATCH_PTX`) on a non-blocking stream of its own waits until the host released the gate or
    ``timeout_us`` passed, and then releases it itself. Without it, anything inside a span that waits for the
    device (a first launch that loads a module, an allocation that frees cached memory, a synchronize) waits
    for a device that waits for the gate: the stream hangs (as it did on an H200). With it, such a span
    costs at most the timeout, and :meth:`CudaClock._released_early` finds it (no sample).

    The kernel exits within a read of the counter (~1-2 us over the bus) of the host's release, so it holds one
    warp on one SM for about the launch's host time; it runs beside the span's kernel only in that window.
    Arming it is one ``cuLaunchKernel`` through ``ctypes.PyDLL`` with prebuilt arguments."""

    def __init__(self, lib: Any, fn: int, stream: int, timeout_us: float) -> None:
        import ctypes

        self._launch = lib.cuLaunchKernel
        self._fn, self._stream = ctypes.c_void_p(fn), ctypes.c_void_p(stream)
        self._addr, self._seq, self._ns = ctypes.c_uint64(0), ctypes.c_uint32(0), ctypes.c_uint64(int(timeout_us * 1e3))
        self._params = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in (self._addr, self._seq, self._ns)))
        self.timeout_us = timeout_us
        self.armed = 0

    @classmethod
    def load(cls, timeout_us: float = GATE_TIMEOUT_US) -> GateWatch | None:
        """The watch for the calling thread's current CUDA context (its kernel loaded from PTX, its stream made),
        or None where the driver library, a current context or the PTX compiler is missing."""
        import ctypes

        try:
            lib = ctypes.PyDLL("libcuda.so.1")
        except OSError:
            return None
        vp = ctypes.c_void_p
        ctx, mod, fn, stream = vp(), vp(), vp(), vp()
        try:
            if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
                return None
            if lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(GATE_WATCH_PTX.encode() + b"\0")) != 0:
                return None
            if lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"tritune_gate_watch") != 0:
                return None
            if lib.cuStreamCreate(ctypes.byref(stream), ctypes.c_uint(1)) != 0:  # CU_STREAM_NON_BLOCKING
                return None
        except AttributeError:
            return None
        launch = lib.cuLaunchKernel
        u = ctypes.c_uint
        launch.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), vp]
        launch.restype = ctypes.c_int
        return cls(lib, int(fn.value or 0), int(stream.value or 0), timeout_us)

    def arm(self, addr: int, seq: int) -> bool:
        """Watch the gate ``seq`` of the counter at ``addr``; False where the launch failed."""
        self._addr.value, self._seq.value = addr, seq
        ok = self._launch(self._fn, 1, 1, 1, 1, 1, 1, 0, self._stream, self._params, None) == 0
        self.armed += ok
        return ok


#: ``cuStreamWaitValue32``'s flag: wait until ``(int32)(*addr - value) >= 0`` (a comparison that survives the
#: counter's wrap-around).
CU_STREAM_WAIT_VALUE_GEQ = 0


class DriverClock(CudaClock):
    """:class:`CudaClock` whose spans are made with the driver's calls (:func:`driver_event_calls`) on the raw
    handle of the caller's current stream: the same events (torch's, pooled; a new one is recorded once by torch,
    which creates it), the same statistics; fewer microseconds of the caller's thread per span (on an H200: 44 us
    over an untimed launch with torch's calls, 22 us with these), and no release of the interpreter's lock inside a
    span but the launch's. A record the driver refuses is made by torch instead (which raises what is wrong).

    ``gate`` (on by default, where the driver has ``cuStreamWaitValue32`` and the watch loads): instead of the
    idle spin, each span of a config timed before queues a wait on a pinned host counter before its start event
    and releases it (writes the counter) once its stop event is queued, so the device runs start, launch and stop back to back: no host time inside a span
    whether the stream was idle or busy, and no spin of guessed length. The spin (``CudaClock``'s) sized itself
    from the recent launches' host time and was applied only to an idle stream: in a loop of launches back to
    back the previous span's spin was still running at the next start, the stream looked busy, no spin was
    queued, and 39% (torch's calls) to 79% (these calls, whose spans are shorter) of the spans were late, holding
    host time. A stop releases every span started before it (the counter goes to the latest
    number given out), so a span of another thread never waits for more than its own stop, and
    :meth:`abandon` releases a span whose launch raised.

    Gated spans were never late (0 of 28,000 back to back; median 3.0 us, p90 3.5 us, against torch's clock's 3.4 /
    18.7 us), but anything that synchronizes inside a gated span (an allocation that frees cached memory, a module
    load, a comparison that reads a result) waits for the device, which waits for the gate: with an unwatched gate,
    the incremental mode's serving stream and its GPU tests hung on an H200. So every gate is watched
    (:class:`GateWatch`: the device opens a gate the host has not opened within :data:`GATE_TIMEOUT_US`; such a span
    is late), only spans of a config timed before are gated (a first span may hold a first launch that loads the
    module), and a quarter of spans opened by the watch turns the gate off. On an H200's serving stream
    (``IncrementalOptions(gate=True)``) it never hung and paid nothing beyond the runs' spread (RMSNorm +108 ms
    median, GEMM -21 ms against the default): not the default; back to back it was late in 3 of 9,999 spans against
    the default clock's 3,792 of 10,000."""

    def __init__(self, driver: DriverEvents, spin_idle: bool = True, torch_module: Any = None,
                 host: Callable[[], float] = time.perf_counter, detect_late: bool = False,
                 gate: bool = True, watch: Any = "auto") -> None:  # fmt: skip
        super().__init__(spin_idle=spin_idle, torch_module=torch_module, host=host, detect_late=detect_late,
                         driver=driver, gate=gate, watch=watch)  # fmt: skip
        c = self._torch._C
        self._raw_stream, self._device = c._cuda_getCurrentRawStream, c._cuda_getDevice
        self.refused = 0  # records the driver refused (made by torch instead)
        #: Configs (by identity) whose spans started before: only those are gated. A span without a config (a
        #: check's copies and comparison: torch's work) or a config's first (its binary's first launch, which
        #: may load the module and wait for the device) spins instead.
        self._seen: set[int] = set()

    def _record(self, e: Any, raw: int) -> None:
        if self._drv.record(e.cuda_event, raw) != 0:  # type: ignore[union-attr]
            self.refused += 1
            e.record(self._torch.cuda.current_stream())

    def _event(self) -> Any:
        try:  # a pooled event (see CudaClock.start)
            return self._free.pop()
        except IndexError:
            e = self._new(enable_timing=True)
            e.record()  # torch creates the driver's event at its first record
            return e

    def start(self, cfg: Config | None) -> Any:
        drv = self._drv
        assert drv is not None
        raw = self._raw_stream(self._device())
        if self._gate_ok and cfg is not None:
            seen, seq = self._seen, 0
            if id(cfg) in seen:
                seq = self._open_gate(raw)
            else:  # its first span: spun (see _seen)
                seen.add(id(cfg))
            if seq:  # else its first span, no watch, or the driver refused the wait: spin from now on
                e = self._event()
                self._record(e, raw)
                return (e, raw, seq)
        if self.spin_idle:
            self._spin(drv.stream_query(raw) == 0)
        e = self._event()
        self._record(e, raw)
        return (e, raw, None)

    def stop(self, token: Any) -> Any:
        a, raw, gated = token
        late = False
        if gated is not None:
            late = self._released_early(gated)  # before this stop's own release
        elif self.detect_late:
            late = self._drv.query(a.cuda_event) == 0  # type: ignore[union-attr]
        if late:
            self.late_spans += 1
        e = self._event()
        self._record(e, raw)
        if gated is not None:
            self._release()  # every span started so far (see the class docstring)
        elif self.spin_idle:
            self._learn()
        return (a, e, late)


class Resolver:
    """Resolves timing handles in order and runs their callbacks: on a daemon thread (``thread=True``),
    or when :meth:`poll` is called (tests with a fake clock). A callback's exception is kept in ``errors``."""

    def __init__(self, clock: CallClock, *, thread: bool = True, batch_s: float = 0.001,
                 quiet: Callable[[], None] | None = None, after: Callable[[], None] | None = None,
                 inline: bool = False, linger_s: float = 0.005) -> None:  # fmt: skip
        self.clock = clock
        #: ``inline``: handles wait in :attr:`pending`, and the callers resolve what the device has passed
        #: (:meth:`drain_ready`, never waiting for it); the thread takes over only what they leave for
        #: ``linger_s`` (a key whose calls stopped), waking on a timer, not on each handle. See
        #: ``IncrementalOptions.resolve``.
        self.inline = inline
        self.linger_s = linger_s
        self.idle_s = max(linger_s, 0.05)
        self.pending: collections.deque[tuple[Any, Callable[[float], None]]] = collections.deque()
        self._drain_lock = threading.Lock()
        self._closing = threading.Event()
        self.drains = 0  # drain_ready calls that resolved something (the thread stays out while they do)
        self.inline_resolved = 0  # handles resolved by callers (drain_ready)
        poll_ms = getattr(clock, "poll_ms", None)
        #: A handle's milliseconds, or None while the device has not passed it (never waits).
        self._poll_ms: Callable[[Any], float | None] = poll_ms if poll_ms is not None else clock.elapsed_ms
        #: Called before each callback (the incremental mode waits there for the caller's open spans).
        self.quiet = quiet
        #: Called after each batch (and at the end of :meth:`poll`): the incremental mode decides there, once
        #: per key with a round's worth of new samples, not once per round (see ``Incremental._decide_due``).
        self.after = after
        #: The thread resolves what queued up, then sleeps this long: it takes the interpreter's lock about
        #: 1,000 times a second, not once per call (waking per event pair cost the caller's thread ~40 us of
        #: every racing call on the H200, the two threads handing the lock back and forth).
        self.batch_s = batch_s
        self.errors: list[BaseException] = []
        #: Seconds spent in callbacks (the state machine's work off the caller's path) and handles resolved.
        self.busy_s = 0.0
        self.resolved = 0
        self.wakes = 0  # batches the thread resolved (it sleeps batch_s after each)
        self._q: queue.SimpleQueue[tuple[Any, Callable[[float], None]]] = queue.SimpleQueue()
        self._thread = (
            threading.Thread(target=self._linger_loop if inline else self._loop, name="tritune-resolver",
                             daemon=True) if thread else None
        )  # fmt: skip
        if self._thread is not None:
            self._thread.start()
            stop_at_exit(self.close)

    def close(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """Stop the thread after what is queued now (resolved, callbacks run) and wait up to ``timeout_s``."""
        if self._thread is not None and self._thread.is_alive():
            self._closing.set()
            self._q.put(None)  # type: ignore[arg-type]
            self._thread.join(timeout_s)

    def submit(self, handle: Any, then: Callable[[float], None]) -> None:
        if self.inline:
            self.pending.append((handle, then))  # (deque.append is atomic: no lock on the caller's path)
        else:
            self._q.put((handle, then))

    def backlog(self) -> int:
        """Handles submitted and not resolved yet (approximate while the thread runs)."""
        return self._q.qsize() + len(self.pending)

    def drain_ready(self) -> int:
        """Inline mode, on a caller's thread: resolve, in order, the pending handles the device has passed, and
        run their callbacks and then ``after``; stop at the first it has not passed (never waits for the device,
        and does nothing while another thread drains). The number resolved."""
        pend = self.pending
        if not pend or not self._drain_lock.acquire(blocking=False):
            return 0
        try:
            n = self._drain_pending(False)
            if n:
                self.drains += 1
                self.inline_resolved += n
                self._after()  # (under the lock: one thread at a time decides)
        finally:
            self._drain_lock.release()
        return n

    def _drain_pending(self, block: bool) -> int:
        """Resolve :attr:`pending` in order (the caller holds ``_drain_lock``): what the device has passed, and,
        with ``block``, wait for the rest (the wait releases the interpreter's lock); the callbacks as
        :meth:`_drain` runs them."""
        pend, poll, elapsed, errors = self.pending, self._poll_ms, self.clock.elapsed_ms, self.errors
        n = 0
        while pend:
            handle, then = pend[0]
            try:
                ms = poll(handle)
                if ms is None:
                    if not block:
                        return n
                    ms = elapsed(handle)
            except BaseException as e:
                pend.popleft()
                errors.append(e)
                n += 1
                continue
            pend.popleft()
            self._call(then, ms)
            n += 1
        return n

    def _call(self, then: Callable[[float], None], ms: float) -> None:
        """One resolved pair's callback: ``quiet`` first, its cost in ``busy_s``; an exception kept in ``errors``."""
        try:
            quiet = self.quiet
            if quiet is not None:
                quiet()
            t0 = time.perf_counter()
            then(ms)
            self.busy_s += time.perf_counter() - t0
            self.resolved += 1
        except BaseException as e:
            self.errors.append(e)

    def _linger_loop(self) -> None:
        """The inline mode's thread: every ``linger_s`` while handles are pending (``idle_s`` while none are), if
        the callers resolved nothing since its last look, it resolves them all (waiting for the device where it
        must); at :meth:`close`, what is left. A handle the callers leave is resolved within about
        ``idle_s + linger_s``."""
        prepare = getattr(self.clock, "prepare_thread", None)
        if prepare is not None:
            prepare()
        seen = -1
        # Nothing pending: the next look in idle_s (one wake of this thread in 50 ms costs the callers nothing
        # measurable; every 5 ms would be 200 takes of the interpreter's lock a second in a server's idle life).
        while not self._closing.wait(self.linger_s if self.pending else self.idle_s):
            if not self.pending:
                continue
            if self.drains != seen:  # the callers drain: leave it to them
                seen = self.drains
                continue
            self._wait_drain()
        self._wait_drain()

    def _wait_drain(self) -> None:
        with self._drain_lock:
            self.wakes += 1
            if self._drain_pending(True):
                self._after()

    def _after(self) -> None:
        if self.after is None:
            return
        try:
            if self.quiet is not None:  # the decisions are Python too: not inside a caller's open span
                self.quiet()
            t0 = time.perf_counter()
            self.after()
            self.busy_s += time.perf_counter() - t0
        except BaseException as e:
            self.errors.append(e)

    def _loop(self) -> None:
        prepare = getattr(self.clock, "prepare_thread", None)
        if prepare is not None:
            prepare()
        while True:
            first = self._q.get()
            if first is None:  # close()
                return
            self.wakes += 1
            _, closed = self._drain(first)
            self._after()
            if closed:  # close(): what was queued before it is resolved
                return
            if self.batch_s > 0:
                time.sleep(self.batch_s)

    def _drain(self, first: tuple[Any, Callable[[float], None]] | None = None) -> tuple[int, bool]:
        """Resolve ``first`` (the handle the thread woke for), then what is queued now: the clock's time, then
        :meth:`_call` (an exception is kept in ``errors``). The number resolved, and whether :meth:`close`'s mark
        was reached (nothing after it is taken)."""
        get, elapsed, errors = self._q.get_nowait, self.clock.elapsed_ms, self.errors
        ready = getattr(self.clock, "ready_ms", None)
        n = 0
        item = first
        while True:
            if item is None:
                try:
                    item = get()
                except queue.Empty:
                    return n, False
                if item is None:
                    return n, True
            handle, then = item
            item = None
            try:
                # A pair the device has passed, resolved without letting go of the interpreter's lock; else
                # wait for it (the wait releases the lock).
                ms = ready(handle) if ready is not None else None
                if ms is None:
                    ms = elapsed(handle)
            except BaseException as e:
                errors.append(e)
                n += 1
                continue
            self._call(then, ms)
            n += 1

    def poll(self) -> int:
        """Resolve everything queued now (only without a thread); the number resolved."""
        n, _ = self._drain()
        with self._drain_lock:
            n += self._drain_pending(True)
            self._after()
        return n


class WorkerCompiles:
    """The engine's compile workers (:func:`tritune.engine.precompile.start_precompile`), driven by one
    background thread per kernel (keys queue up: a burst of new keys does not start a pool each), which then
    loads each compiled binary (:func:`tritune.engine.pipeline.load_binary`). The one place this module calls
    the engine: re-point here when the engine's worker service lands."""

    def __init__(self) -> None:
        #: Keys waiting for their compiles: (calls of the key so far, the job). The thread takes the key with
        #: the most calls first, not the first key seen: a stream's keys all arrive in its first calls, and on
        #: the H200 the compiles of a hot key seen 13th (24 keys of 7 configs, one thread) were not done
        #: when the 1.3 s stream ended.
        self._jobs: list[tuple[Callable[[], int], Callable[[], None]]] = []
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        #: Called with (event, detail) around each step when set (the incremental mode's trace).
        self.note: Callable[[str, str], None] | None = None
        self._closed = False

    def start(self, tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver, calls: Callable[[], int] | None = None) -> None:  # fmt: skip
        """Queue a key's compiles; ``calls`` says how many calls the key has had (its place in the queue)."""
        device = _device_of(args)
        job = lambda: self._work(tuned, configs, args, kwargs, grid, deliver, device, self.note)  # noqa: E731
        with self._ready:
            self._jobs.append((calls or (lambda: 0), job))
            self._ready.notify()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"tritune-compile-{tuned.info.name}", daemon=True
            )
            self._thread.start()
            stop_at_exit(self.close)

    def close(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """Stop the thread (a key's job stops before its next load; queued keys are dropped) and wait up to
        ``timeout_s``: at the interpreter's exit (:func:`stop_at_exit`)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout_s)

    def next_job(self) -> Callable[[], None] | None:
        """The queued job of the key with the most calls (the earliest queued among equals); waits for one.
        None once :meth:`close` was called."""
        with self._ready:
            while not self._jobs and not self._closed:
                self._ready.wait()
            if self._closed:
                return None
            best = max(range(len(self._jobs)), key=lambda i: (self._jobs[i][0](), -i))
            return self._jobs.pop(best)[1]

    def _loop(self) -> None:
        # Relaxed capture mode on this thread too: its module loads are "potentially unsafe" calls that would
        # otherwise invalidate a graph the caller captures meanwhile in the default (global) mode (the H200's
        # capture test failed so once, from an empty Triton cache, its key's compiles still loading).
        CudaClock.prepare_thread()
        while (job := self.next_job()) is not None:
            job()

    @staticmethod
    def _work(tuned: Autotuned, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Deliver, device: Any, note: Callable[[str, str], None] | None = None) -> None:  # fmt: skip
        from tritune.device import current_target
        from tritune.engine.pipeline import load_binary
        from tritune.engine.precompile import start_precompile

        delivered: set[Config] = set()
        say = note or (lambda event, detail: None)

        def load(cfg: Config) -> None:
            if EXITING.is_set():  # the interpreter exits: no more device work from this thread
                raise SystemExit
            say("load", cfg.id)
            facts = load_binary(tuned.launcher(), tuned.info.name, cfg, args, kwargs, grid)
            say("loaded", cfg.id)
            deliver(cfg, None if isinstance(facts, dict) else facts.reason)
            delivered.add(cfg)

        try:
            if device is not None:
                import torch

                torch.cuda.set_device(device)
            comp = None
            if not tuned.compiles_in_process(configs):
                say("precompile", f"{tuned.info.name}: {len(configs)} configs")
                comp = start_precompile(tuned.launcher(), configs, args, kwargs, current_target(),
                                        tuned.tuner.options.jobs, tuned.tuner.options.compile_timeout)  # fmt: skip
                say("precompiling", f"{len(comp.pending)} not in Triton's cache, {comp.workers} workers")
                while comp.pending:  # each binary is loaded and offered as soon as its compile is done
                    for cfg in comp.wait(max_pending=len(comp.pending) - 1):
                        load(cfg)
            for cfg in configs:
                if cfg in delivered:
                    continue
                why = comp.failed.get(cfg) if comp is not None else None
                if why is None:
                    load(cfg)
                else:
                    deliver(cfg, why)
        except SystemExit:
            return
        except BaseException as e:  # a broken compile service must not take the server down
            for cfg in configs:
                deliver(cfg, f"background compile failed: {type(e).__name__}: {e}")


def _device_of(args: Sequence[Any]) -> Any:
    for a in args:
        dev = getattr(a, "device", None)
        if getattr(dev, "type", None) == "cuda":
            return dev
    return None

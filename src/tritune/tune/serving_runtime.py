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
    from tritune.tune.autotune import Autotuned

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
    (the H200's serving benchmark, in sessions 8 and 9). ``atexit`` callbacks run while daemon threads
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

    Cheaper for the caller's thread too (H200, torch 2.11, ``benchmarks/host_costs.py``):
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


def cuda_clock(spin_idle: bool = True, detect_late: bool = False) -> CudaClock:
    """The incremental mode's clock: :class:`CudaClock` (torch's calls make the spans), whose resolver resolves
    the pairs the device has passed with the driver's calls where they can be made (:meth:`CudaClock.ready_ms`).
    Not ``cache_stream``: a span 9.5 us cheaper (16.1 against 25.5 us over an untimed launch, H200 session 12,
    call 6), but back to back the shorter span let the previous span's spin run into the next start, which then
    found the stream busy and queued no spin: 75% of its spans were late (median 11.0 us, host time inside)
    against 35% (median 3.3 us) without it.

    Measured on the H200 (``benchmarks/clock_cost.py``, session 12, 4,000 back-to-back spans x 7 rounds, the
    resolver thread running): torch's calls throughout cost 44.6 us of the caller's thread per span over an
    untimed launch; with the driver's resolution 34.5 us, the spans' statistics unchanged (median 3.42 against
    3.36 us, the same late share). :class:`DriverClock` costs 19-23 us, but is not the default: with its spin
    (``gate=False``) 76% of back-to-back spans were late (median 15 us: host time inside) against torch's 39%,
    and its gate hangs the stream whenever anything inside a span synchronizes (see its docstring). Gating only
    the incremental mode's racing calls through a direct launcher (session 12's ``IncrementalOptions.gate``,
    off) hung too: on the H200 (session 13) the second call of a key's first launches never returned and its
    serving stream timed out; the option was removed."""
    return CudaClock(spin_idle=spin_idle, detect_late=detect_late, driver=driver_event_calls(), cache_stream=False)


class CudaClock:
    """CUDA events recorded on the caller's current stream (pooled: an event is reused once resolved).

    ``spin_idle`` (``IncrementalOptions.spin_idle``, on by default): when the caller's stream has nothing queued
    (``Stream.query()``), the start event would be passed at once, and the span
    would time the rest of the launch's host work (10-20 us of Python and driver on the H200) before the
    kernel: a 3-20 us kernel's span is then mostly host time, which compresses the gaps between configs until
    they look tied (session 6: RMSNorm buckets promoted to configs 1.09-1.3x the best). With ``spin_idle``,
    such a start is queued behind a GPU spin of 1.5x the recent start-to-stop host time (at most
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
                 driver: DriverEvents | None = None, cache_stream: bool = True, gate: bool = False) -> None:  # fmt: skip
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
        self._seq = 0
        self._gate_ok = bool(gate and driver is not None and driver.wait_value is not None)
        if self._gate_ok:
            import ctypes

            # Pinned (page-locked, mapped: the device reads it at the same address) and kept alive by the clock.
            self._flag_t = torch.zeros(1, dtype=torch.int32, pin_memory=True)
            self._flag_addr = int(self._flag_t.data_ptr())
            self._flag = ctypes.c_uint32.from_address(self._flag_addr)

    def _open_gate(self, raw: int) -> bool:
        """Queue a wait for the next counter value on the raw stream ``raw``; False (and no more gates) where the
        driver refuses it."""
        seq = (self._seq + 1) & 0xFFFFFFFF
        self._seq = seq
        if self._drv.wait_value(raw, self._flag_addr, seq, CU_STREAM_WAIT_VALUE_GEQ) == 0:  # type: ignore[union-attr,misc]
            self.gates += 1
            return True
        self._gate_ok = False
        return False

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
        return (e, stream, False)

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
        if token[2]:
            self._release()

    def spin_next(self, us: float) -> None:
        """The next :meth:`start` that finds the stream idle spins ``us`` (at most :data:`MAX_SPIN_US`), not 1.5x
        the recent launches' host time: for a span whose work costs the host more than a launch (a check's
        scratch copies are torch calls: on the H200 their span charged 0.05 ms median, ten times the 5 us
        scratch run, the device idle while the host queued them, session 11)."""
        self._next_spin_us = us

    def stop(self, token: Any) -> Any:
        a, stream, gated = token
        late = False
        if self.detect_late and not gated:
            late = bool(a.query())  # first: the launch has just returned (see the class docstring)
            if late:
                self.late_spans += 1
        try:  # a pooled event (see start)
            e = self._free.pop()
        except IndexError:
            e = self._new(enable_timing=True)
        e.record(stream)
        if gated:
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


#: ``cuStreamWaitValue32``'s flag: wait until ``(int32)(*addr - value) >= 0`` (a comparison that survives the
#: counter's wrap-around).
CU_STREAM_WAIT_VALUE_GEQ = 0


class DriverClock(CudaClock):
    """:class:`CudaClock` whose spans are made with the driver's calls (:func:`driver_event_calls`) on the raw
    handle of the caller's current stream: the same events (torch's, pooled; a new one is recorded once by
    torch, which creates it), the same statistics; fewer microseconds of the caller's thread per span (H200,
    ``benchmarks/clock_cost.py``: 44 us over an untimed launch with torch's calls, 22 us with these), and no
    release of the interpreter's lock inside a span but the launch's. A record the driver refuses is made by
    torch instead (which raises what is wrong).

    ``gate`` (on by default, where the driver has ``cuStreamWaitValue32``): instead of the idle spin, each span
    queues a wait on a pinned host counter before its start event and releases it (writes the counter) once its
    stop event is queued, so the device runs start, launch and stop back to back: no host time inside a span
    whether the stream was idle or busy, and no spin of guessed length. The spin (``CudaClock``'s) sized itself
    from the recent launches' host time and was applied only to an idle stream: in a loop of launches back to
    back the previous span's spin was still running at the next start, the stream looked busy, no spin was
    queued, and 39% (torch's calls) to 79% (these calls, whose spans are shorter) of the spans were late, holding
    host time (``clock_cost.py``). A stop releases every span started before it (the counter goes to the latest
    number given out), so a span of another thread never waits for more than its own stop, and
    :meth:`abandon` releases a span whose launch raised.

    NOT the incremental mode's clock (:func:`cuda_clock`), measured only: gated spans were never late (0 of
    28,000 back to back; median 3.0 us, p90 3.5 us, against torch's clock's 3.4 / 18.7 us), but anything that
    synchronizes inside a gated span (an allocation that frees cached memory, a module load, a comparison that
    reads a result) waits for the device, which waits for the gate: on the H200 (session 12) the incremental
    mode's serving stream and its GPU tests hung. A release that needs no interpreter (the caller may hold its
    lock while it waits) would make it safe; until then it serves ``clock_cost.py``."""

    def __init__(self, driver: DriverEvents, spin_idle: bool = True, torch_module: Any = None,
                 host: Callable[[], float] = time.perf_counter, detect_late: bool = False,
                 gate: bool = True) -> None:  # fmt: skip
        super().__init__(spin_idle=spin_idle, torch_module=torch_module, host=host, detect_late=detect_late,
                         driver=driver, gate=gate)  # fmt: skip
        c = self._torch._C
        self._raw_stream, self._device = c._cuda_getCurrentRawStream, c._cuda_getDevice
        self.refused = 0  # records the driver refused (made by torch instead)

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
        if self._gate_ok and self._open_gate(raw):  # else the driver refused the wait: spin from now on
            e = self._event()
            self._record(e, raw)
            return (e, raw, True)
        if self.spin_idle:
            self._spin(drv.stream_query(raw) == 0)
        e = self._event()
        self._record(e, raw)
        return (e, raw, False)

    def stop(self, token: Any) -> Any:
        a, raw, gated = token
        late = False
        if self.detect_late and not gated:
            late = self._drv.query(a.cuda_event) == 0  # type: ignore[union-attr]
            if late:
                self.late_spans += 1
        e = self._event()
        self._record(e, raw)
        if gated:
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
            facts = load_binary(tuned._launcher(), tuned.info.name, cfg, args, kwargs, grid)
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
                comp = start_precompile(tuned._launcher(), configs, args, kwargs, current_target(),
                                        tuned.tuner.jobs, tuned.tuner.compile_timeout)  # fmt: skip
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

"""CudaClock.ready_ms and the resolver with the driver's event calls (FAKE torch events and a FAKE driver: no GPU
here). The driver path must give the same milliseconds as torch's path, say "not yet" without blocking, hand
the pair to torch's blocking path then, and stop using the driver after any other status."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import torch

from tritune.serving.runtime import (
    CUDA_ERROR_NOT_READY,
    CudaClock,
    DriverClock,
    DriverEvents,
    GateWatch,
    Resolver,
    driver_event_calls,
)


class FakeEvent:  # FAKE CUDA event: a handle number, a device time once recorded and "passed"
    count = 0

    def __init__(self, enable_timing: bool = True) -> None:
        FakeEvent.count += 1
        self.cuda_event = FakeEvent.count
        self.t_ms = 0.0
        self.passed = True
        self.synced = 0

    def record(self, stream: Any = None) -> None:
        self.t_ms = FakeEvent.now

    def query(self) -> bool:
        return self.passed

    def synchronize(self) -> None:
        self.synced += 1
        self.passed = True

    def elapsed_time(self, end: FakeEvent) -> float:
        return end.t_ms - self.t_ms

    now = 0.0


class FakeDriver:  # FAKE driver calls with the ctypes signatures of driver_event_calls
    def __init__(self, events: dict[int, FakeEvent], status: int | None = None) -> None:
        self.events, self.status, self.calls = events, status, 0

    def query(self, handle: int) -> int:
        self.calls += 1
        if self.status is not None:
            return self.status
        return 0 if self.events[handle].passed else CUDA_ERROR_NOT_READY

    def elapsed(self, out: Any, a: int, b: int) -> int:
        ctypes.cast(out, ctypes.POINTER(ctypes.c_float)).contents.value = self.events[b].t_ms - self.events[a].t_ms
        return 0

    def record(self, handle: int, stream: int) -> int:
        self.recorded.append((handle, stream))
        if self.refuse:
            return 1
        self.events[handle].t_ms = FakeEvent.now
        return 0

    def stream_query(self, stream: int) -> int:
        self.stream_queries.append(stream)
        return 0 if self.idle else CUDA_ERROR_NOT_READY

    recorded: list[tuple[int, int]]
    stream_queries: list[int]
    refuse = False
    idle = True

    def calls_(self) -> DriverEvents:
        self.recorded, self.stream_queries = [], []
        return DriverEvents(self.record, self.query, self.elapsed, self.stream_query)


def _events() -> tuple[dict[int, FakeEvent], Any]:
    """FAKE events by handle, and the ``torch.cuda.Event`` stand-in that makes them."""
    events: dict[int, FakeEvent] = {}

    def new(enable_timing: bool = True) -> FakeEvent:
        e = FakeEvent(enable_timing)
        events[e.cuda_event] = e
        return e

    return events, new


def _clock(status: int | None = None) -> tuple[CudaClock, FakeDriver, dict[int, FakeEvent]]:
    events, new = _events()

    fake = _fake_torch(new)
    drv = FakeDriver(events, status)
    return CudaClock(spin_idle=False, torch_module=fake, driver=drv.calls_()), drv, events


def _fake_torch(new: Any, sleeps: list[int] | None = None) -> Any:  # FAKE torch: events, a stream, raw handles
    cuda = SimpleNamespace(Event=new, current_stream=lambda: SimpleNamespace(query=lambda: False),
                           _sleep=lambda cycles: sleeps.append(cycles) if sleeps is not None else None)  # fmt: skip
    c = SimpleNamespace(_cuda_getDevice=lambda: 3, _cuda_getCurrentRawStream=lambda dev: 7000 + dev)
    # zeros: a real (CPU, unpinned) tensor, so that the gate's counter has an address to write to
    return SimpleNamespace(cuda=cuda, _C=c, int32=torch.int32,
                           zeros=lambda *a, dtype=None, pin_memory=False: torch.zeros(*a, dtype=dtype))


def _span(clock: CudaClock, ms: float) -> Any:
    FakeEvent.now = 1.0
    t = clock.start(None)
    FakeEvent.now = 1.0 + ms
    return clock.stop(t)


def test_ready_pairs_resolve_through_the_driver_with_torchs_milliseconds() -> None:
    clock, drv, _ = _clock()
    h = _span(clock, 0.25)
    assert clock.ready_ms(h) == 0.25 and drv.calls == 1
    assert h[0].synced == 0 and h[1].synced == 0  # no blocking wait
    assert clock.driver_fallbacks == 0


def test_a_pair_not_reached_yet_is_none_and_the_resolver_waits_for_it_through_torch() -> None:
    clock, _drv, _ = _clock()
    h = _span(clock, 0.5)
    h[1].passed = False
    assert clock.ready_ms(h) is None and h[1].synced == 0
    got: list[float] = []
    r = Resolver(clock, thread=False)
    r.submit(h, got.append)
    r.submit(_span(clock, 0.125), got.append)
    assert r.poll() == 2 and got == [0.5, 0.125]
    assert h[1].synced == 1  # the unready pair waited in torch's synchronize; the ready one did not
    assert clock.driver_fallbacks == 0


def test_any_other_driver_status_falls_back_to_torch_and_stops_using_the_driver() -> None:
    clock, drv, _ = _clock(status=201)  # CUDA_ERROR_INVALID_CONTEXT
    h = _span(clock, 0.75)
    assert clock.ready_ms(h) == 0.75 and h[1].synced == 1
    assert clock.driver_fallbacks == 1
    calls = drv.calls
    assert clock.ready_ms(_span(clock, 0.5)) == 0.5 and drv.calls == calls  # the driver is not asked again


def test_driver_event_calls_is_none_or_two_calls_keeping_the_lock() -> None:
    got = driver_event_calls()  # this machine may have no CUDA driver: then None, never an exception
    if got is not None:
        assert all(isinstance(f, ctypes._CFuncPtr) for f in got)  # type: ignore[attr-defined]


def test_driver_clock_records_on_the_raw_stream_spins_when_idle_and_times_as_torch() -> None:
    events, new = _events()

    sleeps: list[int] = []
    drv = FakeDriver(events)
    clock = DriverClock(drv.calls_(), spin_idle=True, torch_module=_fake_torch(new, sleeps), detect_late=True)
    h = _span(clock, 0.25)
    assert drv.stream_queries == [7003]  # the raw handle of device 3's current stream
    assert [s for _, s in drv.recorded] == [7003, 7003] and len(sleeps) == 1 and clock.spins == 1
    assert clock.ready_ms(h) == 0.25 and clock.refused == 0
    drv.idle = False  # a busy stream: no spin
    clock.ready_ms(_span(clock, 0.5))
    assert len(sleeps) == 1 and len(events) == 2  # the pair was pooled and reused: no new events


def test_a_record_the_driver_refuses_is_made_by_torch() -> None:
    events, new = _events()

    drv = FakeDriver(events)
    clock = DriverClock(drv.calls_(), spin_idle=False, torch_module=_fake_torch(new))
    drv.refuse = True
    h = _span(clock, 0.125)
    assert clock.refused == 2
    assert clock.ready_ms(h) == 0.125  # torch's record set the FAKE events' times


class GatingDriver(FakeDriver):  # FAKE driver with cuStreamWaitValue32: remembers each wait
    def __init__(self, events: dict[int, FakeEvent], refuse_wait: bool = False) -> None:
        super().__init__(events)
        self.waits: list[tuple[int, int, int, int]] = []
        self.refuse_wait = refuse_wait

    def wait_value(self, stream: int, addr: int, value: int, flags: int) -> int:
        self.waits.append((stream, addr, value, flags))
        return 1 if self.refuse_wait else 0

    def calls_(self) -> DriverEvents:
        return super().calls_()._replace(wait_value=self.wait_value)


class FakeWatch:  # FAKE GateWatch: remembers what it was armed for; may refuse, or "time out" at once
    def __init__(self, refuse: bool = False, fire: bool = False) -> None:
        self.armed: list[tuple[int, int]] = []
        self.refuse, self.fire = refuse, fire

    def arm(self, addr: int, seq: int) -> bool:
        self.armed.append((addr, seq))
        if self.fire:  # what the device's watch does once its timeout passed: the counter to seq
            ctypes.c_uint32.from_address(addr).value = seq
        return not self.refuse


def _gated(refuse_wait: bool = False, watch: Any = None) -> tuple[DriverClock, GatingDriver, list[int]]:
    events, new = _events()

    sleeps: list[int] = []
    drv = GatingDriver(events, refuse_wait)
    clock = DriverClock(drv.calls_(), spin_idle=True, torch_module=_fake_torch(new, sleeps),
                        watch=FakeWatch() if watch is None else watch)  # fmt: skip
    clock._seen.add(id(CFG))  # CFG was timed before: its spans are gated (see the test of a first span)
    return clock, drv, sleeps


CFG = object()  # a config's stand-in (the clock tells configs by identity)


def test_a_gated_span_waits_on_the_counter_and_its_stop_releases_it() -> None:
    clock, drv, sleeps = _gated()
    t = clock.start(CFG)
    assert drv.waits == [(7003, clock._flag_addr, 1, 0)]  # GEQ 1 on the raw stream, before the start event
    assert clock._flag.value == 0  # not released while the launch is being queued
    h = clock.stop(t)
    assert clock._flag.value == 1 and clock.gates == 1
    assert sleeps == [] and clock.spins == 0 and drv.stream_queries == []  # no spin, no idle query
    assert [s for _, s in drv.recorded] == [7003, 7003] and not clock.late(h)


def test_a_stop_releases_every_span_started_before_it_and_abandon_releases_its_own() -> None:
    clock, _drv, _ = _gated()
    t1 = clock.start(CFG)  # e.g. another thread's span, still queueing its launch
    t2 = clock.start(CFG)
    clock.stop(t2)
    assert clock._flag.value == 2  # >= 1 too: t1's wait can never be left waiting
    clock.stop(t1)
    assert clock._flag.value == 2  # never lowered
    t3 = clock.start(CFG)
    clock.abandon(t3)  # its launch raised
    assert clock._flag.value == 3


def test_a_refused_wait_falls_back_to_the_spin_for_good() -> None:
    clock, drv, sleeps = _gated(refuse_wait=True)
    clock.stop(clock.start(CFG))
    clock.stop(clock.start(CFG))
    assert len(drv.waits) == 1 and clock.gates == 0 and len(sleeps) == 2 and clock._flag.value == 0


def test_the_stream_object_is_looked_up_once_per_device_and_raw_handle() -> None:
    looked: list[object] = []
    raw = {"handle": 11}

    def current_stream() -> object:
        s = SimpleNamespace(query=lambda: False)
        looked.append(s)
        return s

    recorded: list[object] = []

    class Ev(FakeEvent):
        def record(self, stream: Any = None) -> None:
            recorded.append(stream)

    fake = SimpleNamespace(cuda=SimpleNamespace(Event=Ev, current_stream=current_stream, _sleep=lambda c: None),
                           _C=SimpleNamespace(_cuda_getDevice=lambda: 0,
                                              _cuda_getCurrentRawStream=lambda d: raw["handle"]))  # fmt: skip
    clock = CudaClock(spin_idle=True, torch_module=fake)
    for _ in range(3):
        clock.stop(clock.start(None))
    assert len(looked) == 1 and recorded == [looked[0]] * 6
    raw["handle"] = 12  # the caller switched streams (torch.cuda.stream(...))
    clock.stop(clock.start(None))
    assert len(looked) == 2 and recorded[-2:] == [looked[1]] * 2
    off = CudaClock(spin_idle=True, torch_module=fake, cache_stream=False)
    off.stop(off.start(None))
    assert len(looked) == 3  # torch's look-up per span


def test_the_incremental_modes_clock_finds_the_stream_by_its_raw_handle(monkeypatch) -> None:
    """cuda_clock() (the default clock): the raw-handle look-up above, where torch has its calls
    (a CUDA build; on this CPU build they are FAKE, set for the test)."""
    import torch

    from tritune.serving import runtime as serving_runtime

    def raw(d: int) -> int:
        return 7000

    def dev() -> int:
        return 0

    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", raw, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", dev, raising=False)
    monkeypatch.setattr(serving_runtime, "driver_event_calls", lambda: None)
    clock = serving_runtime.cuda_clock(spin_idle=True)
    assert clock._raw is raw and clock._dev is dev


def test_every_gate_is_watched_and_a_span_the_watch_released_is_late() -> None:
    watch = FakeWatch()
    clock, _drv, _ = _gated(watch=watch)
    h = clock.stop(clock.start(CFG))
    assert watch.armed == [(clock._flag_addr, 1)] and not clock.late(h) and clock.released_early == 0
    watch.fire = True  # this span's host work waited past the timeout: the watch opened the gate
    h = clock.stop(clock.start(CFG))
    assert clock.late(h) and clock.released_early == 1 and clock.late_spans == 1
    assert clock._gate_ok  # one such span does not turn the gate off


def test_a_watch_that_cannot_be_armed_opens_its_gate_at_once_and_gates_no_more() -> None:
    clock, drv, sleeps = _gated(watch=FakeWatch(refuse=True))
    clock.stop(clock.start(CFG))
    assert clock._flag.value == 1  # never left closed without its watch
    clock.stop(clock.start(CFG))
    assert len(drv.waits) == 1 and len(sleeps) == 2 and "could not be launched" in clock.gate_off


def test_no_watch_no_gate() -> None:
    events, new = _events()
    drv = GatingDriver(events)
    clock = DriverClock(drv.calls_(), spin_idle=True, torch_module=_fake_torch(new), watch=None)
    clock.stop(clock.start(CFG))
    assert drv.waits == [] and clock.gates == 0 and clock.spins == 1


def test_many_spans_released_by_the_watch_turn_the_gate_off() -> None:
    watch = FakeWatch(fire=True)  # something inside every span waits for the device
    clock, _drv, sleeps = _gated(watch=watch)
    for _ in range(40):
        clock.stop(clock.start(CFG))
    assert not clock._gate_ok and clock.gates == 32 and "32 of 32 gated spans" in clock.gate_off
    assert len(sleeps) == 8  # the rest spun


def test_only_a_config_timed_before_is_gated_the_first_span_and_one_without_a_config_spin() -> None:
    clock, drv, sleeps = _gated()
    other = object()
    clock.stop(clock.start(None))  # a check's copies or comparison: torch's work inside
    clock.stop(clock.start(other))  # its first span: its binary's first launch may load the module
    assert drv.waits == [] and len(sleeps) == 2
    clock.stop(clock.start(other))
    assert len(drv.waits) == 1 and clock.gates == 1


def test_an_automatic_watch_that_cannot_load_leaves_the_spin_with_the_reason(monkeypatch: Any) -> None:
    events, new = _events()
    drv = GatingDriver(events)
    clock = DriverClock(drv.calls_(), spin_idle=True, torch_module=_fake_torch(new), watch="auto")
    clock._seen.add(id(CFG))
    monkeypatch.setattr(GateWatch, "load", classmethod(lambda cls, timeout_us=0.0: None))  # no driver here
    clock.stop(clock.start(CFG))
    assert drv.waits == [] and clock.spins == 1 and "could not be loaded" in clock.gate_off

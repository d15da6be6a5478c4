"""The incremental mode's CUDA-event clock with ``spin_idle``, on a FAKE simulated device (tests/bench/sim_cuda.py)
with a virtual host clock: a launch costs the host 15 us, the kernel runs 3 us, and the caller synchronizes after
every call (as the serving benchmark does), so each span starts on an idle device."""

from __future__ import annotations

import statistics

import pytest
from sim_cuda import SimDevice

from tritune.serving.runtime import CudaClock

KERNEL_MS, LAUNCH_MS = 0.003, 0.015


def _spans(spin_idle: bool, busy: bool = False, calls: int = 40) -> tuple[list[float], CudaClock, SimDevice]:
    dev = SimDevice(seed=2, launch_cpu_ms=LAUNCH_MS, spin=True, virtual_host=True)
    clock = CudaClock(spin_idle=spin_idle, torch_module=dev.torch(), host=dev.perf_counter, detect_late=True)
    out = []
    for _ in range(calls):
        if busy:
            dev.run(0.2, 0.0, cpu_ms=0.0)  # other work queued ahead (the device is busy)
        else:
            dev.sync()
        t = clock.start(None)
        dev.run(KERNEL_MS, 0.01)
        h = clock.stop(t)
        out.append(clock.elapsed_ms(h))
    return out, clock, dev


def test_without_the_spin_an_idle_devices_span_holds_the_launchs_host_time() -> None:
    spans, clock, _ = _spans(spin_idle=False)
    assert statistics.median(spans) == pytest.approx(KERNEL_MS + LAUNCH_MS, rel=0.05)
    assert clock.spins == 0


def test_spin_idle_makes_the_span_the_kernel() -> None:
    spans, clock, _ = _spans(spin_idle=True)
    assert statistics.median(spans) == pytest.approx(KERNEL_MS, rel=0.05)
    assert clock.spins == len(spans)  # every call found the device idle
    assert clock._launch_us == pytest.approx(LAUNCH_MS * 1e3, rel=0.2)  # the spin follows the launch's host time


def test_no_spin_while_the_device_is_busy() -> None:
    spans, clock, _ = _spans(spin_idle=True, busy=True)
    assert clock.spins == 0  # every start found work queued ahead of it
    assert statistics.median(spans) == pytest.approx(KERNEL_MS, rel=0.05)  # queued behind other work anyway


def test_spin_idle_is_the_default_and_spin_idle_false_opts_out() -> None:
    from tritune.serving.incremental import Incremental
    from tritune.serving.state import IncrementalOptions

    assert IncrementalOptions().spin_idle is True
    for opts, want in ((None, True), (IncrementalOptions(spin_idle=False), False)):
        inc = Incremental(opts, thread=False)
        inc.resolver()  # builds the mode's CUDA-event clock from the options (nothing is launched)
        assert isinstance(inc.clock, CudaClock)
        # torch.cuda._sleep exists in CPU builds too; where it did not, the clock could not spin at all.
        assert inc.clock.spin_idle is want


@pytest.mark.parametrize("spin_idle", [True, False])
def test_a_span_looks_the_callers_stream_up_once_and_records_both_events_on_it(spin_idle: bool) -> None:
    # torch's Event.record() without a stream calls torch.cuda.current_stream() (Python: lazy-init check,
    # device index, a new Stream object); a span made three such look-ups (the idle query and two records).
    from types import SimpleNamespace

    looked: list[object] = []
    recorded: list[object] = []

    class Event:  # FAKE CUDA event: remembers the stream it was recorded on
        def __init__(self, enable_timing: bool = False) -> None:
            pass

        def record(self, stream: object = None) -> None:
            recorded.append(stream)

        def synchronize(self) -> None:
            pass

        def query(self) -> bool:
            return False

        def elapsed_time(self, end: object) -> float:
            return 0.005

    def current_stream() -> object:
        s = SimpleNamespace(query=lambda: True)  # a new object per look-up, as torch's
        looked.append(s)
        return s

    fake = SimpleNamespace(cuda=SimpleNamespace(Event=Event, current_stream=current_stream,
                                                _sleep=lambda cycles: None))  # fmt: skip
    clock = CudaClock(spin_idle=spin_idle, torch_module=fake)
    for _ in range(3):
        h = clock.stop(clock.start(None))
        assert clock.elapsed_ms(h) == 0.005
    assert len(looked) == 3 and recorded == [s for s in looked for _ in range(2)]
    assert clock.spins == (3 if spin_idle else 0)


def test_a_span_whose_launch_outlasted_the_spin_is_late_and_holds_host_time() -> None:
    # The spin follows the recent launches' host time; one launch 4x slower (another thread held the
    # interpreter's lock) outlasts it: the device waited for that launch inside the span.
    dev = SimDevice(seed=2, launch_cpu_ms=LAUNCH_MS, spin=True, virtual_host=True)
    clock = CudaClock(spin_idle=True, torch_module=dev.torch(), host=dev.perf_counter, detect_late=True)
    rows = []
    for i in range(30):
        dev.sync()
        t = clock.start(None)
        dev.run(KERNEL_MS, 0.01, cpu_ms=4 * LAUNCH_MS if i == 20 else None)
        h = clock.stop(t)
        rows.append((clock.late(h), clock.elapsed_ms(h)))
    late = [ms for is_late, ms in rows if is_late]
    clean = [ms for is_late, ms in rows if not is_late]
    assert len(late) == 1 and clock.late_spans == 1
    assert late[0] > KERNEL_MS + LAUNCH_MS  # the slow launch's host time beyond the spin is in the span
    assert max(clean) == pytest.approx(KERNEL_MS, rel=0.05)


def test_a_busy_stream_that_drained_before_the_launch_makes_the_span_late() -> None:
    # Work queued ahead of the span (a short kernel) ends while the launch is still on the host: the start
    # event passes at once, without a spin (the stream was busy), and the span holds the launch's host time.
    dev = SimDevice(seed=2, launch_cpu_ms=LAUNCH_MS, spin=True, virtual_host=True)
    clock = CudaClock(spin_idle=True, torch_module=dev.torch(), host=dev.perf_counter, detect_late=True)
    dev.sync()
    dev.run(0.002, 0.0, cpu_ms=0.0)  # 2 us of work ahead, ending long before the 15 us launch below
    t = clock.start(None)
    dev.run(KERNEL_MS, 0.0)
    h = clock.stop(t)
    assert clock.spins == 0 and clock.late(h)
    assert clock.elapsed_ms(h) > KERNEL_MS + 0.5 * LAUNCH_MS
    dev.sync()
    dev.run(0.2, 0.0, cpu_ms=0.0)  # 200 us ahead: still running when the launch returns
    t = clock.start(None)
    dev.run(KERNEL_MS, 0.0)
    h = clock.stop(t)
    assert not clock.late(h) and clock.elapsed_ms(h) == pytest.approx(KERNEL_MS)


def test_without_the_spin_no_span_is_called_late() -> None:
    _, clock, _ = _spans(spin_idle=False)
    assert clock.late_spans == 0  # every idle span holds host time then; nothing to tell apart


def test_spin_next_covers_one_span_whose_host_work_outlasts_a_launch() -> None:
    # A check's scratch copies are torch calls: 60 us of host against the racing launches' 15 us, so the spin
    # those set leaves the device idle inside the copies' span (on an H200: 0.05 ms charged for copies
    # against a 5 us scratch run). spin_next sizes the next idle spin for that span, once.
    dev = SimDevice(seed=2, launch_cpu_ms=LAUNCH_MS, spin=True, virtual_host=True)
    clock = CudaClock(spin_idle=True, torch_module=dev.torch(), host=dev.perf_counter, detect_late=True)
    for _ in range(20):  # racing calls: the spin follows their 15 us launches
        dev.sync()
        t = clock.start(None)
        dev.run(KERNEL_MS, 0.0)
        clock.elapsed_ms(clock.stop(t))

    def copies_span(spin_us: float | None) -> float:
        dev.sync()
        if spin_us is not None:
            clock.spin_next(spin_us)
        t = clock.start(None)
        dev.run(KERNEL_MS, 0.0, cpu_ms=0.06)
        return clock.elapsed_ms(clock.stop(t))

    assert copies_span(None) > KERNEL_MS + 0.02  # the device waited for the host inside the span
    assert copies_span(90.0) == pytest.approx(KERNEL_MS, rel=0.05)
    assert copies_span(None) > KERNEL_MS + 0.005  # once: the next span is sized from the launches again
    assert clock._next_spin_us is None

"""The GPU event timer (GPU tests skip at run time without a GPU) and the Timer -> ConfigMeasure adapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tritune.bench
from tritune.bench import EventTimer, Failure, Measurement, Timer, TimerMeasure, bench
from tritune.config import Config
from tritune.device import gpu_unavailable_reason
from tritune.errors import TimingUnavailableError
from tritune.outcome import Status


def _need_gpu() -> None:
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


def test_no_gpu_raises_with_plain_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # makes "no GPU" true on any machine
    with pytest.raises(TimingUnavailableError, match=r"TRITON_INTERPRET=1.*ReplayTimer"):
        EventTimer()
    with pytest.raises(TimingUnavailableError, match="cannot time"):
        bench(lambda: None)
    with pytest.raises(TimingUnavailableError):
        tritune.bench(lambda: None)  # the package is callable as the function


class FakeTimer:
    """A labelled fake Timer: records how it was called and returns a fixed measurement."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def measure(self, fn: Any, **kw: Any) -> Measurement:
        self.calls.append(kw)
        fn()
        return Measurement.from_samples([1.0, 1.0, 1.0], elapsed_s=kw["budget_s"])

    def to_json(self) -> dict[str, Any]:
        return {"timer": "fake"}


def test_timer_measure_builds_once_and_rewarms_briefly() -> None:
    fake = FakeTimer()
    assert isinstance(fake, Timer)
    built: list[Config] = []
    ran: list[Config] = []

    def make_fn(c: Config) -> Callable[[], None]:
        built.append(c)
        return lambda: ran.append(c)

    tm = TimerMeasure(fake, make_fn, warmup_s=0.02, rewarm_s=0.001)
    a = Config({"B": 1})
    assert isinstance(tm(a, 0.01), Measurement)
    assert isinstance(tm(a, 0.02), Measurement)
    assert built == [a] and ran == [a, a]
    assert [c["warmup_s"] for c in fake.calls] == [0.02, 0.001]
    assert [c["budget_s"] for c in fake.calls] == [0.01, 0.02]


def test_timer_measure_turns_exceptions_into_launch_failed() -> None:
    def make_fn(c: Config) -> Callable[[], None]:
        def boom() -> None:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

        return boom

    tm = TimerMeasure(FakeTimer(), make_fn)
    r = tm(Config({"B": 2}), 0.01)
    assert isinstance(r, Failure) and r.status is Status.LAUNCH_FAILED
    assert "B=2" in r.reason and "illegal memory access" in r.reason
    assert tm(Config({"B": 2}), 0.01) is r  # not retried


def test_timer_measure_lets_no_gpu_through() -> None:
    def make_fn(c: Config) -> Callable[[], None]:
        raise TimingUnavailableError("no GPU")

    with pytest.raises(TimingUnavailableError):
        TimerMeasure(FakeTimer(), make_fn)(Config({"B": 1}), 0.01)


# -- GPU ---------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_event_timer_times_a_copy() -> None:
    _need_gpu()
    import torch

    x = torch.randn(1 << 24, device="cuda")
    y = torch.empty_like(x)
    timer = EventTimer()
    settings = timer.to_json()
    assert settings["flush_bytes"] >= 2 * settings["l2_bytes"] > 0
    m = timer.measure(lambda: y.copy_(x), budget_s=2.0)
    assert m.n >= 10 and m.ci_low_ms <= m.median_ms <= m.ci_high_ms
    gbps = 2 * x.numel() * 4 / (m.median_ms * 1e-3) / 1e9
    assert 50 < gbps < 10_000
    assert m.stop == "converged" or m.elapsed_s >= 2.0


@pytest.mark.gpu
def test_graph_mode_and_rotation() -> None:
    _need_gpu()
    import torch

    xs = [torch.randn(1024, device="cuda") for _ in range(4)]
    ys = [torch.empty_like(x) for x in xs]
    fns = [lambda x=x, y=y: y.copy_(x) for x, y in zip(xs, ys, strict=True)]
    g = EventTimer(graph=True).measure(fns, budget_s=1.0)
    assert g.calls_per_sample >= 1 and g.median_ms < 0.1
    e = bench(fns, budget_s=1.0, flush_l2=False)
    assert e.median_ms > 0


# -- the timer's logic, on a FAKE simulated device (tests/bench/sim_cuda.py) ------------------------------
@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Any:
    from sim_cuda import SimDevice

    import tritune.bench.event as event

    dev = SimDevice(seed=3)
    monkeypatch.setattr(event, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(event, "_import_torch", dev.torch)
    return dev


def test_event_timer_on_simulated_device(sim: Any) -> None:
    timer = EventTimer(warmup_s=0.002)
    assert timer.l2_bytes == 50 << 20 and timer.flush_bytes == 100 << 20
    assert timer.to_json()["device"] == "simulated GPU (fake)"
    m = timer.measure(lambda: sim.run(0.05, 0.05), budget_s=5.0, rel_tol=0.01)
    assert m.stop == "converged" and m.rel_halfwidth <= 0.01
    assert m.ci_low_ms <= 0.05 <= m.ci_high_ms  # the flush before each start event is not counted
    assert 20 <= m.n <= 2000
    timer.warm_device(0.001)
    assert sim.launches > 0


def test_event_timer_stops_at_max_samples_and_rotates(sim: Any) -> None:
    ran: list[int] = []

    def make(i: int) -> Callable[[], None]:
        return lambda: (ran.append(i), sim.run(0.01, 0.5))[1]

    m = EventTimer(warmup_s=0.0).measure(
        [make(0), make(1), make(2)], budget_s=5.0, min_samples=10, max_samples=30
    )
    assert m.n == 30 and m.stop == "budget"
    assert {0, 1, 2} <= set(ran) and abs(ran.count(0) - ran.count(2)) <= 1


def test_graph_mode_subtracts_the_captured_flushes(sim: Any) -> None:
    timer = EventTimer(graph=True, warmup_s=0.0, graph_ms=0.5)
    m = timer.measure(lambda: sim.run(0.002, 0.05), budget_s=5.0, rel_tol=0.02)
    assert sim.graphs_captured == 2  # the work (with flushes) and the flushes alone
    assert m.calls_per_sample > 1 and m.extra["timer"] == "event-graph"
    assert m.median_ms == pytest.approx(0.002, rel=0.03)
    plain = EventTimer(graph=True, flush_l2=False, warmup_s=0.0).measure(lambda: sim.run(0.002), budget_s=1.0)
    assert plain.median_ms == pytest.approx(0.002) and plain.stop == "converged"
    assert EventTimer().copies_needed(10 << 20) == 11  # 2 x 50 MiB / 10 MiB, plus one

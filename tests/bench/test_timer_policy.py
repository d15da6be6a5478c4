"""The event timer under each measurement policy, on a FAKE simulated device (tests/bench/sim_cuda.py).

The fake device has a toy L2: a kernel takes its cold time right after a flush and its warm time after
another kernel. So these tests check that each policy keeps its cache state, batched or not, and that a
short kernel is batched (several launches per sample) while a long one is not.
"""

from __future__ import annotations

from typing import Any

import pytest

from tritune.bench import EventTimer, MeasurePolicy, bench

COLD_SHORT, WARM_SHORT = 0.005, 0.002  # a 5 us kernel that takes 2 us with its data in L2
COLD_LONG, WARM_LONG = 0.2, 0.1


@pytest.fixture
def fake_device(monkeypatch: pytest.MonkeyPatch) -> Any:
    from sim_cuda import SimDevice

    import tritune.bench.event as event

    dev = SimDevice(seed=5)
    monkeypatch.setattr(event, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(event, "_import_torch", dev.torch)
    monkeypatch.setattr(event, "_TIMERS", {})
    return dev


@pytest.mark.parametrize(
    ("policy", "expected", "flush"),
    [("cold", COLD_SHORT, True), ("warm", WARM_SHORT, False), ("graph", WARM_SHORT, False)],
)
def test_short_kernel_is_batched_in_the_policys_cache_state(
    fake_device: Any, policy: str, expected: float, flush: bool
) -> None:
    timer = EventTimer.for_policy(policy, warmup_s=0.001)
    assert timer.policy is MeasurePolicy(policy) and timer.flush_l2 is flush and timer.batch_short
    m = timer.measure(lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT), budget_s=5.0, rel_tol=0.01)
    assert m.calls_per_sample >= 10  # batched: a 5 us kernel is short
    assert m.extra["measure"] == policy and m.extra["timer"] == "event-graph"
    assert m.median_ms == pytest.approx(expected, rel=0.02)
    assert m.stop == "converged"
    assert timer.to_json()["measure"] == policy


@pytest.mark.parametrize(("policy", "expected"), [("cold", COLD_LONG), ("warm", WARM_LONG)])
def test_long_kernel_is_one_launch_per_sample(fake_device: Any, policy: str, expected: float) -> None:
    timer = EventTimer.for_policy(policy, warmup_s=0.001)
    m = timer.measure(lambda: fake_device.run(COLD_LONG, 0.02, WARM_LONG), budget_s=5.0, rel_tol=0.01)
    assert m.calls_per_sample == 1 and m.extra["timer"] == "event"
    assert m.median_ms == pytest.approx(expected, rel=0.02)


def test_graph_policy_always_replays_a_graph(fake_device: Any) -> None:
    timer = EventTimer.for_policy("graph", warmup_s=0.001)
    m = timer.measure(lambda: fake_device.run(COLD_LONG, 0.02, WARM_LONG), budget_s=5.0, rel_tol=0.01)
    assert m.extra["timer"] == "event-graph" and fake_device.graphs_captured == 1  # no flush graph
    assert m.median_ms == pytest.approx(WARM_LONG, rel=0.02)


def test_default_timer_keeps_one_launch_per_sample(fake_device: Any) -> None:
    """Without batching (today's default timer) a short kernel is still one launch per sample."""
    m = EventTimer(warmup_s=0.001).measure(lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT), budget_s=1.0)
    assert m.calls_per_sample == 1 and m.extra["measure"] == "cold"
    assert m.median_ms == pytest.approx(COLD_SHORT, rel=0.02)


def test_bench_takes_a_policy(fake_device: Any) -> None:
    m = bench(lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT), measure="warm", budget_s=2.0)
    assert m.extra["measure"] == "warm" and m.calls_per_sample > 1
    assert m.median_ms == pytest.approx(WARM_SHORT, rel=0.02)


def test_policy_timer_replays_the_graph_it_captured(fake_device: Any) -> None:
    """A race times a candidate many times: the policy timer captures its graph once (the flush graph too)."""
    fn = lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT)  # noqa: E731
    timer = EventTimer.for_policy("cold", warmup_s=0.001)
    first = timer.measure(fn, budget_s=0.5)
    assert fake_device.graphs_captured == 2
    again = timer.measure(fn, budget_s=0.5)
    assert fake_device.graphs_captured == 2 and again.calls_per_sample == first.calls_per_sample
    assert again.median_ms == pytest.approx(COLD_SHORT, rel=0.02)
    other = lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT)  # noqa: E731
    timer.measure(other, budget_s=0.5)
    assert fake_device.graphs_captured == 3  # a new callable: its work graph; the flush graph is shared
    plain = EventTimer.for_policy("cold", warmup_s=0.001, reuse_graphs=False)
    plain.measure(fn, budget_s=0.2)
    plain.measure(fn, budget_s=0.2)
    assert fake_device.graphs_captured == 3 + 3  # without reuse: work captured every time, flushes once

"""The event timer under each measurement policy, on a FAKE simulated device (tests/bench/sim_cuda.py).

The fake device has a toy L2: a kernel takes its cold time right after a flush and its warm time after
another kernel. So these tests check that each policy keeps its cache state, batched or not, and that a
short kernel is batched (several launches per sample) while a long one is not.
"""

from __future__ import annotations

from types import SimpleNamespace
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
    """With ``recapture=False`` a race's later looks replay the graph the first look captured (flushes too)."""
    fn = lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT)  # noqa: E731
    timer = EventTimer.for_policy("cold", warmup_s=0.001, recapture=False)
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


# A launch-bound short kernel (the graph policy's misses on an H200): Triton's launcher costs the
# CPU ~20 us, the kernel runs 1.8 us, and each graph replay has a fixed GPU cost. Two configs with the same
# kernel time must measure the same whatever their launch cost; before the fix the warm-up timed the CPU's
# launch rate, a graph held ~25 launches, and the fixed replay cost spread over them moved configs by %.
KERNEL_MS, REPLAY_MS = 0.0018, 0.003


# Without a GPU spin (torch always has one; the fake device may not) only the graph policy, which always
# captures, can correct a launch-bound estimate: from the first replay of its graph.
@pytest.mark.parametrize(("policy", "spin"), [("warm", True), ("graph", True), ("graph", False)])
def test_launch_bound_short_kernels_are_timed_by_their_gpu_time(
    monkeypatch: pytest.MonkeyPatch, policy: str, spin: bool
) -> None:
    from sim_cuda import SimDevice

    import tritune.bench.event as event

    # A virtual host clock: in real time, a CPU busy with other work stretched launches past the spin that
    # hides them, and the warm-up's estimate failed now and then on a loaded 2-core machine.
    dev = SimDevice(seed=3, launch_cpu_ms=0.02, replay_ms=REPLAY_MS, spin=spin, virtual_host=True)
    monkeypatch.setattr(event, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(event, "_import_torch", dev.torch)
    monkeypatch.setattr(event, "time", SimpleNamespace(perf_counter=dev.perf_counter))
    timer = EventTimer.for_policy(policy, warmup_s=0.002)
    cheap = lambda: dev.run(KERNEL_MS, 0.01, KERNEL_MS, cpu_ms=0.015)  # noqa: E731
    dear = lambda: dev.run(KERNEL_MS, 0.01, KERNEL_MS, cpu_ms=0.04)  # noqa: E731
    a = timer.measure(cheap, budget_s=0.05, rel_tol=0.005)
    b = timer.measure(dear, budget_s=0.05, rel_tol=0.005)
    for m in (a, b):
        # a graph holds ~graph_ms (0.5 ms) of kernel time, so the replay's 3 us cost stays under 1%
        assert m.calls_per_sample * KERNEL_MS >= 0.2, m.calls_per_sample
        assert m.median_ms == pytest.approx(KERNEL_MS, rel=0.012)
    assert a.median_ms == pytest.approx(b.median_ms, rel=0.005)
    if spin:  # behind a spin the warm-up sees the kernel, not the launcher
        assert a.extra["est_us"] < 5 and b.extra["est_us"] < 5


# On an H200 the cold policy's first case once took 12 s a tuning instead of ~1 s. Its
# samples held 1000 flush+launch pairs (60 ms of GPU time each) because the warm-up's estimate of the
# kernel, flush+fn minus the flush estimated once per timer, came out 0.1 us (the clamp) for every config.
# FAKE model of that: the flush is first estimated while the clocks are low (every op 2x slower on the
# simulated device), then the clocks ramp up and flush+fn is faster than that flush estimate.
FLUSH_KERNEL_MS = 0.0025


@pytest.mark.parametrize("spin", [True, False])
def test_cold_graph_is_sized_by_gpu_time_after_a_slow_first_flush_estimate(
    monkeypatch: pytest.MonkeyPatch, spin: bool
) -> None:
    from sim_cuda import SimDevice

    import tritune.bench.event as event

    dev = SimDevice(seed=11, l2_bytes=60 << 20, flush_ms_per_mb=0.00025, spin=spin)  # ~30 us flush
    monkeypatch.setattr(event, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(event, "_import_torch", dev.torch)
    timer = EventTimer.for_policy("cold", warmup_s=0.002)
    flush_ms = 2 * (60 << 20) / 2**20 * 0.00025
    kernels = [lambda: dev.run(FLUSH_KERNEL_MS, 0.01, 0.001) for _ in range(3)]
    dev.slowdown = 2.0  # the first timings of the process: clocks still low
    timer.measure(kernels[0], budget_s=0.02, rel_tol=0.01)
    assert timer._flush_ms == pytest.approx(2 * flush_ms, rel=0.05)  # the fake did model a slow estimate
    dev.slowdown = 1.0  # clocks up: every later warm-up's flush+fn is below that first flush estimate
    for fn in kernels[1:]:
        busy0 = dev.busy_ms
        m = timer.measure(fn, budget_s=0.02, rel_tol=0.01)
        assert m.median_ms == pytest.approx(FLUSH_KERNEL_MS, rel=0.03)
        # the flush was estimated again, so the kernel's estimate is its time, not the 0.1 us clamp
        assert m.extra["est_us"] == pytest.approx(FLUSH_KERNEL_MS * 1e3, rel=0.3)
        # one work graph holds at most MAX_FLUSH_GRAPH_MS of flush+launch pairs, not 1000 of them
        assert m.calls_per_sample * (flush_ms + FLUSH_KERNEL_MS) <= event.MAX_FLUSH_GRAPH_MS * 1.05
        assert m.calls_per_sample >= 20  # still a batch: 0.5 ms at least
        per_sample_gpu_ms = (dev.busy_ms - busy0) / m.n  # warm-up included
        assert per_sample_gpu_ms < 6.0, per_sample_gpu_ms  # was ~60 ms a sample


def test_policy_timer_recaptures_each_look_at_the_first_looks_size(fake_device: Any) -> None:
    """On an H200 the graph policy's tunings kept one capture per config for the whole race and
    disagreed with the judge, which captures afresh for every look. The policy timer now captures the work
    graph afresh on every look, at the size the first look checked; the flush graph is shared."""
    fn = lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT)  # noqa: E731
    timer = EventTimer.for_policy("cold", warmup_s=0.001)
    assert timer.recapture and timer.to_json()["recapture"] is True
    first = timer.measure(fn, budget_s=0.2)
    assert fake_device.graphs_captured == 2
    for looks in range(2, 4):
        again = timer.measure(fn, budget_s=0.2)
        assert fake_device.graphs_captured == 1 + looks  # one new work graph a look, no new flush graph
        assert again.calls_per_sample == first.calls_per_sample
        assert again.median_ms == pytest.approx(COLD_SHORT, rel=0.02)


def test_cold_graph_that_does_not_resolve_the_kernel_falls_back_to_one_launch_per_sample(fake_device: Any) -> None:
    """On an H200, under the cold policy Liger's DyT kernels got a median of -51 us a launch
    (the graph of flushes alone came out slower than the graph of flush+launch pairs), and the negative time
    failed the user's call in the store. FAKE model: every replay of the flushes-alone graph costs 3 ms more.
    The timer must notice the unresolved difference and time the kernel one launch per sample instead."""
    fake_device.flush_graph_extra_ms = 3.0
    timer = EventTimer.for_policy("cold", warmup_s=0.001)
    m = timer.measure(lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT), budget_s=0.5, rel_tol=0.01)
    assert m.median_ms > 0 and min(m.samples) > 0
    assert m.calls_per_sample == 1 and m.extra["timer"] == "event"
    assert "graph minus flushes" in m.extra["fallback"]
    assert m.median_ms == pytest.approx(COLD_SHORT, rel=0.05)  # still the cold time: flushed before each launch


def test_cold_graph_whose_samples_go_below_zero_falls_back_even_with_a_positive_median(fake_device: Any) -> None:
    """On an H100 one of fla's GLA kernels (1.6 us) timed by the cold graph policy got a positive median but
    samples down to -39 us a launch: its interval went below zero and the search refused the observation. FAKE
    model: each replay of the flushes-alone graph costs U(0, 1.5 x the kernel) more per flush, so about a third
    of the samples come out negative while their median stays positive (a quarter of the kernel's time: the
    difference is noise). The timer must fall back to one launch per sample here too."""
    fake_device.flush_graph_jitter_ms = 1.5 * COLD_SHORT
    timer = EventTimer.for_policy("cold", warmup_s=0.001)
    m = timer.measure(lambda: fake_device.run(COLD_SHORT, 0.02, WARM_SHORT), budget_s=0.5, rel_tol=0.01)
    assert "graph minus flushes" in m.extra["fallback"] and "median" in m.extra["fallback"]
    assert m.extra["timer"] == "event" and m.calls_per_sample == 1
    assert min(m.samples) > 0 and m.ci_low_ms > 0
    assert m.median_ms == pytest.approx(COLD_SHORT, rel=0.05)


def test_launch_pad_is_sized_from_the_warm_up_without_extra_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """One launch per sample (a long kernel, cold): a GPU spin after the flush covers the host's launch, sized
    from the warm-up's CPU time per flush+run (on an H200: 8 extra timed launches per measurement cost a 2.7 ms
    FlagGems kernel 37 ms each). FAKE simulated device, virtual host clock: 40 us to launch a 0.2 ms kernel;
    every run of the kernel after the warm-up is a sample, and the host's launch is not in the samples."""
    from sim_cuda import SimDevice

    import tritune.bench.event as event

    dev = SimDevice(seed=4, launch_cpu_ms=0.04, spin=True, virtual_host=True)
    monkeypatch.setattr(event, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(event, "_import_torch", dev.torch)
    monkeypatch.setattr(event, "time", SimpleNamespace(perf_counter=dev.perf_counter))
    runs = [0]

    def kernel() -> None:
        runs[0] += 1
        dev.run(COLD_LONG, 0.02, WARM_LONG, cpu_ms=0.04)

    timer = EventTimer.for_policy("cold", warmup_s=0.002)
    at_sampling: list[int] = []
    sample = timer._sample_events
    monkeypatch.setattr(timer, "_sample_events", lambda *a, **k: (at_sampling.append(runs[0]), sample(*a, **k))[1])
    m = timer.measure(kernel, budget_s=0.5, rel_tol=0.01)
    assert m.extra["timer"] == "event" and m.calls_per_sample == 1
    assert runs[0] - at_sampling[0] == m.n  # no launches beyond the samples
    assert timer.pad_us >= 3 * 40  # covers the host's 40 us launch (and the flush's)
    assert m.median_ms == pytest.approx(COLD_LONG, rel=0.02)


def test_bench_and_library_loops_share_one_timer_per_device_and_setting(fake_device: Any) -> None:
    """One L2 flush buffer per device and setting in the process: ``bench`` and a library's own loop over ``_bench``
    (``shared_timer``) time through the same plain timer, which reuses no graphs."""
    from tritune.bench.event import shared_timer

    bench(lambda: fake_device.run(COLD_LONG, 0.02, WARM_LONG), budget_s=0.5, device=0)
    flushed = shared_timer(device=0, flush_l2=True)
    assert shared_timer(device=0, flush_l2=True) is flushed and flushed.flush_l2 and not flushed.reuse_graphs
    warm = shared_timer(device=0, flush_l2=False)
    assert warm is not flushed and not warm.flush_l2 and warm.flush_bytes == 0
    import tritune.bench.event as event

    assert len(event._TIMERS) == 2  # bench's cold timer is the loop's

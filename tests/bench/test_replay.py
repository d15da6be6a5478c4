"""The replay timer and the synthetic landscapes it is tested on (made-up timings, no GPU)."""

from __future__ import annotations

import pytest

from tritune.bench import Failure, Measurement, ReplayTimer, synthetic_landscape
from tritune.bench.synthetic import SYNTHETIC_DEVICE
from tritune.config import Config
from tritune.errors import ConfigError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status


def _tiny() -> Landscape:
    pts = [
        LandscapePoint(Config({"B": 1}), Status.MEASURED, 0.1),
        LandscapePoint(Config({"B": 2}), Status.ILLEGAL, None, "needs 300 KB of shared memory"),
        LandscapePoint(Config({"B": 3}), Status.COMPILE_FAILED, None),
        LandscapePoint(Config({"B": 4}), Status.FITS, None),
    ]
    return Landscape.from_points("k", "test", {"n": 1}, pts)


def test_replays_recorded_time_with_noise() -> None:
    r = ReplayTimer(_tiny(), noise=0.03, seed=1)
    m = r.measure_config(Config({"B": 1}), 1.0)
    assert isinstance(m, Measurement)
    assert m.stop == "converged" and m.rel_halfwidth <= 0.01
    assert m.ci_low_ms <= 0.1 * 1.02 and m.ci_high_ms >= 0.1 * 0.98
    assert len(set(m.samples)) == m.n  # noise was applied
    assert r.calls == 1 and r.device_s == pytest.approx(m.elapsed_s)


def test_budget_is_simulated_device_time() -> None:
    r = ReplayTimer(_tiny(), noise=0.5, seed=0, overhead_ms=0.0, batch=10)
    m = r.measure_config(Config({"B": 1}), 0.002)  # 2 ms of 0.1 ms samples: 20 samples
    assert isinstance(m, Measurement)
    assert m.stop == "budget" and m.n == 20 and m.elapsed_s == pytest.approx(0.002)


def test_zero_noise_converges_at_once() -> None:
    m = ReplayTimer(_tiny(), noise=0.0).measure_config(Config({"B": 1}), 1.0, min_samples=10)
    assert isinstance(m, Measurement)
    assert m.median_ms == 0.1 and m.stop == "converged" and m.n == 10


def test_failures_come_back_as_their_status() -> None:
    r = ReplayTimer(_tiny())
    illegal = r.measure_config(Config({"B": 2}), 1.0)
    assert illegal == Failure(Status.ILLEGAL, "needs 300 KB of shared memory")
    failed = r.measure_config(Config({"B": 3}), 1.0)
    assert (
        isinstance(failed, Failure)
        and failed.status is Status.COMPILE_FAILED
        and "compile_failed" in failed.reason
    )
    untimed = r.measure_config(Config({"B": 4}), 1.0)
    assert isinstance(untimed, Failure) and untimed.status is Status.NOT_TIMED


def test_unknown_config_is_a_usage_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="B=9"):
        ReplayTimer(_tiny()).measure_config(Config({"B": 9}), 1.0)


def test_failure_cannot_carry_a_success_status() -> None:
    with pytest.raises(ValueError, match="success"):
        Failure(Status.MEASURED, "no")


def test_deterministic_for_a_seed() -> None:
    land = synthetic_landscape(20, seed=3)
    runs = []
    for seed in (7, 7, 8):
        r = ReplayTimer(land, seed=seed)
        runs.append([r.measure_config(c, 0.001) for c in land.configs])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_synthetic_landscape_has_known_best_and_gaps() -> None:
    land = synthetic_landscape(40, seed=5, best_ms=0.01, near=(0.004, 0.02), failures={Status.ILLEGAL: 3})
    assert land.device == SYNTHETIC_DEVICE and land.provenance["synthetic"] is True
    times = sorted(p.time_ms for p in land.measured if p.time_ms is not None)
    assert len(times) == 37 and land.best.time_ms == 0.01
    assert times[1] == pytest.approx(0.01 * 1.004) and times[2] == pytest.approx(0.01 * 1.02)
    assert times[3] >= 0.01 * 1.05
    assert sum(p.status is Status.ILLEGAL for p in land.points) == 3
    assert len(set(land.configs)) == 40
    assert Landscape.from_json(land.to_json()).best == land.best
    with pytest.raises(ValueError, match="failure"):
        synthetic_landscape(10, failures={Status.MEASURED: 1})


def test_gpu_drift_scales_every_config_alike_by_the_devices_time() -> None:
    from tritune.bench import GpuDrift

    settle = GpuDrift(ramp=0.1, ramp_s=0.1, swing=0.0)
    assert settle(0.0) == pytest.approx(0.9) and settle(2.0) == pytest.approx(1.0, abs=1e-6)
    wander = GpuDrift(ramp=0.0, swing=0.03, seed=1)
    levels = [wander(t / 100) for t in range(200)]
    assert 0.9 < min(levels) < 0.99 < 1.01 < max(levels) < 1.1  # moves, within a few sigma of 3%
    assert GpuDrift(seed=2)(0.3) == GpuDrift(seed=2)(0.3) != GpuDrift(seed=3)(0.3)
    with pytest.raises(ValueError, match="ramp"):
        GpuDrift(ramp=1.0)
    land = Landscape.from_points("k", "synthetic", {}, [LandscapePoint(Config({"B": b}), Status.MEASURED, 1.0)
                                                         for b in range(2)])  # fmt: skip
    timer = ReplayTimer(land, noise=0.0, drift=settle)
    first = timer.measure_config(Config({"B": 0}), 0.05)
    assert isinstance(first, Measurement) and first.median_ms == pytest.approx(0.9)  # the look's start: t = 0
    t = timer.device_s  # the first look's simulated device time (10 samples of ~1 ms): the GPU has settled a little
    later = timer.measure_config(Config({"B": 1}), 0.05)
    assert t > 0 and isinstance(later, Measurement) and later.median_ms == pytest.approx(settle(t))
    assert later.median_ms > first.median_ms
    assert timer.to_json()["drift"] == "GpuDrift"

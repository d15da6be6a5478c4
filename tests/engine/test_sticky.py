"""A sticky CUDA error costs one candidate, not the tuning.

FAKES, on CPU: ``prepare`` and ``measure`` stand in for a GPU where one config makes an illegal memory
access; after it, every in-process launch fails as a lost CUDA context does, and ``recover`` is a FAKE fresh
process (a replayed measure). The TIMINGS ARE SYNTHETIC (a made-up landscape, replayed).
"""

from __future__ import annotations

from tritune.bench import Failure, ReplayTimer, synthetic_landscape
from tritune.config import Config
from tritune.engine.loop import EveryConfig, Parts, run_batches
from tritune.engine.race import RaceOptions
from tritune.engine.sticky import is_sticky
from tritune.outcome import Status

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)
ILLEGAL = "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered"


class FakeGpu:
    """FAKE device: ``bad`` loses the context when it runs; after that every launch fails the same way."""

    def __init__(self, bad: Config, replay: ReplayTimer, in_prepare: bool) -> None:
        self.bad, self.replay, self.in_prepare = bad, replay, in_prepare
        self.lost = False
        self.fresh_calls: list[Config] = []

    def prepare(self, c: Config) -> Failure | None:
        if self.in_prepare and (self.lost or c == self.bad):
            self.lost = True
            return Failure(Status.LAUNCH_FAILED, f"{c.id}: {ILLEGAL}")
        return None

    def measure(self, c: Config, budget_s: float):  # type: ignore[no-untyped-def]
        if self.lost or c == self.bad:
            self.lost = True
            raise RuntimeError(f"Triton Error [CUDA]: an illegal memory access was encountered ({c.id})")
        return self.replay.measure_config(c, budget_s)

    def recover(self):  # type: ignore[no-untyped-def]
        def fresh(c: Config, budget_s: float):  # type: ignore[no-untyped-def]
            self.fresh_calls.append(c)
            return self.replay.measure_config(c, budget_s)

        return fresh


class _Job:
    """One key raced whole through the batch loop, a sticky error guarded as in every tuning."""

    def __init__(self, gpu: FakeGpu, configs: list[Config], recover: bool) -> None:
        self.gpu, self.configs, self.recover = gpu, configs, recover

    def run(self):  # type: ignore[no-untyped-def]
        return run_batches(EveryConfig(self.configs), Parts(self.gpu.prepare, self.gpu.measure, OPTS), final=0,
                           recover=self.gpu.recover if self.recover else None)


def _job(gpu: FakeGpu, configs: list[Config], recover: bool) -> _Job:
    return _Job(gpu, configs, recover)


def test_classifies_sticky_errors() -> None:
    assert is_sticky(ILLEGAL) and is_sticky("CUDA error: misaligned address")
    assert is_sticky("CUDA_ERROR_ILLEGAL_ADDRESS") and is_sticky("device-side assert triggered")
    assert not is_sticky("out of resources: shared memory") and not is_sticky(None)


def test_an_illegal_address_while_timing_costs_only_its_candidate() -> None:
    land = synthetic_landscape(12, seed=7)
    cfgs = land.configs
    bad = next(c for c in cfgs if c != land.best.config)
    gpu = FakeGpu(bad, ReplayTimer(land, seed=0), in_prepare=False)
    res = _job(gpu, cfgs, recover=True).run()
    assert res is not None
    o = res.outcome(bad)
    assert o.status is Status.LAUNCH_FAILED and "sticky CUDA error" in (o.reason or "")
    others = [res.outcome(c) for c in cfgs if c != bad]
    assert all(x.status is not Status.LAUNCH_FAILED for x in others)
    assert res.winner == land.best.config and gpu.fresh_calls  # the rest were timed in the fresh process


def test_an_illegal_address_in_the_correctness_check_costs_only_its_candidate() -> None:
    land = synthetic_landscape(8, seed=8)
    cfgs = land.configs
    bad = cfgs[1]
    gpu = FakeGpu(bad if bad != land.best.config else cfgs[2], ReplayTimer(land, seed=0), in_prepare=True)
    res = _job(gpu, cfgs, recover=True).run()
    assert res is not None and res.outcome(gpu.bad).status is Status.LAUNCH_FAILED
    assert sum(o.status is Status.LAUNCH_FAILED for o in res.outcomes) == 1
    assert res.winner == land.best.config


def test_without_a_fresh_process_the_others_name_the_culprit() -> None:
    """Before: every later candidate failed with an illegal address of its own, as if each were broken."""
    land = synthetic_landscape(6, seed=9)
    cfgs = land.configs
    bad = cfgs[0]
    gpu = FakeGpu(bad, ReplayTimer(land, seed=0), in_prepare=False)
    res = _job(gpu, cfgs, recover=False).run()
    assert res is not None and res.outcome(bad).status is Status.LAUNCH_FAILED
    for c in cfgs[1:]:
        o = res.outcome(c)
        assert o.status is Status.LAUNCH_FAILED and f"{bad.id} lost the CUDA context" in (o.reason or "")

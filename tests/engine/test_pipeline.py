"""compile_and_race: every config ends with an outcome, the race starts while stragglers compile, the late
best still wins, and the session records compile failures.

FAKES, to test the orchestration on CPU: compile workers are FakeCompiling (tests/fake_compiling.py:
the stragglers finish exactly when the pipeline waits for them, no timers), loading is a function of the
test's choosing, and the TIMINGS ARE SYNTHETIC (a made-up landscape, replayed).
"""

from __future__ import annotations

import pytest

from fake_compiling import FakeCompiling
from tritune.bench import Failure, ReplayTimer, synthetic_landscape
from tritune.config import Config
from tritune.engine import precompile as pc
from tritune.engine.pipeline import LazyMeasure, after_compiles, compile_and_race
from tritune.engine.race import RaceOptions
from tritune.outcome import Status

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)


def test_every_config_gets_an_outcome_and_the_late_best_wins() -> None:
    land = synthetic_landscape(30, seed=3)
    cfgs = land.configs
    best = land.best.config
    others = [c for c in cfgs if c != best]
    broken, spec_bad, too_big, wrong = others[0], others[1], others[2], others[3]
    compiling = FakeCompiling(cfgs, {best: None, broken: "ptxas fatal"}, {spec_bad: "k: bad signature"}, workers=4)
    pending_when_timed: list[int] = []
    replay = ReplayTimer(land, noise=0.02, seed=0)

    def measure(c: Config, budget_s: float):  # type: ignore[no-untyped-def]
        pending_when_timed.append(len(compiling.pending))
        return replay.measure_config(c, budget_s)

    def prepare(c: Config):  # type: ignore[no-untyped-def]
        if c == too_big:
            return Failure(Status.ILLEGAL, "the GPU refused to load it")
        if c == wrong:
            return Failure(Status.INCORRECT, "args[1] differs")
        return {"registers": 32, "shared": 0}

    stats: dict = {}  # FAKE: as if 4 workers ran these; the race starts when at most half are busy
    res = compile_and_race(cfgs, prepare=prepare, measure=measure, options=OPTS, compiling=compiling,
                           stats=stats)  # fmt: skip
    assert [o.config for o in res.outcomes] == cfgs  # one outcome each, in the given order
    status = {o.config: o.status for o in res.outcomes}
    assert status[broken] is Status.COMPILE_FAILED and "ptxas fatal" in (res.outcome(broken).reason or "")
    assert status[spec_bad] is Status.COMPILE_FAILED
    assert status[too_big] is Status.ILLEGAL and status[wrong] is Status.INCORRECT
    assert res.winner == best  # compiled last, still raced and still the winner
    assert pending_when_timed[0] == 2 and pending_when_timed[-1] == 0
    assert stats["first_race"]["left_compiling"] == 2 and stats["first_race"]["candidates"] == len(cfgs) - 5
    assert res.outcome(best).facts == {"registers": 32, "shared": 0}
    assert res.outcome(broken).facts is None and res.outcome(broken).measurement is None
    assert stats["compiled_s"] <= stats["loaded_s"] <= stats["raced_s"]
    assert compiling.waits == [2, 0] and compiling.closed


def test_load_binary_records_any_backend_error_as_compile_failed() -> None:
    """FAKE JIT objects: the backend's own errors (an MLIR pass failure, ptxas) are compile_failed with the
    reason, never an exception that would lose every other candidate of the key."""
    from tritune.engine.pipeline import load_binary

    class Jit:
        def __init__(self, exc: Exception | None) -> None:
            self.exc = exc

        def run(self, *a, **k):  # type: ignore[no-untyped-def]
            if self.exc is not None:
                raise self.exc

            class K:
                n_regs, n_spills = 40, 2

                class metadata:
                    shared = 1024

            return K()

    cfg = Config({"BLOCK": 64})
    got = load_binary(Jit(RuntimeError("PassManager::run failed")), "k", cfg, (), {}, (1,))
    assert isinstance(got, Failure) and got.status is Status.COMPILE_FAILED
    assert "PassManager::run failed" in got.reason and "RuntimeError" in got.reason and "BLOCK=64" in got.reason
    assert load_binary(Jit(None), "k", cfg, (), {}, (1,)) == {"registers": 40, "spilled_bytes": 8, "shared": 1024}


def test_compile_timeout_is_its_own_outcome_and_sweep_times_everything() -> None:
    land = synthetic_landscape(12, seed=4)
    cfgs = land.configs
    slow = cfgs[5]
    compiling = FakeCompiling(cfgs, {}, {slow: "k slow: compile_timeout: still compiling after 60 s"})
    compiling.timed_out.add(slow)
    res = compile_and_race(cfgs, prepare=lambda c: None, measure=ReplayTimer(land, seed=1).measure_config,
                           options=OPTS, compiling=compiling, method="sweep")  # fmt: skip
    assert res.outcome(slow).status is Status.COMPILE_TIMEOUT
    measured = [o for o in res.outcomes if o.status is Status.MEASURED]
    assert len(measured) == len(cfgs) - 1 and all(o.full for o in measured)
    assert res.winner == land.best.config


def test_a_config_that_fails_again_in_a_later_batch_keeps_one_outcome() -> None:
    """A search may propose a finalist of its first batch again; when it fails both times the race over the
    batches still lists it once (a store write refuses a config listed twice)."""
    land = synthetic_landscape(12, seed=5)
    cfgs = land.configs
    bad = cfgs[2]
    replay = ReplayTimer(land, noise=0.02, seed=2)

    def prepare(c: Config):  # type: ignore[no-untyped-def]
        return Failure(Status.ILLEGAL, "does not compile") if c == bad else None

    first = compile_and_race(cfgs[:6], prepare=prepare, measure=replay.measure_config, options=OPTS)
    both = compile_and_race([bad, *cfgs[6:]], prepare=prepare, measure=replay.measure_config, options=OPTS,
                            prior=first)  # fmt: skip
    listed = [o.config for o in both.outcomes]
    assert sorted(listed) == sorted(cfgs) and len(listed) == len(set(listed))
    assert both.outcome(bad).status is Status.ILLEGAL


def test_nothing_runnable_times_nothing_and_never_builds_the_timer() -> None:
    land = synthetic_landscape(6, seed=5)
    built = []

    def make():  # type: ignore[no-untyped-def]
        built.append(1)
        return ReplayTimer(land).measure_config

    res = compile_and_race(land.configs, prepare=lambda c: Failure(Status.ILLEGAL, "no"),
                           measure=LazyMeasure(make), options=OPTS)  # fmt: skip
    assert res.winner is None and res.stop == "none_measured" and not built
    assert all(o.status is Status.ILLEGAL and o.reason == "no" for o in res.outcomes)


def test_lazy_measure_started_ahead_builds_on_a_helper_thread_and_the_first_call_waits() -> None:
    """LazyMeasure.start: make() runs on a helper thread beside the caller (a GPU timer's flush buffer and
    clocks' warm-up); the first call joins it and uses what it built, its seconds and wait are kept."""
    import threading
    import time

    land = synthetic_landscape(8, seed=1)
    where: list[str] = []

    def make():  # type: ignore[no-untyped-def]
        where.append(threading.current_thread().name)
        time.sleep(0.05)
        return ReplayTimer(land).measure_config

    lazy = LazyMeasure(make)
    lazy.start()
    lazy.start()  # once only
    got = lazy(land.configs[0], 0.001)
    assert where == ["tritune-timer"]
    assert got.median_ms == pytest.approx(land.lookup(land.configs[0]).time_ms, rel=0.05)
    assert lazy.seconds >= 0.04 and lazy.waited_s > 0.0
    lazy(land.configs[1], 0.001)
    assert where == ["tritune-timer"]  # built once
    in_place = LazyMeasure(make)
    in_place(land.configs[0], 0.001)
    assert where[-1] == threading.current_thread().name and in_place.seconds == 0.0


def test_lazy_measure_after_a_compiler_builds_once_the_compiles_started() -> None:
    """after_compiles: the build starts once the compiler's first call has started the compiles (their workers
    forked: a fork never meets the timer's helper mid-compile), once; without a compiler it starts at once."""
    land = synthetic_landscape(4, seed=2)
    events: list[str] = []

    def make():  # type: ignore[no-untyped-def]
        events.append("built")
        return ReplayTimer(land).measure_config

    def compiler(configs):  # type: ignore[no-untyped-def]  # FAKE: records that the compiles started
        events.append(f"compiling {len(configs)}")
        return None

    lazy = LazyMeasure(make)
    wrapped = after_compiles(compiler, lazy.start)
    assert wrapped is not None and events == []  # nothing built before the compiles
    wrapped(land.configs[:3])
    lazy(land.configs[0], 0.001)  # joins the build
    wrapped(land.configs[3:])
    assert events == ["compiling 3", "built", "compiling 1"]
    alone = LazyMeasure(make)
    assert after_compiles(None, alone.start) is None
    alone(land.configs[0], 0.001)
    assert events[-1] == "built" and alone.seconds > 0.0  # started by after_compiles(None), on the helper
    both = after_compiles(compiler, lambda: events.append("a"), lambda: events.append("b"))
    assert both is not None and events[-1] == "built"
    both(land.configs[:1])  # every start, in order, after each compiler call (each start does nothing twice)
    assert events[-3:] == ["compiling 1", "a", "b"]


def test_lazy_measure_started_ahead_raises_its_error_at_the_first_call() -> None:
    """A timer that cannot be built (no GPU here) fails the first timing, as when built in place, not the start."""

    def make():  # type: ignore[no-untyped-def]
        raise RuntimeError("tritune cannot time kernels here")

    lazy = LazyMeasure(make)
    lazy.start()
    with pytest.raises(RuntimeError, match="cannot time"):
        lazy(synthetic_landscape(4, seed=0).configs[0], 0.001)


@pytest.mark.slow
def test_session_records_a_failed_compile_with_its_reason(monkeypatch, tmp_path) -> None:
    """tune_key through the FAKE workers: the failed compile is in the result and in the store."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune
    from tritune.store import open_store

    wl = sw.gelu()
    broken = wl.candidates()[1]

    def fake_start(jit, todo, args, kwargs, target, jobs, timeout):  # type: ignore[no-untyped-def]
        return FakeCompiling(list(todo), {broken: "ptxas fatal: out of registers"})

    monkeypatch.setattr(pc, "start_precompile", fake_start)
    store = open_store(str(tmp_path / "s.db"))
    res = tune([wl], keys=[sw.KEY], ceilings=False, options=TuneOptions(jobs=4, race=sw.OPTS), store=store,
               timer=sw.replay_timer(wl, 0), target="sm90", device="cpu", group=None)  # fmt: skip
    (w,) = res.workloads
    by = {c.config: c for c in w.candidates}
    assert by[broken].status is Status.COMPILE_FAILED and "out of registers" in (by[broken].reason or "")
    assert sum(c.status is Status.MEASURED for c in w.candidates) == len(w.candidates) - 1
    assert w.extra["phases"]["compiled_s"] >= 0.0
    (entry,) = store.entries()
    (rec,) = store.candidates(entry.key, [broken])
    assert rec.status is Status.COMPILE_FAILED and "out of registers" in (rec.reason or "")

"""The decorator races the configs compiled first while the slowest compiles finish, then goes on.

FAKES, to test the orchestration logic on CPU: the GPU check is patched to say "a GPU is here", the
compile workers are FakeCompiling (tests/fake_compiling.py: two stragglers finish only when the
decorator waits for them after its first race, one of them failing to compile; no timers), the compile-and-load check always passes, and the TIMINGS ARE SYNTHETIC (a
made-up landscape replayed through ``Tuner(timer=...)``). The kernel itself really runs, in Triton's
interpreter.
"""

from __future__ import annotations

import torch
import triton

import tritune
from fake_compiling import FakeCompiling
from kernels import scale_kernel
from tritune.bench import ReplayTimer
from tritune.engine import precompile as pc
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

N = 3000
CONFIGS = [tritune.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256, 512, 1024) for w in (1, 2, 4, 8)]
BEST = tritune.Config({"BLOCK": 1024}, num_warps=1)  # a straggler: big tile, few warps
BROKEN = tritune.Config({"BLOCK": 1024}, num_warps=2)  # the other straggler: its compile fails


def _times() -> dict[tritune.Config, float]:
    return {c: (0.005 if c == BEST else 0.010 + 0.0004 * i) for i, c in enumerate(CONFIGS)}  # SYNTHETIC


def test_first_race_runs_while_stragglers_compile_and_the_late_best_still_wins(monkeypatch, tmp_path):
    from tritune.decorator import miss as tuner
    from tritune.engine import pipeline
    from tritune.store import keys as store_keys

    monkeypatch.setattr(tuner, "gpu_unavailable_reason", lambda: None)  # FAKE: "a GPU is here"
    monkeypatch.setattr(store_keys, "current_device", lambda: ("FAKE GPU", "9.0"))
    monkeypatch.setattr("tritune.device.current_target", lambda: None)
    monkeypatch.setattr(pipeline, "load_binary", lambda *a, **k: {})  # FAKE: every binary loads
    timed_while_pending: list[int] = []
    started: list[FakeCompiling] = []

    def fake_start(jit, todo, args, kwargs, target, jobs, timeout):  # FAKE compile workers
        assert not started, f"a second tuning asked to compile {[c.id for c in todo]}"
        started.append(FakeCompiling(list(todo), {BEST: None, BROKEN: "ptxas fatal: out of memory"}, workers=4))
        return started[0]

    monkeypatch.setattr(pc, "start_precompile", fake_start)
    pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in _times().items()]
    replay = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {"n": N}, pts), noise=0.01, seed=0)

    def measure_config(config, budget_s):
        timed_while_pending.append(len(started[0].pending))
        return replay.measure_config(config, budget_s)

    class Timer:
        pass

    timer = Timer()
    timer.measure_config = measure_config  # type: ignore[attr-defined]
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=str(tmp_path / "s.db"), timer=timer, jobs=4,
                         race=RaceOptions(brief_budget_s=0.001, round_budget_s=0.002))(scale_kernel)  # fmt: skip
    x = torch.randn(N)
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(N, m["BLOCK"]),)](x, out, N)
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert choice.config == BEST and choice.source == "replayed"
    stats = choice.stats or {}
    first = stats["first_race"]
    assert first["candidates"] == len(CONFIGS) - 2 and first["left_compiling"] == 2
    assert timed_while_pending[0] == 2  # the first race timed while both stragglers were compiling
    assert timed_while_pending[-1] == 0
    assert stats["race"]["measurements"] == len(timed_while_pending)
    # Every candidate was recorded, the failed compile too (with its reason): a second decorator over the
    # same store finds the winner without compiling or timing anything.
    k2 = tritune.autotune(configs=CONFIGS, key=["n"], store=str(tmp_path / "s.db"), timer=timer)(scale_kernel)
    k2[lambda m: (triton.cdiv(N, m["BLOCK"]),)](x, out, N)
    (again,) = k2.choices().values()
    assert again.source == "store" and again.config == BEST
    from tritune.store import open_store

    st = open_store(str(tmp_path / "s.db"))
    (entry,) = st.entries()
    broken = st.candidates(entry.key, [BROKEN])
    assert len(broken) == 1 and broken[0].status is Status.COMPILE_FAILED and "ptxas fatal" in (broken[0].reason or "")


def test_a_widened_keys_check_is_prepared_beside_its_compiles(monkeypatch, tmp_path):
    """With a generated config to check, the output check's perturbed inputs are made on a helper thread once the
    (FAKE) compiles have started, not before them and not in the first check; the tuning then checks and serves as
    it would otherwise (the trap-free kernel: every neighbour agrees). FAKES as above; timings SYNTHETIC."""
    import threading

    from tritune.decorator import miss as tuner
    from tritune.engine import pipeline
    from tritune.store import keys as store_keys
    from tritune.verify import reference

    monkeypatch.setattr(tuner, "gpu_unavailable_reason", lambda: None)  # FAKE: "a GPU is here"
    monkeypatch.setattr(store_keys, "current_device", lambda: ("FAKE GPU", "9.0"))
    monkeypatch.setattr("tritune.device.current_target", lambda: None)
    monkeypatch.setattr(pipeline, "load_binary", lambda *a, **k: {})  # FAKE: every binary loads
    events: list[str] = []

    def fake_start(jit, todo, args, kwargs, target, jobs, timeout):  # FAKE compile workers
        events.append("compiles started")
        return FakeCompiling(list(todo), {}, workers=4)

    real = reference.perturbed_inputs

    def recording(args, seed):  # type: ignore[no-untyped-def]
        events.append(f"inputs {seed} on {threading.current_thread().name}")
        return real(args, seed)

    monkeypatch.setattr(pc, "start_precompile", fake_start)
    monkeypatch.setattr(reference, "perturbed_inputs", recording)

    class Timer:  # SYNTHETIC: a time for any config, the written BLOCK=256 fastest
        def measure_config(self, config, budget_s):  # type: ignore[no-untyped-def]
            replay = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {"n": N}, [
                LandscapePoint(config, Status.MEASURED, 0.005 if config["BLOCK"] == 256 else 0.01)]))
            return replay.measure_config(config, budget_s)

    written = [tritune.Config({"BLOCK": 256}, num_warps=4)]
    k = tritune.autotune(configs=written, key=["n"], store=str(tmp_path / "s.db"), timer=Timer(), jobs=4,
                         widen=True)(scale_kernel)  # fmt: skip
    x = torch.randn(N)
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(N, m["BLOCK"]),)](x, out, N)
    assert torch.equal(out, x * 2)
    assert events[0] == "compiles started"
    assert [e for e in events if e != "compiles started"] == ["inputs 1 on tritune-check-prep",
                                                               "inputs 2 on tritune-check-prep"]
    # two batches: the written config, then the neighbours of it (the fastest so far) (tritune.search.rings)
    assert events.count("compiles started") == 2
    (choice,) = k.choices().values()
    checked = (choice.stats or {})["checked"]
    assert checked["inputs"] == 3 and checked["checked"] > 0 and not checked["other"]

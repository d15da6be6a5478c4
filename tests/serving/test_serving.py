"""incremental=True on the CPU: Triton's interpreter runs the kernels for real; the timings come from a
FAKE clock and the background compiles from a FAKE compile service (tests/serving/incremental_fakes.py)."""

from __future__ import annotations

import pytest
import torch
import triton
from incremental_fakes import FakeClock, FakeCompiles

import tritune
from kernels import scale_kernel, wrong_value_kernel
from tritune.errors import CaptureMissError
from tritune.measure import MeasurePolicy
from tritune.serving.incremental import Incremental, nearest_tuned
from tritune.serving.state import IncrementalOptions, KeyState
from tritune.store import MemoryStore

CONFIGS = [triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)]
GRID = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
# The first config is the slowest, so every check's scratch run costs at most its estimate.
KEY = (1000, "torch.float32", "torch.float32")  # n and the dtypes of the two pointers
TIMES = {128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.9}


def make(kernel=scale_kernel, times=TIMES, fraction=0.1, **kw):
    clock, comp = FakeClock(times), FakeCompiles()
    promoted = []
    inc = Incremental(IncrementalOptions(gpu_fraction=fraction), clock=clock, compiler=comp, thread=False,
                      on_promote=lambda key, choice: promoted.append((key, choice)), **kw)  # fmt: skip
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(kernel)
    return k, inc, clock, comp, promoted


def call(k, inc, n=1000):
    x = torch.randn(n)
    out = torch.full((n,), -1.0)
    k[GRID](x, out, n)
    inc.resolver().poll()
    return x, out


def test_first_call_runs_provisional_and_compiles_only_it_on_the_callers_path():
    k, inc, clock, comp, _ = make()
    x, out = call(k, inc)
    assert torch.equal(out, x * 2)
    assert clock.log == [tritune.Config({"BLOCK": 128})]  # the first legal config served the first call
    assert sorted(c.kwargs["BLOCK"] for c in comp.asked) == [256, 512, 1024]  # the rest went to the service
    ch = k.choices()[KEY]
    assert ch.source == "provisional" and ch.stats["compiling"] == 3


def test_promotes_the_fastest_eliminates_the_slow_and_writes_the_store():
    k, inc, clock, comp, promoted = make()
    call(k, inc)
    comp.finish()
    for _ in range(300):
        x, out = call(k, inc)
        assert torch.equal(out, x * 2)  # every real call is right, whoever served it
        if promoted:
            break
    assert promoted, k.choices()
    key, choice = promoted[0]
    assert key == KEY and choice.config.kwargs["BLOCK"] == 512 and choice.source == "incremental"
    assert choice.stats["stop"] == "decided"
    assert set(choice.stats["eliminated"]) == {tritune.Config({"BLOCK": b}).id for b in (128, 256, 1024)}
    assert k.choices()[KEY] == choice
    (internal_key,) = inc.promoted
    served = k.tuner.tuning_key(k, internal_key, interpreter=True, measure=MeasurePolicy.SERVED)  # timed on calls
    stored = k.tuner.open_store().lookup_winner(served)
    assert stored is not None and stored.config.kwargs["BLOCK"] == 512
    assert stored.time_ms == pytest.approx(0.5, rel=0.02)  # the fake's time for 512, measured on real calls
    # Later calls take the normal path's cached choice: nothing more is timed.
    n_timed = len(clock.log)
    x, out = call(k, inc)
    assert torch.equal(out, x * 2) and len(clock.log) == n_timed
    assert k.best_config.kwargs["BLOCK"] == 512


def serve_until_promoted(k, inc, comp, promoted, n=1000, calls=300, failed=None):
    """The first call of key ``n``, the FAKE compiles finished (``failed``: BLOCK -> why), then up to ``calls``
    calls until ``promoted`` hears of a promotion."""
    call(k, inc, n=n)
    comp.finish(failed=failed)
    for _ in range(calls):
        call(k, inc, n=n)
        if promoted:
            break


def test_ties_are_ties():
    k, inc, _clock, comp, promoted = make(times={128: 1.0, 256: 0.6, 512: 0.6, 1024: 0.9})
    serve_until_promoted(k, inc, comp, promoted, calls=400)
    choice = promoted[0][1]
    assert {choice.config.kwargs["BLOCK"], *(int(t.split("BLOCK=")[1].split(",")[0]) for t in
                                               choice.stats["ties"])} == {256, 512}  # fmt: skip
    assert choice.stats["stop"] in ("tied", "budget")


def test_a_disagreeing_candidate_is_never_used_and_is_reported():
    # wrong_value_kernel computes 2.5*x at BLOCK=1024 (2*x otherwise); 1024 is the fake's fastest.
    k, inc, clock, comp, promoted = make(
        kernel=wrong_value_kernel, times={128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.3}
    )
    call(k, inc)
    comp.finish()
    for _ in range(300):
        x, out = call(k, inc)
        assert torch.equal(out, x * 2)  # the wrong config never served a real call
        if promoted:
            break
    bad = tritune.Config({"BLOCK": 1024})
    assert clock.log.count(bad) == 1  # its one scratch run
    choice = promoted[0][1]
    assert choice.config.kwargs["BLOCK"] == 512
    assert bad.id in choice.stats["disagreed"] and "differ" in choice.stats["disagreed"][bad.id]


def test_compile_failures_are_reported_and_skipped():
    k, inc, clock, comp, promoted = make()
    serve_until_promoted(k, inc, comp, promoted, failed={512: "ptxas crashed (fake)"})
    choice = promoted[0][1]
    assert choice.config.kwargs["BLOCK"] == 256
    assert tritune.Config({"BLOCK": 512}) not in clock.log
    assert "ptxas crashed" in choice.stats["failed"][tritune.Config({"BLOCK": 512}).id]


def test_extra_gpu_time_stays_within_the_fraction():
    k, inc, _clock, comp, promoted = make(fraction=0.05)
    call(k, inc)
    comp.finish()
    checked_at = None
    for i in range(400):
        call(k, inc)
        if checked_at is None and not k.choices()[KEY].stats["unchecked"]:
            checked_at = i
        if promoted:
            break
    b = inc.budget
    assert b.spent_ms > 0 and b.spent_ms <= 0.05 * b.earned_from_ms + 1e-9
    # Three checks of ~1 ms at 5% of ~1 ms per call: they cannot all fit in the first 40 calls.
    assert checked_at is not None and checked_at >= 40


def test_capture_records_only_the_provisional_config_and_refuses_new_keys():
    k, inc, clock, comp, promoted = make()
    call(k, inc)
    comp.finish()
    for _ in range(12):
        call(k, inc)
    clock.capture = True
    before = len(clock.log)
    for _ in range(20):
        x, out = call(k, inc)
        assert torch.equal(out, x * 2)
        assert k.best_config.kwargs["BLOCK"] == 128  # the provisional config, untimed
    assert len(clock.log) == before  # no trial, no scratch run, no timing while capturing
    with pytest.raises(CaptureMissError, match="warm up"):
        call(k, inc, n=2000)
    clock.capture = False
    for _ in range(300):
        call(k, inc)
        if promoted:
            break
    assert promoted and promoted[0][1].config.kwargs["BLOCK"] == 512  # on_promote: time to recapture


def test_a_new_key_starts_on_the_nearest_tuned_keys_winner():
    k, inc, clock, comp, promoted = make()
    serve_until_promoted(k, inc, comp, promoted, n=1024)
    clock.log.clear()
    call(k, inc, n=900)  # nearer 1024 than anything else: starts on 1024's winner
    assert clock.log == [tritune.Config({"BLOCK": 512})]


def test_nearest_tuned_rule():
    a, b, c = (tritune.Config({"BLOCK": v}) for v in (1, 2, 3))
    known = {(32, "fp16"): a, (128, "fp16"): b, (96, "fp32"): c}
    assert nearest_tuned((96, "fp16"), known, [a, b, c]) == b  # |log2 96 - log2 128| < |log2 96 - log2 32|
    assert nearest_tuned((96, "fp16"), known, [a, c]) == a  # 128's winner is not legal here
    assert nearest_tuned((96, "bf16"), known, [a, b, c]) is None  # other dtypes are no neighbours


def test_environment_switch_turns_it_on(monkeypatch):
    monkeypatch.setenv("TRITUNE_INCREMENTAL", "1")
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=False)(scale_kernel)
    assert isinstance(k._incremental, Incremental)
    monkeypatch.setenv("TRITUNE_INCREMENTAL", "0")
    assert tritune.autotune(configs=CONFIGS, key=["n"], store=False)(scale_kernel)._incremental is None


def test_outputs_naming_no_parameter_is_a_clear_error():
    k, inc, *_ = make(outputs=["result"])
    with pytest.raises(tritune.errors.ConfigError, match=r"scale_kernel: outputs= names \['result'\].*x_ptr"):
        call(k, inc)


def test_outputs_rule_restore_value_then_every_tensor():
    k, inc, *_ = make()
    x, out = torch.ones(4), torch.zeros(4)
    assert inc._output_names(k, (x, out, 4), {}) == ["x_ptr", "out_ptr"]  # nothing declared: every tensor
    k2 = tritune.autotune(configs=CONFIGS, key=["n"], store=False, restore_value=["out_ptr"],
                          incremental=Incremental(thread=False))(scale_kernel)  # fmt: skip
    assert k2._incremental._output_names(k2, (x, out, 4), {}) == ["out_ptr"]
    inc3 = Incremental(outputs=["out_ptr"], thread=False)
    assert inc3._output_names(k, (x, out, 4), {}) == ["out_ptr"]


def test_a_key_set_through_the_cache_is_not_tuned():
    k, inc, clock, comp, _ = make()
    k.cache[KEY] = CONFIGS[2]
    x, out = call(k, inc)
    assert torch.equal(out, x * 2) and clock.log == [] and comp.asked == []
    assert k.choices()[KEY].source == "user"


def serve_until_a_check(clock: FakeClock, comp: FakeCompiles) -> tuple[Incremental, KeyState]:
    """Serve calls of one key (checks may spend half the calls' device time) until its first check is charged;
    the Incremental and the key's state."""
    inc = Incremental(IncrementalOptions(gpu_fraction=0.5), clock=clock, compiler=comp, thread=False)
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    call(k, inc)
    comp.finish()
    while not (st := next(iter(inc.states.values()))).check_cost:
        call(k, inc)
    return inc, st


def test_a_check_is_charged_its_copies_scratch_run_and_comparison():
    clock, comp = FakeClock(TIMES, noise=0.0, span_ms=0.25), FakeCompiles()  # FAKE: each span "costs" 0.25 ms more
    inc, st = serve_until_a_check(clock, comp)
    first = clock.log[-1]  # the candidate's scratch run ends the check's launches
    assert st.check_cost == [pytest.approx(0.25 + 0.25 + TIMES[first.kwargs["BLOCK"]])]
    assert st.obs.samples[first][0] == pytest.approx(TIMES[first.kwargs["BLOCK"]])  # the check's run is a sample
    assert st.budget.spent_ms == pytest.approx(st.check_cost[0]) and inc.budget.spent_ms == st.budget.spent_ms
    run = TIMES[first.kwargs["BLOCK"]]  # its parts, per key and for the whole mode (a key's state goes at promotion)
    assert st.check_parts == inc.check_parts == [(pytest.approx(0.25), pytest.approx(run), pytest.approx(0.25))]


def test_a_check_is_not_charged_the_hosts_gaps_around_its_scratch_run():
    # FAKE clock with 0.1 ms of FAKE host time per clock call: on an idle device a span measures the host's
    # work inside it. The copies and the comparison each span one gap; the scratch run has its own events.
    clock, comp = FakeClock(TIMES, noise=0.0, span_ms=0.25, host_ms=0.1), FakeCompiles()
    _inc, st = serve_until_a_check(clock, comp)
    run = TIMES[clock.log[-1].kwargs["BLOCK"]]
    assert st.check_cost == [pytest.approx(2 * (0.25 + 0.1) + run)]


def test_checks_go_fastest_first_by_the_nearest_tuned_keys_timings():
    k, inc, _clock, comp, promoted = make(times={128: 1.0, 256: 0.6, 512: 0.5, 1024: 0.9})
    serve_until_promoted(k, inc, comp, promoted, n=1024, calls=400)
    assert promoted
    call(k, inc, n=900)  # starts on 1024's winner, 512; then checks 256 (0.6 ms there); 1024 and 128 were
    (st,) = inc.states.values()  # 1.8x and 2x the best there, beyond prune_ratio=1.3: pruned
    assert [c.kwargs["BLOCK"] for c in st.check_order] == [512, 256]
    assert sorted(c.kwargs["BLOCK"] for c in st.pruned) == [128, 1024]

"""What the caller's thread pays and shares: IncrementalOptions.switch_interval_us (the interpreter's switch interval
lowered while a key tunes and put back once every key is promoted, SwitchInterval) and a key's first call timed by
part. Timings come from a FAKE clock and compiles from a FAKE compile service (incremental_fakes); the switch
interval is the real interpreter's."""

from __future__ import annotations

import sys

import pytest
import torch
import triton
from incremental_fakes import FakeClock, FakeCompiles

import tritune
from kernels import scale_kernel
from tritune.store import MemoryStore
from tritune.tune.incremental import Incremental
from tritune.tune.serving_runtime import SwitchInterval
from tritune.tune.serving_state import IncrementalOptions

CONFIGS = [triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)]
GRID = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
TIMES = {128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.9}


@pytest.fixture(autouse=True)
def _interval():
    before = sys.getswitchinterval()
    yield
    SwitchInterval._held.clear()
    sys.setswitchinterval(before)


def call(k, n=1000):
    x = torch.randn(n)
    out = torch.full((n,), -1.0)
    k[GRID](x, out, n)
    return x, out


def test_the_interval_is_lowered_while_a_key_tunes_and_restored_at_its_promotion():
    sys.setswitchinterval(0.005)
    comp = FakeCompiles()
    inc = Incremental(IncrementalOptions(switch_interval_us=200), clock=FakeClock(TIMES), compiler=comp,
                      thread=False, store_thread=False)  # fmt: skip
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    assert sys.getswitchinterval() == pytest.approx(0.005, rel=0.01)  # nothing tunes yet
    call(k)
    assert sys.getswitchinterval() == pytest.approx(200e-6, rel=0.01)
    inc.resolver().poll()
    comp.finish()
    for _ in range(400):
        x, out = call(k)
        assert torch.equal(out, x * 2)
        inc.resolver().poll()
        if inc.promoted:
            break
    assert inc.promoted, k.choices()
    assert not inc.states
    assert sys.getswitchinterval() == pytest.approx(0.005, rel=0.01)
    assert SwitchInterval.holders() == 0


def test_without_the_option_the_interval_is_left_alone():
    sys.setswitchinterval(0.004)
    inc = Incremental(IncrementalOptions(), clock=FakeClock(TIMES), compiler=FakeCompiles(), thread=False,
                      store_thread=False)  # fmt: skip
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    call(k)
    assert inc.states
    assert sys.getswitchinterval() == pytest.approx(0.004, rel=0.01)


def test_holders_nest_the_lowest_applies_and_the_first_value_comes_back():
    sys.setswitchinterval(0.005)
    a, b = object(), object()
    SwitchInterval.hold(a, 0.001)
    SwitchInterval.hold(b, 0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.0002, rel=0.01)
    SwitchInterval.release(b)
    assert sys.getswitchinterval() == pytest.approx(0.001, rel=0.01)
    SwitchInterval.release(b)  # twice: nothing
    SwitchInterval.release(a)
    assert sys.getswitchinterval() == pytest.approx(0.005, rel=0.01)


def test_a_higher_request_never_raises_the_interval():
    sys.setswitchinterval(0.001)
    a = object()
    SwitchInterval.hold(a, 0.01)
    assert sys.getswitchinterval() == pytest.approx(0.001, rel=0.01)
    SwitchInterval.release(a)
    assert sys.getswitchinterval() == pytest.approx(0.001, rel=0.01)


def test_a_value_someone_else_set_meanwhile_is_left_alone():
    sys.setswitchinterval(0.005)
    a = object()
    SwitchInterval.hold(a, 0.0002)
    sys.setswitchinterval(0.003)  # the application's own choice, while tritune held it
    SwitchInterval.release(a)
    assert sys.getswitchinterval() == pytest.approx(0.003, rel=0.01)


def test_a_switch_interval_of_zero_is_refused():
    with pytest.raises(ValueError, match="switch_interval_us=0"):
        IncrementalOptions(switch_interval_us=0)


def test_a_keys_first_call_is_timed_by_part_and_the_parts_add_up():
    inc = Incremental(IncrementalOptions(), clock=FakeClock(TIMES), compiler=FakeCompiles(), thread=False,
                      store_thread=False)  # fmt: skip
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    x, out = call(k)
    assert torch.equal(out, x * 2)
    call(k)  # the key's second call: no new parts
    (parts,) = inc.first_parts
    assert set(parts) == {"screen", "lookup", "state", "compiles", "launcher", "launch", "total"}
    assert all(v >= 0 for v in parts.values())
    assert sum(v for n, v in parts.items() if n != "total") <= parts["total"] + 1e-6

"""A key's first call on the caller's thread, timed by part (Incremental.first_parts). Timings come from a FAKE
clock and compiles from a FAKE compile service (incremental_fakes)."""

from __future__ import annotations

import torch
import triton
from incremental_fakes import FakeClock, FakeCompiles

import tritune
from kernels import scale_kernel
from tritune.serving.incremental import Incremental
from tritune.serving.state import IncrementalOptions
from tritune.store import MemoryStore

CONFIGS = [triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)]
GRID = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
TIMES = {128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.9}


def call(k, n=1000):
    x = torch.randn(n)
    out = torch.full((n,), -1.0)
    k[GRID](x, out, n)
    return x, out


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

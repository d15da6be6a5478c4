"""A grid past the launch limits is refused before the launch, with one line naming the config."""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

import tritune
from tritune.outcome import Status
from tritune.verify import verify


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _args(key, device):
    x = torch.randn(key["n"], device=device)
    return x, torch.empty_like(x), key["n"]


def test_a_grid_past_the_launch_limits_is_refused_before_the_launch() -> None:
    huge = tritune.Config({"BLOCK": 16})
    fine = tritune.Config({"BLOCK": 64})
    wl = tritune.Workload(
        name="copy", kernel=_copy, configs=[huge, fine], args=_args, outputs=[1],
        grid=lambda meta, key: (2**40,) if meta["BLOCK"] == 16 else (triton.cdiv(key["n"], meta["BLOCK"]),),
        oracle=lambda args: [args[0].clone()], keys=[{"n": 128}],
    )  # fmt: skip
    t = time.monotonic()
    report = verify([wl])
    assert time.monotonic() - t < 60
    by = {c.config: c for c in report.workloads[0].candidates}
    assert by[huge].status is Status.ERROR and "1099511627776" in by[huge].reason and "not launched" in by[huge].reason
    assert "\n" not in by[huge].reason
    assert by[fine].status is Status.CORRECT

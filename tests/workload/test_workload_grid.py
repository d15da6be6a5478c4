"""A workload's grid in either form: Triton's ``grid(meta)`` or ``grid(meta, key)``, read from its signature."""

from __future__ import annotations

import pytest
import torch
import triton

import tritune
from kernels import elementwise_args, scale_kernel
from tritune import Config
from tritune.errors import WorkloadError


def _workload(grid, **kw):
    return tritune.Workload(
        name="w", kernel=scale_kernel, configs=[Config({"BLOCK": b}) for b in (256, 512)],
        args=elementwise_args, grid=grid, outputs=[1], oracle=lambda a: [a[0] * 2.0], keys=[{"n": 1000}], **kw,
    )  # fmt: skip


def test_tritons_one_argument_grid_sees_the_kernels_arguments_and_the_config():
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)

    w = _workload(grid)
    assert not w.grid_takes_key
    w.make_args({"n": 1000}, "cpu")
    assert w.grid_for(Config({"BLOCK": 256}, num_warps=2), {"n": 1000}) == (4,)
    assert seen[0]["n"] == 1000 and seen[0]["BLOCK"] == 256 and seen[0]["num_warps"] == 2
    assert not any(isinstance(v, torch.Tensor) for v in seen[0].values())  # scalars only: no tensor is kept


def test_a_one_argument_grid_before_any_launch_makes_the_arguments_itself():
    w = _workload(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),))
    assert w.grid_for(Config({"BLOCK": 512}), {"n": 1000}) == (2,)


def test_the_two_argument_form_is_kept():
    w = _workload(lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),))
    assert w.grid_takes_key and w.grid_for(Config({"BLOCK": 256}), {"n": 1000}) == (4,)


def test_verify_runs_every_candidate_with_a_triton_style_grid():
    report = tritune.verify(_workload(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)))
    assert report.ok, report.summary()


@pytest.mark.parametrize("grid", [lambda: (1,), lambda meta, key, extra: (1,), lambda *, meta: (1,)])
def test_a_grid_that_takes_neither_form_is_refused_when_the_workload_is_made(grid):
    with pytest.raises(WorkloadError, match=r"cannot be called as grid\(meta\) \(Triton's form\) nor as grid\(meta, key\)"):
        _workload(grid)


"""GPU tests: run on the device machine with `python -m pytest -m gpu tests/gpu`; they skip at run time elsewhere."""

import os

import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune.device import gpu_unavailable_reason


def need_gpu():
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")


@triton.jit
def _gelu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, x * 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=m)


@triton.jit
def _accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)


CONFIGS = [tritune.Config({"BLOCK": b}, num_warps=w) for b in (128, 1024, 4096) for w in (1, 4, 8)] + [
    tritune.Config({"BLOCK": 300}, num_warps=4)
]


@pytest.mark.gpu
def test_decorator_times_and_picks_on_gpu(tmp_path):
    need_gpu()
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=str(tmp_path / "s.db"))(_gelu)
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    torch.cuda.synchronize()
    choice = next(iter(k.choices().values()))
    assert choice.source == "timed", choice
    assert k.best_config in CONFIGS and k.best_config.kwargs["BLOCK"] != 300
    torch.testing.assert_close(out, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    print("picked", k.best_config.id, choice.detail)
    # A second decorator over the same store finds the winner without timing.
    k2 = tritune.autotune(configs=CONFIGS, key=["n"], store=str(tmp_path / "s.db"))(_gelu)
    k2[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    assert next(iter(k2.choices().values())).source == "store"
    assert k2.best_config == k.best_config


@pytest.mark.gpu
def test_restore_value_protects_in_place_kernels(tmp_path):
    need_gpu()
    k = tritune.autotune(configs=CONFIGS[:-1], key=["n"], restore_value=["out_ptr"], store=False)(_accumulate)
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.ones(n, device="cuda")
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 1.0 + x)  # timing runs did not accumulate into out


@pytest.mark.gpu
def test_tune_session_on_gpu(tmp_path):
    need_gpu()
    from tritune.tune.session import TuneOptions, tune
    from tritune.workload import load_workloads

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    (w,) = load_workloads(os.path.join(root, "examples", "gelu.py"))
    res = tune([w], keys=[{"n": 1 << 20}], options=TuneOptions(jobs=4, ceilings=False))
    e = res.workloads[0]
    assert e.extra["winner"] is not None
    assert all(c.status is tritune.Status.MEASURED for c in e.candidates)

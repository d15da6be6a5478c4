"""GPU tests: run on the device machine with `python -m pytest -m gpu tests/gpu`; they skip at run time elsewhere."""

import os
import warnings

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
def test_a_widened_winner_nobody_wrote_is_checked_warm_against_the_written_best(tmp_path):
    """A widened list of one small block: a neighbour wins the flushed race; it serves only after the warm check
    against the written config, whose two medians are real GPU times in the choice's stats."""
    need_gpu()
    written = [tritune.Config({"BLOCK": 128}, num_warps=4)]
    k = tritune.autotune(configs=written, key=["n"], store=str(tmp_path / "w.db"), widen=True)(_gelu)
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    choice = next(iter(k.choices().values()))
    if k.best_config in written and "warm_check" not in choice.stats:
        pytest.skip("the written config won the flushed race: nothing to check warm")
    check = choice.stats["warm_check"]
    assert check["written"].startswith("BLOCK=128,num_warps=4")
    assert check["warm_ms"] > 0 and check["written_warm_ms"] > 0
    assert (k.best_config in written) == (not check["kept"])
    print("warm check", check)


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
    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune
    from tritune.workload import load_workloads

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    (w,) = load_workloads(os.path.join(root, "examples", "gelu.py"))
    res = tune([w], keys=[{"n": 1 << 20}], ceilings=False, options=TuneOptions(jobs=4))
    e = res.workloads[0]
    assert e.extra["winner"] is not None
    assert all(c.status is tritune.Status.MEASURED for c in e.candidates)


@pytest.mark.gpu
def test_fast_dispatch_matches_and_falls_back_on_misaligned_pointers():
    need_gpu()
    k = tritune.autotune(configs=CONFIGS[:-1], key=["n"], store=False)(_gelu)
    n = 4096
    base = torch.randn(n + 1, device="cuda")
    x, out = base[:n], torch.empty(n, device="cuda")
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    k[grid](x, out, n)
    k[grid](x, out, n)
    assert len(k._hot) == 1 and all(getattr(fl, "__name__", "") == "launch" for _, fl in k._hot.values())
    torch.testing.assert_close(out, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    xm, outm = base[1:], torch.empty(n + 1, device="cuda")[1:]  # 4-byte offset: not 16-byte aligned
    k[grid](xm, outm, n)
    torch.testing.assert_close(outm, torch.nn.functional.gelu(xm), atol=1e-5, rtol=1e-5)
    assert len(k._hot) == 2  # a second launcher for the other specialization


@pytest.mark.gpu
def test_graph_capture_hit_works_and_miss_raises():
    need_gpu()
    k = tritune.autotune(configs=CONFIGS[:-1], key=["n"], store=False)(_gelu)
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    k[grid](x, out, n)  # warm up: tuned before capture
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        k[grid](x, out, n)
        torch.cuda.current_stream().synchronize()
        with torch.cuda.graph(g):
            k[grid](x, out, n)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5)
    m = 1 << 15
    y = torch.randn(m, device="cuda")
    g2 = torch.cuda.CUDAGraph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that the aborted capture is empty
        with pytest.raises(tritune.CaptureMissError, match="warm up"):
            with torch.cuda.graph(g2):
                k[lambda meta: (triton.cdiv(m, meta["BLOCK"]),)](y, torch.empty_like(y), m)


def _both_ways(kernel_fn, configs, key, grid, make_args, outputs, **kw):
    """Run one kernel under triton.autotune and under tritune.autotune; return both sets of outputs."""
    res = []
    for deco in (triton.autotune, lambda **k: tritune.autotune(store=False, **k)):
        k = deco(configs=configs, key=key, **kw)(triton.jit(kernel_fn))
        torch.manual_seed(0)
        args = make_args()
        k[grid](*args)
        torch.cuda.synchronize()
        res.append([args[i].clone() for i in outputs])
    return res


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["gelu", "accumulate_restore", "rowsum"])
def test_same_results_as_triton_autotune(which):
    need_gpu()
    from kernels import rowsum_kernel

    cfgs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 1024) for w in (2, 4)]
    n = 1 << 20
    if which == "gelu":
        a, b = _both_ways(_gelu.fn, cfgs, ["n"], lambda m: (triton.cdiv(n, m["BLOCK"]),),
                          lambda: (torch.randn(n, device="cuda"), torch.empty(n, device="cuda"), n), [1])
    elif which == "accumulate_restore":
        a, b = _both_ways(_accumulate.fn, cfgs, ["n"], lambda m: (triton.cdiv(n, m["BLOCK"]),),
                          lambda: (torch.randn(n, device="cuda"), torch.ones(n, device="cuda"), n), [1],
                          restore_value=["out_ptr"])
    else:
        rows, m_ = 64, 4000
        a, b = _both_ways(rowsum_kernel.fn, cfgs[:4], ["n"], lambda m: (rows,),
                          lambda: (torch.randn(rows, m_, device="cuda"), torch.empty(rows, device="cuda"), m_), [1])
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
def test_the_comparison_warms_once_per_dtype_and_compares_as_before():
    need_gpu()
    import importlib

    from tritune.verify.compare import compare, warm_compare

    cmp = importlib.import_module("tritune.verify.compare")  # (tritune.verify.compare is also the function's name)

    cmp._WARMED.clear()  # as in a fresh process
    dev = torch.device("cuda", torch.cuda.current_device())
    assert not cmp.compare_warmed(dev)
    assert cmp.warm_compare_dtypes([(torch.float32, "cuda")]) == 1 and cmp.compare_warmed(dev)  # tune_key's early one
    assert cmp.warm_compare_dtypes([(torch.float32, dev)]) == 0  # "cuda" is the current device's
    outs = [torch.zeros(8, dtype=torch.float16, device="cuda"), torch.ones(9, dtype=torch.float16, device="cuda"),
            torch.zeros(4, dtype=torch.int32, device="cuda"), torch.zeros(2)]  # fmt: skip
    assert warm_compare(outs, atol=1e-2, rtol=1e-2) == 2  # fp16 and int32 on the GPU; the CPU tensor skipped
    assert warm_compare(outs[:1], atol=1e-2, rtol=1e-2) == 0  # once per process
    exp = torch.ones(1 << 20, dtype=torch.float16, device="cuda")
    got = exp.clone()
    got[7] = 2.0
    r = compare(got, exp, atol=1e-2, rtol=1e-2)
    assert not r.ok and r.mismatched == 1 and r.first_bad_index == 7

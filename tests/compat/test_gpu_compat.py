"""GPU side of the conformance suite: `TRITUNE_GPU_TESTS=1 python -m pytest -m gpu tests/compat`.
Skips at run time without a driver. Checks the fast dispatch of keyword calls and of heuristics over the
decorator against triton.autotune, and that run() returns the compiled kernel a libentry-style wrapper keeps."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune.device import gpu_unavailable_reason


def need_gpu() -> None:
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")


@triton.jit
def _act_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ACT: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * SCALE
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=mask)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]


@pytest.mark.gpu
def test_keyword_calls_and_heuristics_dispatch_fast_and_agree_with_triton() -> None:
    need_gpu()
    tt = tritune.autotune(CONFIGS, ["n"], store=False)(_act_kernel)
    ref = triton.autotune(CONFIGS, ["n"])(_act_kernel)
    heur = triton.heuristics({"SCALE": lambda a: 2 if a["n"] > 1000 else 1})(
        tritune.autotune(CONFIGS, ["n"], store=False)(_act_kernel))
    for n in (1000, 4096):
        x = torch.randn(n, device="cuda")
        grid = lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
        for act in ("relu", "none", "relu"):
            a, b = torch.empty_like(x), torch.empty_like(x)
            tt[grid](x, a, n, ACT=act, SCALE=3)
            ref[grid](x, b, n, ACT=act, SCALE=3)
            torch.testing.assert_close(a, b)
            c = torch.empty_like(x)
            heur[grid](x, c, n, ACT=act)
            torch.testing.assert_close(c, torch.relu(x * (2 if n > 1000 else 1)) if act == "relu" else x * (2 if n > 1000 else 1))
    assert tt._hot_kw and all(launch is not None for _, launch in tt._hot_kw.values())  # the fast path was built
    assert heur.fn._hot_kw


@pytest.mark.gpu
def test_heuristics_under_the_decorator_agree_with_triton() -> None:
    need_gpu()
    scale = {"SCALE": lambda a: 2 if a["n"] % a["BLOCK"] == 0 else 3}
    tt = tritune.autotune(CONFIGS, ["n"], store=False)(triton.heuristics(scale)(_act_kernel))
    ref = triton.autotune(CONFIGS, ["n"])(triton.heuristics(scale)(_act_kernel))
    for n in (1024, 1000, 1024, 1000):
        x = torch.randn(n, device="cuda")
        a, b = torch.empty_like(x), torch.empty_like(x)
        grid = lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
        tt[grid](x, a, n, ACT="none")
        ref[grid](x, b, n, ACT="none")
        blk = tt.best_config.kwargs["BLOCK"]
        torch.testing.assert_close(a, x * (2 if n % blk == 0 else 3))
        if ref.best_config.kwargs["BLOCK"] == blk:
            torch.testing.assert_close(a, b)
    assert tt._hot_kw and all(launch is not None for _, launch in tt._hot_kw.values())


@pytest.mark.gpu
def test_heuristics_under_the_decorator_positional_calls_agree_with_triton() -> None:
    """All-positional calls under @heuristics take the choice from the call-key cache: heuristic
    values still follow each call (n = 1024 vs 1000 share no key but alternate), outputs as Triton's."""
    need_gpu()
    heur = {"ACT": lambda a: "relu" if a["n"] % a["BLOCK"] == 0 else "none", "SCALE": lambda a: 2}
    tt = tritune.autotune(CONFIGS, ["n"], store=False)(triton.heuristics(heur)(_act_kernel))
    ref = triton.autotune(CONFIGS, ["n"])(triton.heuristics(heur)(_act_kernel))
    for n in (1024, 1000, 1024, 1000, 1024):
        x = torch.randn(n, device="cuda")
        a, b = torch.empty_like(x), torch.empty_like(x)
        grid = lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
        tt[grid](x, a, n)
        ref[grid](x, b, n)
        for out, k in ((a, tt), (b, ref)):
            relu = n % k.best_config.kwargs["BLOCK"] == 0
            torch.testing.assert_close(out, torch.relu(x * 2) if relu else x * 2)
    # positional calls keep, per call key, one fast launcher per set of heuristic values
    launchers = [f for ent in tt._heur_hot.values() for f in ent[2].values()]
    assert len(tt._heur_hot) == 2 and launchers and all(f is not None for f in launchers)


@pytest.mark.gpu
def test_run_returns_the_compiled_kernel() -> None:
    need_gpu()
    tt = tritune.autotune(CONFIGS, ["n"], store=False)(_act_kernel)
    x = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    kernel = tt.run(x, out, 4096, grid=(4,), warmup=False, ACT="relu", SCALE=1)
    assert hasattr(kernel, "run") and hasattr(kernel, "function")  # a CompiledKernel, launchable directly
    again = tt.run(x, out, 4096, grid=(4,), warmup=False, ACT="relu", SCALE=1)
    assert again is kernel


@pytest.mark.gpu
def test_libtuner_style_bench_times_with_tritunes_timer() -> None:
    need_gpu()
    with tritune.patched_triton():

        class OwnLoop(triton.runtime.Autotuner):  # type: ignore[misc,name-defined]
            def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                self.nargs = dict(zip(self.arg_names, args))
                timings = {c: self._bench(*args, config=c, **kwargs) for c in self.prune_configs(kwargs)}
                self.configs_timings = timings
                config = self.best_config = min(timings, key=lambda c: timings[c][0])
                ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
                self.nargs = None
                return ret

    k = OwnLoop(_act_kernel, _act_kernel.arg_names, CONFIGS, ["n"], None, None)
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n, ACT="relu", SCALE=1)
    torch.testing.assert_close(out, torch.relu(x))
    times = [t[0] for t in k.configs_timings.values()]
    assert len(times) == len(CONFIGS) and all(0 < t < 10 for t in times)

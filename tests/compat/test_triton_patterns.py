"""Call patterns of libraries built on Triton's autotuner, each run under Triton's own autotuner and under
``tritune.patched_triton()``: what a caller can observe must be equal.

The patterns follow flash-linear-attention (keys on a config-set ``BV``, ``CachedAutotuner`` with shipped configs,
``cache_results=True``), FlagGems (``LibTuner``'s own loop), xformers (``kernel.cache`` replaced), gemlite (a pruner
that yields a new config), SGLang/Liger-style kernels, torch.compile (Dynamo's reading and re-wrapping of a tuner,
Inductor's reading of it), Triton's observability hooks (``TRITON_PRINT_AUTOTUNING``, ``knobs.autotuning.listener``)
and tools that wrap ``Autotuner._bench``/``run`` at class level. Each pattern returns an observation (a dict); an
exception escaping a pattern fails the test.

CPU only, under Triton's interpreter. What the harness changes, and why (none of it changes what either engine
decides):

* Triton's autotuner times with ``driver.active.get_benchmarker()``, and a CPU has no driver. A FAKE driver is made
  active while a pattern runs; its benchmarker runs the call once and reports a time that grows with every call, so
  the first config timed wins. tritune, which times nothing under the interpreter, runs the first legal config: the
  two pick alike. Patterns about ``do_bench`` pass their own FAKE ``do_bench``.
* Under the interpreter ``triton.jit`` gives an ``InterpretedFunction``; Triton's autotuner walks ``.fn`` down to a
  ``JITFunction`` for the listener and the results file and would fail, so ``triton.runtime.autotuner.JITFunction``
  is widened to accept both while a pattern runs. The results-file patterns also give ``InterpretedFunction`` a
  ``cache_key`` (a hash of the source), which only a ``JITFunction`` has.
* Dynamo treats Triton kernels specially only where ``has_triton()`` (a GPU); the torch.compile patterns force it and
  give ``InterpretedFunction`` the ``params`` Dynamo reads (:func:`dynamo_on_cpu`).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import json
import os
import re
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
import triton.runtime.autotuner as at
from triton import knobs
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

import tritune

pytestmark = pytest.mark.filterwarnings("ignore::tritune.UntunedWarning")

#: Triton 3.7 and later (the autotuning listener came with the behaviours that 3.6 lacks).
NEWER_THAN_36 = hasattr(knobs.autotuning, "listener")


class FakeDriver:
    """A FAKE active driver: only what Triton's autotuner asks of ``driver.active`` on these paths. Its benchmarker
    runs the call once and reports 1 ms, 2 ms, ... in call order, so the first config timed wins."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def get_benchmarker(self) -> Callable[..., list[float]]:
        def bench(fn: Callable[[], Any], quantiles: Any = None) -> list[float]:
            fn()
            self.times.append(float(len(self.times) + 1))
            return [self.times[-1]] * 3

        return bench

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: Any = None) -> int:
        return 0


def later_wins(order: list[float]) -> tuple[Callable[..., list[float]], list[Any]]:
    """A FAKE ``do_bench(fn, quantiles)`` (Triton's documented signature, no default): its i-th call runs ``fn`` and
    reports ``order[i]`` ms (99 after the list). Returns it and the list of ``quantiles`` it was called with."""
    calls: list[Any] = []

    def do_bench(fn: Callable[[], Any], quantiles: Any) -> list[float]:
        fn()
        t = float(order[len(calls)]) if len(calls) < len(order) else 99.0
        calls.append(quantiles)
        return [t, t, t]

    return do_bench, calls


def first_runs_out() -> Callable[..., list[float]]:
    """A FAKE ``do_bench(fn, quantiles)`` whose first call runs out of shared memory (as Triton's benchmarker
    raises it) and whose i-th call after that runs ``fn`` and reports i+1 ms."""
    from triton.runtime.errors import OutOfResources

    seen: list[int] = []

    def do_bench(fn: Callable[[], Any], quantiles: Any) -> list[float]:
        seen.append(1)
        if len(seen) == 1:
            raise OutOfResources(1 << 20, 1 << 16, "shared memory")
        fn()
        return [float(len(seen))] * 3

    return do_bench


# -- helpers ---------------------------------------------------------------------------------------------------
def sig(cfg: Any) -> Any:
    """What identifies a config, in the library's own kwargs order."""
    if cfg is None:
        return None
    return (tuple(cfg.kwargs.items()), cfg.num_warps, cfg.num_stages)


def cache_view(cache: Any) -> dict[str, Any]:
    return {repr(k): sig(v) for k, v in dict(cache).items()}


def grid_b(n: int) -> Callable[[dict[str, Any]], tuple[int]]:
    return lambda m: (triton.cdiv(n, m["B"]),)


_ADDR = re.compile(r" at 0x[0-9a-f]+")
_SECS = re.compile(r"finished after \d+\.\d+s")


def normalize_out(s: str) -> str:
    """Printed text without what differs between any two runs (addresses, seconds)."""
    return _SECS.sub("finished after Xs", _ADDR.sub("", s))


def scale_kernel() -> Any:
    """y = 2 * x, the kernel most patterns tune (B set by the configs); a new function per call."""

    @triton.jit
    def scale(x, y, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    return scale


def configs3() -> list[Any]:
    return [
        triton.Config({"B": 32}, num_warps=2),
        triton.Config({"B": 16}, num_warps=4),
        triton.Config({"B": 64}, num_warps=8, num_stages=2),
    ]


KEY = (100, "torch.float32", "torch.float32")


def xy(n: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(n), torch.empty(n)


def tune_once(k: Any, n: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = xy(n)
    k[grid_b(n)](x, y, n)
    return x, y


def source_cache_key(mp: pytest.MonkeyPatch) -> None:
    """Give InterpretedFunction the ``cache_key`` a JITFunction has (module docstring)."""
    mp.setattr(InterpretedFunction, "cache_key",
               property(lambda self: hashlib.sha256(inspect.getsource(self.fn).encode()).hexdigest()),
               raising=False)  # fmt: skip


@contextlib.contextmanager
def dynamo_on_cpu(mp: pytest.MonkeyPatch) -> Iterator[None]:
    """Let Dynamo treat interpreted Triton kernels as it treats jitted ones on a GPU (module docstring)."""
    import torch._dynamo
    import torch.utils._triton as ut

    def params(self: Any) -> list[Any]:
        out = []
        for i, p in enumerate(inspect.signature(self.fn).parameters.values()):
            ann = p.annotation
            constexpr = ann is tl.constexpr or (isinstance(ann, str) and "constexpr" in ann)
            out.append(types.SimpleNamespace(name=p.name, num=i, is_constexpr=constexpr))
        return out

    mp.setattr(ut, "has_triton", lambda: True)  # builder.py imports it from here inside the function
    mp.setattr(triton, "JITFunction", (JITFunction, InterpretedFunction))
    mp.setattr(InterpretedFunction, "params", property(params), raising=False)
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()


def compiled(kernel: Any, launch: Callable[..., Any] | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
    """``torch.compile(fullgraph=True)`` (eager backend: the HOP runs the tuner object) of a function launching it."""

    def f(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        if launch is None:
            kernel[grid_b(x.numel())](x, y, x.numel())
        else:
            launch(kernel, x, y)
        return y

    return torch.compile(f, backend="eager", fullgraph=True)


def raised(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except Exception as e:
        return type(e).__name__
    return None


# -- the patterns ------------------------------------------------------------------------------------------------
Pattern = Callable[[pytest.MonkeyPatch], dict[str, Any]]
PATTERNS: dict[str, Pattern] = {}


def pattern(fn: Pattern) -> Pattern:
    PATTERNS[fn.__name__] = fn
    return fn


# ---- torch.compile ----
@pattern
def compile_plain_eager(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
        x, _ = xy()
        out = compiled(k)(x)
        return {"ok": bool(torch.equal(out, 2 * x)), "cache": cache_view(k.cache)}


@pattern
def compile_heuristics_under_tuner(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """fla/Liger shape, @autotune over @heuristics: torch re-wraps with triton.autotune(configs, key=[],
    prune_configs_by={'perf_model', 'early_config_prune', 'configs_top_k'}); the original tuner stays untouched."""
    with dynamo_on_cpu(mp):

        @triton.jit
        def k2(x, y, n, B: tl.constexpr, EVEN: tl.constexpr):
            i = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

        even = triton.heuristics({"EVEN": lambda a: a["n"] % a["B"] == 0})
        k = triton.autotune(configs=configs3(), key=["n"])(even(k2))
        x, _ = xy()
        out = compiled(k)(x)
        return {"ok": bool(torch.equal(out, 2 * x)), "orig_cache": cache_view(k.cache)}


@pattern
def compile_launch_num_warps(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A launch option passed at the call under torch.compile: torch folds it into each config and re-wraps."""
    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
        x, _ = xy()
        out = compiled(k, launch=lambda kk, x, y: kk[grid_b(x.numel())](x, y, x.numel(), num_warps=8))(x)
        return {"ok": bool(torch.equal(out, 2 * x))}


@pattern
def compile_perf_model_prune(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: list[int] = []

    def perf_model(**kw: Any) -> float:
        seen.append(kw["B"])
        return {32: 3.0, 16: 1.0, 64: 2.0}[kw["B"]]

    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"], prune_configs_by={"perf_model": perf_model, "top_k": 2})(
            scale_kernel())
        x, _ = xy()
        out = compiled(k)(x)
        return {"ok": bool(torch.equal(out, 2 * x)), "perf_model_saw": sorted(set(seen))}


@pattern
def compile_early_prune(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    def early(configs: list[Any], nargs: dict[str, Any], **kw: Any) -> list[Any]:
        return [c for c in configs if c.kwargs["B"] >= 32]

    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"], prune_configs_by={"early_config_prune": early})(
            scale_kernel())
        x, _ = xy()
        return {"ok": bool(torch.equal(compiled(k)(x), 2 * x))}


@pattern
def compile_heuristics_and_perf_model(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """Heuristics under the tuner AND a perf model: torch re-wraps twice (heuristics, then pruning)."""

    def perf_model(**kw: Any) -> float:
        return float(kw["B"])

    with dynamo_on_cpu(mp):

        @triton.jit
        def k3(x, y, n, B: tl.constexpr, EVEN: tl.constexpr):
            i = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

        k = triton.autotune(configs=configs3(), key=["n"], prune_configs_by={"perf_model": perf_model, "top_k": 2})(
            triton.heuristics({"EVEN": lambda a: a["n"] % a["B"] == 0})(k3))
        x, _ = xy()
        return {"ok": bool(torch.equal(compiled(k)(x), 2 * x))}


@pattern
def compile_config_pre_hook_refused(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A Config with a pre_hook under fullgraph=True: torch refuses, naming the feature."""
    with dynamo_on_cpu(mp):
        cfgs = [triton.Config({"B": 32}, pre_hook=lambda nargs: None), triton.Config({"B": 16})]
        k = triton.autotune(configs=cfgs, key=["n"])(scale_kernel())
        x, _ = xy()
        try:
            compiled(k)(x)
            return {"raised": None}
        except Exception as e:  # torch._dynamo.exc.Unsupported
            return {"raised": type(e).__name__, "why": "pre_hook and post_hook are not supported" in str(e)}


@pattern
def compile_user_pre_hook_refused(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"], pre_hook=lambda kwargs, reset_only=False: None)(
            scale_kernel())
        x, _ = xy()
        try:
            compiled(k)(x)
            return {"raised": None}
        except Exception as e:
            return {"raised": type(e).__name__, "why": "pre_hook and post_hook are not supported" in str(e)}


@pattern
def compile_run_method(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """kernel.run(*args, grid=..., warmup=False) under torch.compile (Dynamo's call_run path)."""
    with dynamo_on_cpu(mp):
        k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
        x, _ = xy()
        launch = lambda kk, x, y: kk.run(x, y, x.numel(), grid=grid_b(x.numel()), warmup=False)  # noqa: E731
        return {"ok": bool(torch.equal(compiled(k, launch=launch)(x), 2 * x))}


@pattern
def inductor_reads_tuner(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """What Inductor's UserDefinedTritonKernel.get_kernel_and_metadata and the HOP read off the tuner object."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    from torch._inductor.ir import UserDefinedTritonKernel

    k = triton.autotune(configs=configs3(), key=["n"], reset_to_zero=["y"], restore_value=["x"])(scale_kernel())
    fake = types.SimpleNamespace(kernel_idx=kernel_side_table.add_kernel(k))
    fn, configs, restore, reset = UserDefinedTritonKernel.get_kernel_and_metadata(fake)
    names = ("perf_model", "early_config_prune", "configs_top_k", "user_defined_pre_hook", "user_defined_post_hook",
             "num_warmups", "num_reps", "use_cuda_graph", "keys", "arg_names")  # fmt: skip
    return {"fn_is_inner": fn is k.fn, "configs": [sig(c) for c in configs], "restore": list(restore),
            "reset": list(reset), "isinstance": isinstance(k, at.Autotuner), "same_list": k.configs is k.configs,
            "attrs": {a: repr(getattr(k, a, "MISSING")) for a in names}}  # fmt: skip


@pattern
def torch_rewrap_prune_entries(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """Exactly the call torch's triton_kernel_wrap makes when it re-creates a tuner."""
    k = triton.autotune(configs=configs3(), key=[],
                        prune_configs_by={"perf_model": None, "early_config_prune": None, "configs_top_k": 1.0})(
        scale_kernel())  # fmt: skip
    x, y = xy()
    k[grid_b(100)](x, y, 100)
    return {"ok": bool(torch.equal(y, 2 * x)), "top_k": k.configs_top_k, "cache": cache_view(k.cache)}


@pattern
def library_configs_top_k_entry(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A library passing configs_top_k itself: Triton ignores the entry, so top_k stays 1.0 and the perf model
    prunes nothing (it is not even called)."""
    seen: list[int] = []

    def perf_model(**kw: Any) -> float:
        seen.append(kw["B"])
        return float(kw["B"])

    do_bench, calls = later_wins([5, 4, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench,
                        prune_configs_by={"perf_model": perf_model, "configs_top_k": 1})(scale_kernel())  # fmt: skip
    tune_once(k)
    return {"benched": len(calls), "perf_model_calls": len(seen), "best": sig(k.best_config)}


# ---- Triton's observability ----
@pattern
def print_knob(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, _ = later_wins([3, 1, 2])
    knobs.autotuning.print = True
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tune_once(k)
        tune_once(k)  # cached: silent
    return {"stdout": normalize_out(buf.getvalue())}


@pattern
def print_env_var(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, _ = later_wins([3, 1, 2])
    mp.setenv("TRITON_PRINT_AUTOTUNING", "1")
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tune_once(k)
    return {"stdout": normalize_out(buf.getvalue())}


@pattern
def print_without_do_bench(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """The driver's (FAKE) benchmarker under Triton, tritune's untimed first config: the same lines."""
    knobs.autotuning.print = True
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tune_once(k)
    return {"stdout": normalize_out(buf.getvalue())}


@pattern
def print_failed_config_and_silent_cases(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A config whose do_bench runs out of resources prints Triton's failure line; a lone config and a pruned-to-one
    key print nothing."""
    knobs.autotuning.print = True
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=first_runs_out())(scale_kernel())
    lone = triton.autotune(configs=configs3()[:1], key=["n"])(scale_kernel())
    one_left = triton.autotune(configs=configs3(), key=["n"],
                               prune_configs_by={"early_config_prune": lambda cs, na, **kw: cs[:1]})(scale_kernel())
    outs = []
    for kernel in (k, lone, one_left):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            tune_once(kernel)
        outs.append(normalize_out(buf.getvalue()))
    return {"stdout": outs}


@pattern
def listener_called(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    if not hasattr(knobs.autotuning, "listener"):
        return {"skipped": "this Triton has no knobs.autotuning.listener"}
    got: list[dict[str, Any]] = []

    def listener(*, fn: Any, key: Any, best_config: Any, configs_timings: Any, duration: Any, cache_hit: Any) -> None:
        got.append({"fn_is_jit": isinstance(fn, (JITFunction, InterpretedFunction)), "fn_name": fn.__name__,
                    "key": key, "best": sig(best_config), "best_is_given": best_config in k.configs,
                    "timed": [sig(c) for c in configs_timings], "timings": [list(v) for v in configs_timings.values()],
                    "duration_is_float": isinstance(duration, float), "cache_hit": cache_hit})  # fmt: skip

    knobs.autotuning.listener = listener
    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    tune_once(k)  # cached: no call
    return {"calls": got}


@pattern
def listener_single_pruned_silent(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    if not hasattr(knobs.autotuning, "listener"):
        return {"skipped": True}
    got: list[int] = []
    knobs.autotuning.listener = lambda **kw: got.append(1)
    do_bench, calls = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench,
                        prune_configs_by={"early_config_prune": lambda cs, na, **kw: cs[1:2]})(scale_kernel())
    lone = triton.autotune(configs=configs3()[:1], key=["n"])(scale_kernel())
    tune_once(k)
    tune_once(lone)
    return {"listener_calls": len(got), "benched": len(calls), "cache": cache_view(k.cache), "best": sig(k.best_config)}


# ---- a user do_bench ----
@pattern
def do_bench_documented_signature(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """do_bench(fn, quantiles) with no default for quantiles, called once per config; the 2nd config is fastest."""
    do_bench, calls = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    x, y = tune_once(k)
    return {"calls": calls, "best": sig(k.best_config), "ok": bool(torch.equal(y, 2 * x))}


@pattern
def do_bench_returns_float(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: list[int] = []

    def do_bench(fn: Callable[[], Any], quantiles: Any) -> float:  # FAKE: 3, 2, 1 ms, the last config wins
        fn()
        seen.append(1)
        return float(4 - len(seen))

    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    return {"calls": len(seen), "best": sig(k.best_config), "timings": list(k.configs_timings.values())}


@pattern
def do_bench_ties_go_to_the_first(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, calls = later_wins([2, 1, 1])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    return {"calls": len(calls), "best": sig(k.best_config)}


@pattern
def do_bench_out_of_resources_is_inf(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=first_runs_out())(scale_kernel())
    tune_once(k)
    t = k.configs_timings
    return {"best": sig(k.best_config), "inf_configs": [sig(c) for c, v in t.items() if v[0] == float("inf")]}


@pattern
def do_bench_other_error_propagates(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    def do_bench(fn: Callable[[], Any], quantiles: Any) -> list[float]:  # FAKE: a benchmarker that breaks
        raise KeyError("broken benchmarker")

    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    return {"raised": raised(lambda: tune_once(k)), "cache": cache_view(k.cache)}


# ---- class-level wrappers of Autotuner ----
@pattern
def class_level_bench_wrapper(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """SD.Next / tuning-capture tools: wrap Autotuner._bench at class level, record (config, median)."""
    aut = triton.runtime.autotuner.Autotuner  # as such a tool looks it up
    orig = aut._bench
    seen: list[Any] = []

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        res = orig(self, *args, config=config, **meta)
        seen.append((sig(config), res[0], sorted(meta), sorted(self.nargs or {})))
        return res

    mp.setattr(aut, "_bench", _bench)
    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    return {"seen": seen, "best": sig(k.best_config)}


@pattern
def class_level_bench_wrapper_vetoes(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A wrapper that turns a config's timing into inf (an exception-broadening patch): the choice uses its value."""
    aut = triton.runtime.autotuner.Autotuner
    orig = aut._bench

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        res = orig(self, *args, config=config, **meta)
        return [float("inf")] * 3 if config.kwargs["B"] == 16 else res

    mp.setattr(aut, "_bench", _bench)
    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    return {"best": sig(k.best_config)}


@pattern
def class_level_run_wrapper(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    aut = triton.runtime.autotuner.Autotuner
    orig = aut.run
    seen: list[list[str]] = []

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(sorted(kwargs))
        return orig(self, *args, **kwargs)

    mp.setattr(aut, "run", run)
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    tune_once(k)
    tune_once(k)
    return {"run_calls": seen}


@pattern
def timings_and_bench_time(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    before = (hasattr(k, "configs_timings"), hasattr(k, "bench_time"))
    tune_once(k)
    t = k.configs_timings
    return {"had_before": before, "timings": {repr(sig(c)): list(v) for c, v in t.items()},
            "keys_are_given": all(any(c is g for g in k.configs) for c in t),
            "bench_time_float": isinstance(k.bench_time, float)}  # fmt: skip


# ---- cache_results=True: Triton's *.autotune.json ----
def _autotune_files(root: str) -> list[dict[str, Any]]:
    files = []
    for where, _, names in os.walk(root):
        for f in names:
            if f.endswith(".autotune.json"):
                with open(os.path.join(where, f)) as fh:
                    files.append({"name": f, "dir_len": len(os.path.basename(where)), "json": json.load(fh)})
    return files


def _cached_results_tuner(mp: pytest.MonkeyPatch, do_bench: Callable[..., Any]) -> Any:
    """A cache_results tuner over a fresh kernel. Triton turns the option off under the interpreter when the tuner
    is made, so it is made with interpret off, then run under the interpreter."""
    inner = scale_kernel()
    with knobs.runtime.scope():
        knobs.runtime.interpret = False
        return triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench, cache_results=True)(inner)


@pattern
def cache_results_writes_triton_file(mp: pytest.MonkeyPatch, tmp: str) -> dict[str, Any]:
    """<cache dir>/<base32 of a sha256>/<name>.autotune.json, in Triton's format."""
    source_cache_key(mp)
    mp.setenv("TRITON_CACHE_DIR", tmp)
    do_bench, _ = later_wins([3, 1, 2])
    tune_once(_cached_results_tuner(mp, do_bench))
    return {"files": _autotune_files(tmp)}


@pattern
def cache_results_second_tuner_reads_file(mp: pytest.MonkeyPatch, tmp: str) -> dict[str, Any]:
    """A second process (here: a second tuner over the same source) finds Triton's file: no benchmark, no printed
    line, the listener hears cache_hit=True and duration=None, and best_config is a new Config."""
    source_cache_key(mp)
    mp.setenv("TRITON_CACHE_DIR", tmp)
    heard: list[Any] = []
    if hasattr(knobs.autotuning, "listener"):
        knobs.autotuning.listener = lambda **kw: heard.append((kw["cache_hit"], kw["duration"] is None,
                                                              len(kw["configs_timings"])))
    runs = []
    for _ in range(2):
        do_bench, calls = later_wins([3, 1, 2])
        k = _cached_results_tuner(mp, do_bench)
        knobs.autotuning.print = True
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            tune_once(k)
        knobs.autotuning.print = False
        runs.append({"benched": len(calls), "best": sig(k.best_config), "printed": bool(buf.getvalue()),
                     "best_is_given": any(k.best_config is c for c in k.configs)})  # fmt: skip
    return {"runs": runs, "listener": heard}


# ---- keys and the cache ----
@pattern
def key_names_config_param(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """fla's chunk_delta_h: the key names BV, a value the configs set: Triton leaves it out of the key."""
    k = triton.autotune(configs=configs3(), key=["n", "B"])(scale_kernel())
    tune_once(k)
    return {"keys": list(k.cache)}


@pattern
def key_default_not_passed(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    @triton.jit
    def kd(x, y, n, B: tl.constexpr, SCALE: tl.constexpr = 2):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + i, tl.load(x + i, mask=i < n) * SCALE, mask=i < n)

    k = triton.autotune(configs=configs3(), key=["n", "SCALE"])(kd)
    tune_once(k)
    x, y = xy()
    k[grid_b(100)](x, y, 100, SCALE=2)  # passed now: another key
    return {"keys": list(k.cache)}


@pattern
def key_heuristic_under_tuner(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A key naming a value that @triton.heuristics under the tuner computes: not in the call, not in the key."""

    @triton.jit
    def kh(x, y, n, B: tl.constexpr, EVEN: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    even = triton.heuristics({"EVEN": lambda a: a["n"] % 2 == 0})
    k = triton.autotune(configs=configs3(), key=["n", "EVEN"])(even(kh))
    tune_once(k)
    return {"keys": list(k.cache)}


@pattern
def key_tensor_kwargs_order(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """dtypes enter the key in the order of positional arguments, then keywords as passed."""
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    x = torch.randn(100)
    y = torch.empty(100, dtype=torch.float64)
    k[grid_b(100)](n=100, y=y, x=x)
    return {"keys": list(k.cache)}


@pattern
def key_value_by_keyword(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    x, y = xy()
    k[grid_b(100)](x, y, n=100)
    k[grid_b(100)](x, y, 100)
    return {"keys": list(k.cache)}


@pattern
def cache_preset_before_first_call(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """fla's CachedAutotuner / shipped configs: kernel.cache[key] = cfg (not among the configs) before the call."""
    do_bench, calls = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    shipped = triton.Config({"B": 128}, num_warps=1, num_stages=1)
    k.cache[KEY] = shipped
    x, y = tune_once(k)
    return {"benched": len(calls), "best_is_shipped": k.best_config is shipped, "ok": bool(torch.equal(y, 2 * x))}


@pattern
def cache_set_and_popped_after_tuning(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, calls = later_wins([1, 2, 3, 3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    first = sig(k.best_config)
    k.cache[KEY] = k.configs[2]
    tune_once(k)
    after_set = (k.best_config is k.configs[2], len(calls))
    k.cache.pop(KEY)
    tune_once(k)  # tuned again
    return {"first": first, "after_set": after_set, "after_pop": sig(k.best_config), "benched": len(calls)}


@pattern
def cache_updated_in_bulk(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """dict methods that write several entries (update, setdefault, |=) are entries set like any other."""
    do_bench, calls = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    seen = [sig(k.best_config)]
    k.cache.update({KEY: k.configs[2]})
    tune_once(k)
    seen.append(sig(k.best_config))
    k.cache |= {KEY: k.configs[1]}
    tune_once(k)
    seen.append(sig(k.best_config))
    key64 = (64, "torch.float32", "torch.float32")
    k.cache.setdefault(key64, k.configs[2])
    tune_once(k, 64)
    seen.append(sig(k.best_config))
    return {"seen": seen, "benched": len(calls)}


@pattern
def cache_dict_replaced(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """xformers' set_autotuner_cache: kernel.cache = {key: cfg}, then kernel.cache = {} (refilled by tuning)."""
    do_bench, calls = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    tune_once(k)
    first = sig(k.best_config)
    before = len(calls)
    mine = {KEY: k.configs[1]}
    k.cache = mine
    tune_once(k)
    after = (k.best_config is k.configs[1], k.cache is mine, len(calls) - before)
    mine[KEY] = k.configs[2]  # the caller's dict, changed in place
    tune_once(k)
    changed = k.best_config is k.configs[2]
    k.cache = {}
    tune_once(k)
    return {"first": first, "after": after, "changed": changed, "refilled": list(k.cache)}


@pattern
def cache_library_mapping(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """A library's own mapping (FlagGems puts a sqlite-backed table there): in, [] and []= as Triton uses them."""

    class Table:
        def __init__(self) -> None:
            self.rows: dict[Any, Any] = {}
            self.reads = 0

        def __contains__(self, key: Any) -> bool:
            return key in self.rows

        def __getitem__(self, key: Any) -> Any:
            self.reads += 1
            return self.rows[key]

        def __setitem__(self, key: Any, value: Any) -> None:
            self.rows[key] = value

    do_bench, calls = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel())
    k.cache = table = Table()
    tune_once(k)
    tune_once(k)
    return {"rows": cache_view(table.rows), "read": table.reads > 0, "benched": len(calls),
            "best_is_row": k.best_config is table.rows[KEY]}  # fmt: skip


@pattern
def single_config_kernel(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    seen = {"prune": 0}

    def early(cs: list[Any], na: dict[str, Any], **kw: Any) -> list[Any]:
        seen["prune"] += 1
        return cs

    do_bench, calls = later_wins([1])
    only = triton.Config({"B": 32}, num_warps=2)
    k = triton.autotune(configs=[only], key=["n"], do_bench=do_bench,
                        prune_configs_by={"early_config_prune": early})(scale_kernel())
    k.cache[KEY] = triton.Config({"B": 64})  # a lone config never reads the cache
    x, y = tune_once(k)
    return {"cache": cache_view(k.cache), "benched": len(calls), "pruned": seen["prune"],
            "best_is_only": k.best_config is only, "ok": bool(torch.equal(y, 2 * x))}  # fmt: skip


@pattern
def empty_configs_default(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=[], key=["n"])(triton.heuristics({"B": lambda a: 32})(scale_kernel()))
    x, y = tune_once(k)
    return {"configs": [sig(c) for c in k.configs], "cache": cache_view(k.cache), "ok": bool(torch.equal(y, 2 * x))}


@pattern
def configs_assigned_then_called(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """Pinning a tuner to one config (the project's real-library benchmark does this)."""
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    pin = triton.Config({"B": 64}, num_warps=8, num_stages=2)
    k.configs = [pin]
    x, y = tune_once(k)
    return {"best_is_pin": k.best_config is pin, "cache": cache_view(k.cache), "ok": bool(torch.equal(y, 2 * x))}


@pattern
def configs_reassigned_keep_the_cache(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """Assigning another list keeps the cache's entries, which later calls use, as Triton does."""
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    tune_once(k)
    chosen = k.best_config
    k.configs = configs3()[1:]
    tune_once(k)
    return {"same_object": k.best_config is chosen, "cache": cache_view(k.cache)}


@pattern
def pruned_to_one_config(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    do_bench, calls = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench,
                        prune_configs_by={"early_config_prune": lambda cs, na, **kw: [cs[2]]})(scale_kernel())
    tune_once(k)
    return {"benched": len(calls), "cache": cache_view(k.cache), "best": sig(k.best_config)}


@pattern
def pruner_yields_a_new_config(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """gemlite: the pruner yields one brand-new Config (from its own JSON); that object is cached and used."""
    made: list[Any] = []

    def pruner(cs: list[Any], na: dict[str, Any], **kw: Any) -> Iterator[Any]:
        made.append(triton.Config({"B": 128}, num_warps=2, num_stages=1))
        yield made[-1]

    k = triton.autotune(configs=configs3(), key=["n"],
                        prune_configs_by={"early_config_prune": lambda _c, _n, **_kw: list(pruner(_c, _n, **_kw))})(
        scale_kernel())  # fmt: skip
    x, y = tune_once(k)
    return {"best_is_made": k.best_config is made[0], "cached_is_made": k.cache[KEY] is made[0],
            "ok": bool(torch.equal(y, 2 * x))}  # fmt: skip


@pattern
def best_config_identity_and_order(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    cfgs = [triton.Config({"ZB": 16, "AB": 1}, num_warps=2), triton.Config({"ZB": 32, "AB": 1}, num_warps=4)]

    @triton.jit
    def kz(x, y, n, ZB: tl.constexpr, AB: tl.constexpr):
        i = tl.program_id(0) * ZB + tl.arange(0, ZB)
        tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    k = triton.autotune(configs=cfgs, key=["n"])(kz)
    x, y = xy()
    k[lambda m: (triton.cdiv(100, m["ZB"]),)](x, y, 100)
    b = k.best_config
    return {"str": str(b), "kwargs": list(b.kwargs), "is_original": b is cfgs[0], "in_configs": b in k.configs,
            "index": k.configs.index(b), "cache_value_is_original": next(iter(k.cache.values())) is cfgs[0],
            "json": json.dumps(b.__dict__, default=str)}  # fmt: skip


@pattern
def prune_and_perf_model_arguments(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def early(configs: list[Any], nargs: dict[str, Any], **kw: Any) -> list[Any]:
        seen["prune_kwargs"] = sorted(kw)
        seen["prune_nargs"] = sorted(nargs)
        seen["configs_are_given"] = [c is g for c, g in zip(configs, k.configs)]
        return configs

    def perf_model(**kw: Any) -> float:
        seen["perf_model_kwargs"] = sorted(kw)
        return float(kw["B"])

    do_bench, _ = later_wins([2, 1, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench,
                        prune_configs_by={"early_config_prune": early, "perf_model": perf_model, "top_k": 2})(
        scale_kernel())  # fmt: skip
    x, y = xy()
    k[grid_b(100)](x, y, n=100)  # n by keyword: in kwargs, not in nargs
    return {**seen, "best": sig(k.best_config)}


# ---- subclasses after the libraries ----
@pattern
def fla_cached_autotuner_preset(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """fla.ops.utils.cache.CachedAutotuner: run() builds Triton's key itself, puts a shipped config in self.cache
    under it, then calls super().run(); the kernel keys on B, a value the configs set."""
    base = triton.runtime.autotuner.Autotuner

    class CachedAutotuner(base):  # type: ignore[misc,valid-type]
        def __init__(self, fn: Any, arg_names: Any, configs: Any, key: Any, reset_to_zero: Any, restore_value: Any,
                     **kwargs: Any) -> None:  # fmt: skip
            super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)
            self.kernel_name = fn.fn.__name__ if hasattr(fn, "fn") else fn.__name__

        def run(self, *args: Any, **kwargs: Any) -> Any:
            named = dict(zip(self.arg_names, args))
            tracked = {k: v for k, v in {**named, **kwargs}.items() if k in self.arg_names}
            key = [tracked[n] for n in self.keys if n in tracked]
            key += [str(a.dtype) for a in tracked.values() if hasattr(a, "dtype")]
            if tuple(key) not in self.cache:
                self.cache[tuple(key)] = triton.Config({"B": 128}, num_warps=1, num_stages=1, num_ctas=1, maxnreg=None,
                                                       pre_hook=None)  # fmt: skip
            return super().run(*args, **kwargs)

    do_bench, calls = later_wins([1, 2, 3])
    inner = scale_kernel()
    k = CachedAutotuner(inner, inner.arg_names, configs3(), ["n", "B"], None, None, do_bench=do_bench,
                        cache_results=False)  # fmt: skip
    x, y = tune_once(k)
    return {"benched": len(calls), "best": sig(k.best_config), "cache": cache_view(k.cache),
            "ok": bool(torch.equal(y, 2 * x))}  # fmt: skip


@pattern
def fla06_rejected_shipped_config(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """fla 0.6: a shipped config that early_config_prune rejects is popped from self.cache: Triton then tunes."""
    base = triton.runtime.autotuner.Autotuner

    def early(configs: list[Any], nargs: dict[str, Any], **kw: Any) -> list[Any]:
        return [c for c in configs if c.kwargs["B"] <= 64]

    class CachedAutotuner(base):  # type: ignore[misc,valid-type]
        def run(self, *args: Any, **kwargs: Any) -> Any:
            cfg = triton.Config({"B": 128}, num_warps=1, num_stages=1)
            self.cache[KEY] = cfg  # as if an earlier lookup had put it
            configs = self.early_config_prune([*self.configs, cfg], dict(zip(self.arg_names, args)), **kwargs)
            if cfg not in configs:
                self.cache.pop(KEY, None)
            return super().run(*args, **kwargs)

    do_bench, _ = later_wins([1, 2, 3])
    inner = scale_kernel()
    k = CachedAutotuner(inner, inner.arg_names, configs3(), ["n"], None, None, do_bench=do_bench,
                        prune_configs_by={"early_config_prune": early})  # fmt: skip
    tune_once(k)
    return {"best": sig(k.best_config), "cache": cache_view(k.cache)}


@pattern
def libtuner_style_own_loop(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """FlagGems' LibTuner: its own run(): self.prune_configs(kwargs), self._bench per config, its own cache mapping,
    self.best_config = ..., self.pre_hook(full_nargs, reset_only=True), then self.fn.run(...)."""
    base = triton.runtime.Autotuner

    class LibTuner(base):  # type: ignore[misc,valid-type]
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.cache = {}

        def run(self, *args: Any, **kwargs: Any) -> Any:
            self.nargs = dict(zip(self.arg_names, args))
            key = tuple(self.nargs[k] for k in self.keys)
            if key not in self.cache:
                timings = {c: self._bench(*args, config=c, **kwargs) for c in self.prune_configs(kwargs)}
                best = min(timings, key=timings.get)  # type: ignore[arg-type]
                self.cache[key] = best
                self.pre_hook({**self.nargs, **kwargs, **best.all_kwargs()}, reset_only=True)
                self.configs_timings = timings
            config = self.cache[key]
            self.best_config = config
            out = self.fn.run(*args, **kwargs, **config.all_kwargs())
            self.nargs = None
            return out

    do_bench, calls = later_wins([3, 1, 2])
    inner = scale_kernel()
    k = LibTuner(inner, inner.arg_names, configs3(), ["n"], None, None, do_bench=do_bench)
    x, y = tune_once(k)
    return {"benched": len(calls), "quantiles": calls[:1], "best": sig(k.best_config),
            "ok": bool(torch.equal(y, 2 * x))}


@pattern
def tuner_attribute_surface(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """What subclasses and tools read off a fresh tuner (fla, FlagGems, SGLang, TritonParse, torch)."""
    inner = scale_kernel()
    post = lambda kwargs, exception: None  # noqa: E731
    k = triton.autotune(configs=configs3(), key=["n"], reset_to_zero=["y"], restore_value=["x"], post_hook=post)(inner)
    return {
        "fn_is_inner": k.fn is inner, "base_fn": k.base_fn.__name__, "arg_names": list(k.arg_names),
        "keys": list(k.keys), "reset_to_zero": list(k.reset_to_zero), "restore_value": list(k.restore_value),
        "user_pre": k.user_defined_pre_hook, "user_post": k.user_defined_post_hook, "post_is_user": k.post_hook is post,
        "top_k": k.configs_top_k, "perf_model": k.perf_model, "early": k.early_config_prune,
        "cache_results": k.cache_results, "cache_is_dict": isinstance(k.cache, dict), "cache_empty": not k.cache,
        "configs_are_given": all(isinstance(c, triton.Config) for c in k.configs),
        "do_bench_callable": callable(k.do_bench), "restore_copies": getattr(k, "restore_copies", {}),
    }  # fmt: skip


# ---- misc eager patterns ----
@pattern
def launch_option_at_call_eager(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    x, y = xy()
    return {"raised": raised(lambda: k[grid_b(100)](x, y, 100, num_warps=8))}


@pattern
def conflicting_meta_parameter(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    x, y = xy()
    try:
        k[grid_b(100)](x, y, 100, B=32)
        return {"raised": None}
    except Exception as e:
        return {"raised": type(e).__name__, "msg_head": str(e).split(".")[0]}


@pattern
def reset_and_restore_during_tuning(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    @triton.jit
    def acc(x, out, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.atomic_add(out + i, tl.load(x + i, mask=i < n), mask=i < n)
        tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench, reset_to_zero=["out"],
                        restore_value=["x"])(acc)  # fmt: skip
    x = torch.ones(100)
    out = torch.full((100,), 7.0)
    k[grid_b(100)](x, out, 100)
    return {"out": out[:3].tolist(), "x": x[:3].tolist()}


@pattern
def reset_to_zero_none_argument(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    @triton.jit
    def kn(x, y, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(x + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    do_bench, _ = later_wins([1, 2, 3])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench, reset_to_zero=["y"], restore_value=["x"])(kn)
    x = torch.ones(100)
    try:
        k[grid_b(100)](x, None, 100)
        return {"raised": None, "x": x[:2].tolist()}
    except Exception as e:
        return {"raised": type(e).__name__}


@pattern
def heuristics_under_tuner_eager(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: list[int] = []

    @triton.jit
    def kh(x, y, n, B: tl.constexpr, EVEN: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    def even(a: dict[str, Any]) -> bool:
        seen.append(a["B"])
        return a["n"] % a["B"] == 0

    do_bench, _ = later_wins([3, 1, 2])
    k = triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(triton.heuristics({"EVEN": even})(kh))
    x, y = tune_once(k, 128)
    return {"heuristic_saw_chosen_B": k.best_config.kwargs["B"] in seen, "best": sig(k.best_config),
            "ok": bool(torch.equal(y, 2 * x))}  # fmt: skip


@pattern
def unknown_names(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    """Names that are no kernel argument in key, reset_to_zero or restore_value (3.7+: ValueError at decoration)."""
    out = {}
    for what in ("key", "reset_to_zero", "restore_value"):
        kw: dict[str, Any] = {"key": ["n"], what: ["n", "nope"] if what == "key" else ["nope"]}
        with pytest.MonkeyPatch.context() as quiet:
            quiet.setattr("warnings.warn", lambda *a, **k: None)  # tritune's note under a Triton that takes them
            out[what] = raised(lambda kw=kw: triton.autotune(configs=configs3(), **kw)(scale_kernel()))
    return out


@pattern
def warmup_method(mp: pytest.MonkeyPatch) -> dict[str, Any]:
    k = triton.autotune(configs=configs3(), key=["n"])(scale_kernel())
    x, y = xy()
    ret = k.warmup(x, y, 100, grid=(1,))
    return {"len": len(ret), "cache": cache_view(k.cache)}


# -- running ------------------------------------------------------------------------------------------------------
#: Where a pattern's outcome depends on the installed Triton's version and tritune follows the newer behaviour.
NEWER_ONLY = {
    "pruned_to_one_config": "Triton 3.6 times a lone pruned config; tritune uses it untimed, as 3.7 and later do",
    "reset_to_zero_none_argument": "Triton 3.6 zeroes a None argument (AttributeError); tritune skips it, as 3.7+",
    "print_failed_config_and_silent_cases": "Triton 3.6 times and prints a lone pruned config; tritune does not",
}


@contextlib.contextmanager
def engine(name: str, mp: pytest.MonkeyPatch) -> Iterator[None]:
    """Run under Triton's autotuner or tritune's switch, with the harness's FAKE driver and widened JITFunction
    check (module docstring), and Triton's autotuning knobs restored afterwards."""
    from triton.runtime.driver import driver

    mp.setattr(driver, "_active", FakeDriver())
    mp.setattr(at, "JITFunction", (JITFunction, InterpretedFunction))
    with knobs.autotuning.scope(), contextlib.ExitStack() as stack:
        knobs.autotuning.print = False
        if hasattr(knobs.autotuning, "listener"):
            knobs.autotuning.listener = None
        if name == "tritune":
            stack.enter_context(tritune.patched_triton())
        yield


def observe(name: str, engine_name: str, tmp_path: Any) -> dict[str, Any]:
    fn = PATTERNS[name]
    with pytest.MonkeyPatch.context() as mp, engine(engine_name, mp):
        if "tmp" in inspect.signature(fn).parameters:
            where = tmp_path / engine_name
            where.mkdir()
            return fn(mp, str(where))  # type: ignore[call-arg]
        return fn(mp)


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_agrees(name: str, tmp_path: Any) -> None:
    if name in NEWER_ONLY and not NEWER_THAN_36:
        pytest.skip(NEWER_ONLY[name])
    expected = observe(name, "triton", tmp_path)
    got = observe(name, "tritune", tmp_path)
    assert got == expected


def test_tritune_adds_its_line_on_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    """Triton's printed lines are on stdout, word for word; tritune's own line (how the config was chosen) is on
    stderr, after Triton's summary."""
    with pytest.MonkeyPatch.context() as mp, engine("tritune", mp):
        knobs.autotuning.print = True
        do_bench, _ = later_wins([3, 1, 2])
        tune_once(triton.autotune(configs=configs3(), key=["n"], do_bench=do_bench)(scale_kernel()))
    out, err = capsys.readouterr()
    assert out.count("Autotuning kernel scale with config") == 3 and "tritune" not in out
    assert err.startswith("tritune: scale key (100, 'torch.float32', 'torch.float32'): B=16,num_warps=4")
    assert "benched" in err



def test_torch_compile_rewrap_is_tuned_by_tritune_under_the_switch() -> None:
    """torch re-creates a tuner over heuristics with ``triton.runtime.autotuner.autotune``: under the switch that is
    tritune's, so the object the compiled graph runs (the HOP's side table) is tritune's, and it made the choice."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    with pytest.MonkeyPatch.context() as mp, engine("tritune", mp), dynamo_on_cpu(mp):

        @triton.jit
        def k4(x, y, n, B: tl.constexpr, EVEN: tl.constexpr):
            i = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

        even = triton.heuristics({"EVEN": lambda a: a["n"] % a["B"] == 0})
        k = triton.autotune(configs=configs3(), key=["n"])(even(k4))
        before = set(kernel_side_table.id_to_kernel)
        x, _ = xy()
        assert torch.equal(compiled(k)(x), 2 * x)
        made = [kernel_side_table.id_to_kernel[i] for i in set(kernel_side_table.id_to_kernel) - before]
        rewrapped = [m for m in made if m is not k and isinstance(m, tritune.Autotuned)]
        assert rewrapped and all(m.keys == [] for m in rewrapped)
        assert any(c.source == "untuned" for m in rewrapped for c in m.choices().values())

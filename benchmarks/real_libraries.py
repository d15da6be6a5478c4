"""FlagGems, Liger-Kernel and flash-linear-attention ops, and Triton's own tutorials, unchanged, under Triton's
autotuner and under ``tritune.patch_triton()``.

Installs nothing: ``flag_gems`` (5.0.2), ``liger_kernel`` (0.8.5) and ``fla`` (``fla-core`` 0.6.0) must be
importable (`gpu.sh libs` puts the wheels of `.whl/` on PYTHONPATH); an op whose library did not import is
reported as not run. The ``tut_`` ops (``lib="tutorials"``) call Triton's tutorials 03 (``matmul``), 05 (its layer
norm forward kernel, through an autotuner whose one config is the tutorial's own launch choice) and 06
(``attention``, forward and backward), imported unedited from ``$TRITUNE_TUTORIALS`` or else ``.ref/tutorials``
(``bash benchmarks/fetch.sh tutorials`` writes them there); without those files they are reported as not run too.
Each engine runs in its own long-lived child process with its own empty ``TRITON_CACHE_DIR`` and empty tritune
store (``TRITUNE_STORE``); the parent drives both children over a line protocol, so that the interleaved
measurements alternate engines on the one GPU:

- cold: the first call of each op (autotuning included), wall time, from an empty cache;
- outputs: each op's output under tritune against Triton's run, within the library's tolerance
  (FlagGems' per-dtype resolution as rtol; atol 1e-4 times the reduced dimension for matmuls; tutorial 06's
  attention: its own test's atol 1e-2, rtol 0);
- op time: the whole op call after tuning, CUDA events, rounds alternating engines; the ratio is the median
  of the per-round ratios (both engines measured back to back in each round);
- winner: each engine's winning config of every autotuner the op reached (``best_config``, for Triton's
  ``Autotuner`` and FlagGems' ``LibTuner`` alike), both pinned in turn in the Triton process and timed in
  alternating blocks on the same inputs (``remeasure_winners``): the ratio is the kernels' alone. An
  autotuner run at several keys a call (fla's chunked kernels) has each engine's config of every run recorded
  in the order of the runs (``sequence``, with each run's key arguments, ``sequence_keys``), and pinned run by run
  where both engines ran the same keys in the same order;
- dispatch: host microseconds per cached call (chunks of 50 calls, each queued behind a GPU sleep that covers
  it, so the GPU's throughput is never what is timed), as the calling thread's CPU time (wall time, also kept,
  differed by 0.85-1.17x between the two processes on identical code on an H200), median of per-round
  ratios; a control loop (a torch add, identical in both processes) is timed in every round beside it; ``reaches`` says whether
  cached calls still reach an autotuner's ``run`` (counted in a short loop after tuning): a ``libentry``
  wrapper caches the compiled kernel, so its calls bypass both engines, and the summary's median dispatch
  ratio is taken over the ops whose calls do reach one.

  PYTHONPATH=<flag_gems>:<liger>:src python3 benchmarks/real_libraries.py --out results/real_libs [--quick] [--ops mm,bmm]

``--widen`` runs the tritune engine with ``patch_triton(widen=True)``: each kernel's own configs and their
neighbours, screened, searched and checked against the kernel's first config (``--widen 2``: up to two steps from
each; ``--widen derived``: the list and the space derived from each kernel's source, where it has one). The
winners' comparison is then the
widened winner against Triton's winner of the library's own list, and the summary adds, per autotuner, the space
(given, generated, legal) and tritune's own race of its winner against the best given config. The tutorial ops
are widened the same way: tutorial 03's matmul configs, 05's launch choice and 06's attention forward configs.

``--resume RESULTS_JSON`` counts an earlier call's finished ops (same GPU, driver, torch, triton and libraries) with
this call's and runs only the others: a run longer than one call's time limit adds up over calls. ``--merge A B ...``
runs nothing and summarises several calls' results.json as one run (same machine and versions; an op that several
ran counts once, from the first call that judged its winners).

``--variants`` adds each ``OP@odd`` and ``OP@small``: the op at a second shape whose sizes no power of 2 divides,
so a block size that mishandles a tail shows in the outputs, and at a small shape as in inference (a decode step's
16 rows, a short prompt, one small image), where lists written for training sizes fit least; a winner is judged at
up to three shapes.

``--compile`` adds the ops marked ``+compile``: the same op called inside ``torch.compile`` (Inductor), so that
Dynamo and Inductor read and re-create each library autotuner under both engines.

``--budget-s`` (330 by default) keeps the whole run near six minutes: no new cold runs past 70% of it, and a cold
run still going at 85% of it, or after 40% of it for one op (``--op-share``; any other step at 110%; never before a
step has had 30 s), is stopped: its engine's process is killed, that op is reported as stopped, the ops that engine
had run keep the two timing rounds and the winners' re-timing each had right after its cold runs (the later rounds
need the process), and the next ops' cold runs go to a fresh process of that engine (empty caches of
its own, its log ``ENGINE.1.log``), so one stalled op does not cost the rest of the run. Before the kill, the engine
prints every thread's stack into its log (``SIGUSR1``), so the log shows where it stalled.
``results.json`` is rewritten after each op's cold runs, first two rounds and winners' re-timing, so a run cut short
from outside keeps what it finished, and ``--resume`` counts those ops.

``--fresh-dispatch`` asks whether a cached call costs, in the process that tuned, what it costs in a fresh process:
after the cold runs one more process of the tritune engine (``tritune_fresh`` in the results, its log
``tritune_fresh.log``) starts on the caches and store the live tritune process wrote (the same ``TRITON_CACHE_DIR``,
``TRITUNE_STORE`` and ``FLAGGEMS_CACHE_DIR``; the same ``TRITUNE_WIDEN``) and makes the first call of each op that
process ran: the first call in a fresh process with the store, its wall time kept as that op's ``cold`` (the first
op's also carries what a process does once). The dispatch rounds then time it too, on the same core, in an order that
lets each engine lead in turn while Triton's and tritune's order stays that of a run without it. Each engine's
first dispatch round also reads its process's state right before the timing (:func:`process_state`: threads,
child processes, the collector's heap and settings, the switch interval, profile and trace hooks, the CUDA
allocator), kept as ``state`` in each engine's row. The summary adds, per op, the tuning process's dispatch CPU time
over the fresh process's (median of per-round ratios; the control loop's likewise), their median and worst, the
first calls' seconds, and the state that differs between the two tritune processes.

``--cpu-smoke`` runs two tiny autotuned kernels of this file under Triton's interpreter (no GPU; Liger's
kernels do not run under the interpreter and FlagGems will not import without a GPU) to exercise the harness;
there Triton's autotuner gets a FAKE timer (interpreter wall time), since on CPU it cannot time
more than one config. Its numbers mean nothing; only that each step runs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import faulthandler
import functools
import gc
import importlib.util
import inspect
import itertools
import json
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARK = "@@real_libraries@@ "
WINNERS_RESERVE_S = 45.0  # of --budget-s, kept for re-timing the winners after the interleaved rounds
COLD_STOP = 0.85  # of --budget-s: a cold run still going then is stopped (its engine killed)
OP_COLD_SHARE = 0.4  # of --budget-s (--op-share): the most one op's cold run may take; past it, it is stopped too
STEP_STOP = 1.10  # of --budget-s: the same for any later step
ENGINES = ("triton", "tritune")
FRESH = "tritune_fresh"  # --fresh-dispatch: a fresh tritune process on the caches and store the tuning one wrote


@dataclass(frozen=True)
class Op:
    """One library op: how to build its seeded inputs and call it. ``reduce_dim`` scales the atol."""

    name: str
    lib: str
    make: Callable[[Any, str, bool], tuple[Callable[..., Any], tuple[Any, ...]]]
    reduce_dim: int = 1
    smoke: bool = False
    compiled: bool = False  # called inside torch.compile: run only with --compile
    variant: bool = False  # another shape of an op (@odd, @small): named by --ops, or --variants
    tol: tuple[float, float] | None = None  # (rtol, atol) of the op's own tests; None: _tolerance's rule


def _randn(shape: tuple[int, ...], dtype: Any, device: str, salt: int = 0) -> Any:
    """Seeded on the CPU, then moved: the same values in both engines' processes. (Drawn on the GPU they
    differed between the two processes, since ``flag_gems.enable()`` replaces torch's random ops.)"""
    import torch

    g = torch.Generator().manual_seed((hash(shape) + salt) & 0xFFFF)
    return torch.randn(shape, generator=g).to(device=device, dtype=dtype)


def _gems(fn: Callable[..., Any], *shapes: tuple[int, ...], dtype: str = "float16") -> Any:
    """An op called through torch with FlagGems' aten overrides enabled (``flag_gems.enable()``)."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        dt = getattr(torch, dtype)
        args = tuple(_randn(s, dt, device) for s in shapes)
        return fn, args

    return make


def _f(name: str) -> Callable[..., Any]:
    """``torch.<name>``, ``torch.nn.functional.<name>`` or ``torch.ops.aten.<name>``, looked up at call time."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import torch

        for ns in (torch, torch.nn.functional, torch.linalg):
            fn = getattr(ns, name, None)
            if fn is not None:
                return fn(*args, **kwargs)
        return getattr(torch.ops.aten, name)(*args, **kwargs)

    call.__name__ = name
    return call


def _f_nn(name: str) -> Callable[..., Any]:
    """``torch.nn.functional.<name>``, looked up at call time (``torch.<name>`` has another signature)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import torch

        return getattr(torch.nn.functional, name)(*args, **kwargs)

    call.__name__ = name
    return call


def _liger_dyt(m: int = 2048, n: int = 4096) -> Any:
    """Liger's DyT forward on an (m, n) fp32 input (4 x 64 on the CPU)."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        from liger_kernel.ops.dyt import liger_dyt_fwd

        rows, cols = (4, 64) if device == "cpu" else (m, n)
        x = _randn((rows, cols), torch.float32, device)
        alpha = torch.full((1,), 0.5, device=device)
        return liger_dyt_fwd, (x, alpha, _randn((cols,), torch.float32, device), _randn((cols,), torch.float32, device))

    return make


def _liger_dyt_bwd(m: int = 2048, n: int = 4096) -> Any:
    """Liger's DyT backward (dx) on an (m, n) fp32 input (4 x 64 on the CPU)."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        from liger_kernel.ops.dyt import liger_dyt_bwd

        rows, cols = (4, 64) if device == "cpu" else (m, n)
        x = _randn((rows, cols), torch.float32, device)
        dy = _randn((rows, cols), torch.float32, device)
        alpha = torch.full((1,), 0.5, device=device)

        def call(*a: Any) -> Any:
            return liger_dyt_bwd(*a)[0]  # dx; the other grads are reduced with torch

        return call, (dy, x, alpha, _randn((cols,), torch.float32, device), _randn((cols,), torch.float32, device))

    return make


def _liger_swiglu(b: int = 2, s: int = 512, k: int = 2048, n: int = 2048) -> Any:
    """Liger's fused SwiGLU MLP GEMM (inference path), bf16 x of (b, s, k) with gate and up of (n, k)."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        from liger_kernel.ops import mlp

        x = _randn((b, s, k), torch.bfloat16, device)
        gate = _randn((n, k), torch.bfloat16, device) * 0.02
        up = _randn((n, k), torch.bfloat16, device) * 0.02

        def call(x: Any, gate: Any, up: Any) -> Any:
            out = mlp.gemm_swiglu(x, gate, up, 1.0, False)  # inference path (host descriptors, a pre_hook)
            return out[0] if isinstance(out, tuple) else out

        return call, (x, gate, up)

    return make


def _fla(kind: str, backward: bool = False, seq: int = 2048, feats: int = 4096) -> Any:
    """A flash-linear-attention op (``fla-core``) at a training shape (sequence length ``seq``; the norms over
    ``feats`` features), forward or forward and backward. Inputs are half precision as fla's tests use; the
    backward's output is every input gradient, flattened and joined."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        import torch.nn.functional as F
        from fla.modules.norm.layernorm import layer_norm, rms_norm
        from fla.ops.delta_rule import chunk_delta_rule
        from fla.ops.gla import chunk_gla
        from fla.ops.retention import chunk_retention

        b, t, h, d = (4, seq, 8, 128) if device == "cuda" else (1, 64, 2, 32)
        n = feats if device == "cuda" else 64
        dt = torch.float16
        q, k, v = (_randn((b, t, h, d), dt, device, salt=i) * 0.5 for i in range(3))
        x, w, bias = _randn((b * t, n), dt, device), _randn((n,), dt, device), _randn((n,), dt, device)
        calls: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
            "rms_norm": (lambda x, w: rms_norm(x, w, None), (x, w)),
            "layer_norm": (layer_norm, (x, w, bias)),
            "gla": (lambda q, k, v, g: chunk_gla(q, k, v, g)[0],
                    (q, k, v, F.logsigmoid(_randn((b, t, h, d), torch.float32, device, salt=3)).to(dt))),
            "delta_rule": (lambda q, k, v, beta: chunk_delta_rule(q, k, v, beta)[0],
                           (q, F.normalize(k.float(), p=2, dim=-1).to(dt), v,
                            torch.sigmoid(_randn((b, t, h), torch.float32, device)).to(dt))),
            "retention": (lambda q, k, v: chunk_retention(q, k, v)[0], (q, k, v)),
        }  # fmt: skip
        fwd, args = calls[kind]
        if not backward:
            return fwd, args
        leaves = tuple(a.detach().clone().requires_grad_(a.is_floating_point()) for a in args)
        do = _randn(tuple(args[0 if kind in ("rms_norm", "layer_norm") else 2].shape), dt, device, salt=4)  # like o

        def fwd_bwd(*xs: Any) -> Any:
            for x in xs:
                x.grad = None
            fwd(*xs).backward(do)
            return torch.cat([x.grad.float().flatten() for x in xs if x.grad is not None])

        return fwd_bwd, leaves

    return make


def _compiled(make: Any) -> Any:
    """The same op called inside ``torch.compile`` (the Inductor backend); fullgraph where Dynamo allows it."""

    def wrapped(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        fn, args = make(torch, device, quick)
        return torch.compile(fn, backend="inductor"), args

    return wrapped


# Triton's own tutorials as a library: the files are not part of tritune; bash benchmarks/fetch.sh tutorials writes
# them into the ignored folder .ref/tutorials of a checkout (TRITUNE_TUTORIALS names another folder).
TUTORIAL_FILES = {"03": "03-matrix-multiplication.py", "05": "05-layer-norm.py", "06": "06-fused-attention.py"}


def tutorials_dir() -> Path:
    own = os.environ.get("TRITUNE_TUTORIALS")
    return Path(own) if own else Path(__file__).resolve().parents[1] / ".ref" / "tutorials"


def tutorials_missing() -> str | None:
    """Why the tutorial ops cannot run (a tutorial file is missing), in one line; None when every file is there."""
    missing = [f for f in TUTORIAL_FILES.values() if not (tutorials_dir() / f).is_file()]
    if not missing:
        return None
    return (f"FileNotFoundError: {', '.join(missing)} not in {tutorials_dir()} (bash benchmarks/fetch.sh tutorials "
            f"writes Triton's tutorials there; TRITUNE_TUTORIALS names another folder)")  # fmt: skip


def load_tutorial(path: Path, name: str) -> Any:
    """Import a tutorial file, unedited, as the module ``name``. Tutorial 03 runs its plotting benchmark at import
    (``triton.testing.perf_report(...)(fn).run(...)``): ``perf_report`` is a no-op stand-in during the import and
    Triton's own again after it. Other module-level code (03's small correctness checks) runs as written."""
    import triton.testing

    real = triton.testing.perf_report

    class _NoRun:
        def __init__(self, fn: Callable[..., Any]) -> None:
            self.fn = fn

        def run(self, *args: Any, **kwargs: Any) -> None:
            return None

    triton.testing.perf_report = lambda benchmarks: _NoRun  # type: ignore[assignment,return-value]
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return mod
    finally:
        triton.testing.perf_report = real


@functools.cache
def tutorial(num: str) -> Any:
    """Tutorial ``num`` ("03", "05", "06") from :func:`tutorials_dir`, imported once a process (as ``tutorial_NUM``)."""
    path = tutorials_dir() / TUTORIAL_FILES[num]
    try:
        return load_tutorial(path, f"tutorial_{num}")
    except Exception as e:  # one line, as a library that did not import
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise RuntimeError(f"tutorials did not import: {path.name}: {type(e).__name__}: {first}") from e


def _tut_matmul(a: tuple[int, int], b: tuple[int, int]) -> Any:
    """Tutorial 03's ``matmul(a, b)``, fp16."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        mod = tutorial("03")
        return mod.matmul, (_randn(a, torch.float16, device), _randn(b, torch.float16, device))

    return make


def _tut_layer_norm(m: int, n: int) -> Any:
    """Tutorial 05's layer norm forward kernel (``_layer_norm_fwd_fused``, unedited), launched as the tutorial's
    ``LayerNorm.forward`` launches it, through an autotuner (key ``N``) whose one config is the tutorial's own
    launch choice: ``BLOCK_SIZE`` the next power of 2 of N within 64 KB, ``num_warps`` ``BLOCK_SIZE // 256`` within 1
    to 8. The tutorial tunes nothing; its choice is the list Triton runs, and the list tritune widens. fp16 x of
    (m, n) with mean -2.3 and std 0.5, as the tutorial's test draws it; the output is y."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        import triton

        mod = tutorial("05")
        rows, cols = (m, n) if device == "cuda" else (4, 96)
        x = _randn((rows, cols), torch.float16, device) * 0.5 - 2.3
        w, b = _randn((cols,), torch.float16, device, salt=1), _randn((cols,), torch.float16, device, salt=2)
        block = min(65536 // x.element_size(), triton.next_power_of_2(cols))
        tuned = triton.autotune([triton.Config({"BLOCK_SIZE": block}, num_warps=min(max(block // 256, 1), 8))],
                                key=["N"])(mod._layer_norm_fwd_fused)  # fmt: skip

        def layer_norm(x: Any, w: Any, b: Any) -> Any:
            y = torch.empty_like(x)
            mean = torch.empty((x.shape[0],), dtype=torch.float32, device=x.device)
            rstd = torch.empty((x.shape[0],), dtype=torch.float32, device=x.device)
            tuned[(x.shape[0],)](x, y, w, b, mean, rstd, x.stride(0), x.shape[1], 1e-5)
            return y

        return layer_norm, (x, w, b)

    return make


def _tut_attention(backward: bool = False, shape: tuple[int, int, int, int] = (4, 16, 1024, 64)) -> Any:
    """Tutorial 06's ``attention(q, k, v, causal=True, sm_scale=0.5[, warp_specialize=False])``, fp16 q, k, v of
    ``shape`` (batch, heads, context, head dim) and std 0.5 as its own test draws them; forward, or forward and
    backward with every input gradient flattened and joined (as ``_fla``'s backward)."""

    def make(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        mod = tutorial("06")
        shape_here = shape if device == "cuda" else (1, 2, 128, 16)
        q, k, v = (_randn(shape_here, torch.float16, device, salt=i) * 0.5 for i in range(3))
        # Function.apply takes no keywords: causal, sm_scale and (where forward has it) warp_specialize, in order
        rest: tuple[Any, ...] = (True, 0.5)
        if "warp_specialize" in inspect.signature(mod._attention.forward).parameters:
            rest += (False,)

        def fwd(q: Any, k: Any, v: Any) -> Any:
            return mod.attention(q, k, v, *rest)

        if not backward:
            return fwd, (q, k, v)
        leaves = tuple(x.detach().clone().requires_grad_() for x in (q, k, v))
        do = _randn(shape_here, torch.float16, device, salt=4)

        def fwd_bwd(*xs: Any) -> Any:
            for x in xs:
                x.grad = None
            fwd(*xs).backward(do)
            return torch.cat([x.grad.float().flatten() for x in xs])

        return fwd_bwd, leaves

    return make


@functools.cache
def _smoke_kernels() -> dict[str, Any]:
    """Two tiny autotuned kernels in the libraries' style, for --cpu-smoke only (Liger's kernels do not
    run under this Triton's interpreter, and FlagGems refuses to import without a GPU).

    Made on first use, in the child, so that ``@triton.autotune`` is whichever engine the child switched on.
    """
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64)], key=["n"])
    @triton.jit
    def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64)], key=["n"])
    @triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(out_ptr + offs, a * tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
        else:
            m = offs < n
            tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 128)], key=["n"])
    @triton.jit
    def whole_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        """A trap: right only where BLOCK divides n (the caller's grid, n // BLOCK, leaves a tail unwritten)."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)

    return {"row_sum": row_sum, "axpy": axpy, "whole_blocks": whole_blocks}


def _smoke_row_sum(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Row sums at two widths in one call: the autotuned kernel runs at two keys a call, as fla's chunked ops do."""
    k = _smoke_kernels()["row_sum"]

    def call(x: Any, y: Any) -> Any:
        outs = []
        for t in (x, y):
            out = torch.empty(t.shape[0], device=t.device)
            k[(t.shape[0],)](t, out, t.shape[1])
            outs.append(out)
        return torch.cat(outs)

    return call, (_randn((4, 100), torch.float32, device), _randn((3, 37), torch.float32, device))


def _smoke_axpy(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    import triton

    k = _smoke_kernels()["axpy"]

    def call(x: Any, y: Any) -> Any:
        out = torch.empty_like(x)
        k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, y, out, 2.0, x.numel())
        return out

    return call, (_randn((200,), torch.float32, device), _randn((200,), torch.float32, device))


def _trap_whole_blocks(torch: Any, device: str, quick: bool) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The trap of a widened list: its written blocks (64, 128) divide n = 128 * 3003; the neighbour 256 does not,
    leaves a tail unwritten, and must be refused by the output check before it is timed (it may be the fastest)."""
    k = _smoke_kernels()["whole_blocks"]

    def call(x: Any) -> Any:
        out = torch.zeros_like(x)
        k[lambda m: (x.numel() // m["BLOCK"],)](x, out, x.numel())
        return out

    return call, (_randn((128 * 3003,), torch.float32, device),)


M = 2048
OPS: tuple[Op, ...] = (
    Op("mm", "flag_gems", _gems(_f("mm"), (M, 1024), (1024, M)), reduce_dim=1024),
    Op("addmm", "flag_gems", _gems(_f("addmm"), (M,), (M, 1024), (1024, M)), reduce_dim=1024),
    Op("bmm", "flag_gems", _gems(_f("bmm"), (16, 256, 512), (16, 512, 256)), reduce_dim=512),
    Op("baddbmm", "flag_gems", _gems(_f("baddbmm"), (16, 256, 256), (16, 256, 512), (16, 512, 256)), reduce_dim=512),
    Op("mv", "flag_gems", _gems(_f("mv"), (4096, 4096), (4096,)), reduce_dim=4096),
    Op("addmv", "flag_gems", _gems(_f("addmv"), (4096,), (4096, 4096), (4096,)), reduce_dim=4096),
    Op("softmax", "flag_gems", _gems(lambda x: _f("softmax")(x, dim=-1), (4096, 4096))),
    Op("softmax_backward", "flag_gems", _gems(
        lambda g, y: _f("_softmax_backward_data")(g, y, -1, y.dtype), (4096, 4096), (4096, 4096))),
    Op("log_softmax", "flag_gems", _gems(lambda x: _f("log_softmax")(x, dim=-1), (4096, 4096))),
    Op("layer_norm", "flag_gems", _gems(lambda x, w, b: _f("layer_norm")(x, (4096,), w, b), (4096, 4096), (4096,), (4096,))),
    Op("rms_norm", "flag_gems", _gems(lambda x, w: _f("rms_norm")(x, (4096,), w), (4096, 4096), (4096,))),
    Op("batch_norm", "flag_gems", _gems(
        lambda x, w, b: _f_nn("batch_norm")(x, None, None, w, b, training=True), (32, 64, 56, 56), (64,), (64,),
        dtype="float32")),
    Op("sum_dim", "flag_gems", _gems(lambda x: _f("sum")(x, dim=1), (4096, 4096), dtype="float32"), reduce_dim=4096),
    Op("mean_dim", "flag_gems", _gems(lambda x: _f("mean")(x, dim=0), (4096, 4096), dtype="float32")),
    Op("amax", "flag_gems", _gems(lambda x: _f("amax")(x, dim=1), (4096, 4096), dtype="float32")),
    Op("max_dim", "flag_gems", _gems(lambda x: _f("max")(x, dim=1).values, (4096, 4096), dtype="float32")),
    Op("argmin", "flag_gems", _gems(lambda x: _f("argmin")(x, dim=1), (4096, 4096), dtype="float32")),
    Op("var_mean", "flag_gems", _gems(lambda x: _f("var_mean")(x, dim=1)[0], (4096, 4096), dtype="float32")),
    Op("vector_norm", "flag_gems", _gems(lambda x: _f("vector_norm")(x, 2, dim=1), (4096, 4096), dtype="float32")),
    Op("prod_dim", "flag_gems", _gems(lambda x: _f("prod")(x * 0 + 1, dim=1), (1024, 1024), dtype="float32")),
    Op("count_nonzero", "flag_gems", _gems(lambda x: _f("count_nonzero")(x > 0, dim=1), (4096, 4096))),
    Op("triu", "flag_gems", _gems(lambda x: _f("triu")(x, 1), (4096, 4096))),
    Op("std", "flag_gems", _gems(lambda x: _f("std")(x, dim=1), (4096, 4096), dtype="float32")),
    # FlagGems' other autotuned ops without a libentry wrapper (their cached calls reach the autotuner), all but
    # randn (its output is random), so that the dispatch median is over the library's ops, not over one or two.
    Op("upsample_nearest1d", "flag_gems", _gems(lambda x: _f("upsample_nearest1d")(x, [4096]), (32, 64, 1024))),
    Op("upsample_nearest2d", "flag_gems", _gems(lambda x: _f("upsample_nearest2d")(x, [256, 256]), (8, 64, 128, 128))),
    Op("upsample_nearest3d", "flag_gems", _gems(
        lambda x: _f("upsample_nearest3d")(x, [32, 64, 64]), (4, 32, 16, 32, 32))),
    Op("upsample_bicubic2d", "flag_gems", _gems(
        lambda x: _f("upsample_bicubic2d")(x, [256, 256], False), (8, 64, 128, 128), dtype="float32")),
    Op("upsample_bicubic2d_aa", "flag_gems", _gems(
        lambda x: _f("_upsample_bicubic2d_aa")(x, [64, 64], False), (8, 64, 128, 128), dtype="float32")),
    Op("kron", "flag_gems", _gems(_f("kron"), (64, 64), (32, 32), dtype="float32")),
    # The same ops at a second shape, sizes no power of 2 divides (the tails a block size must handle).
    *(Op(name + "@odd", "flag_gems", make, reduce_dim=r, variant=True) for name, make, r in (
        ("mm", _gems(_f("mm"), (3000, 1500), (1500, 2000)), 1500),
        ("addmm", _gems(_f("addmm"), (2000,), (3000, 1500), (1500, 2000)), 1500),
        ("bmm", _gems(_f("bmm"), (12, 300, 700), (12, 700, 260)), 700),
        ("baddbmm", _gems(_f("baddbmm"), (12, 300, 260), (12, 300, 700), (12, 700, 260)), 700),
        ("mv", _gems(_f("mv"), (3000, 5000), (5000,)), 5000),
        ("addmv", _gems(_f("addmv"), (3000,), (3000, 5000), (5000,)), 5000),
        ("layer_norm", _gems(lambda x, w, b: _f("layer_norm")(x, (3000,), w, b), (5000, 3000), (3000,), (3000,)), 1),
        ("amax", _gems(lambda x: _f("amax")(x, dim=1), (3000, 5000), dtype="float32"), 1),
        ("max_dim", _gems(lambda x: _f("max")(x, dim=1).values, (3000, 5000), dtype="float32"), 1),
        ("argmin", _gems(lambda x: _f("argmin")(x, dim=1), (3000, 5000), dtype="float32"), 1),
        ("var_mean", _gems(lambda x: _f("var_mean")(x, dim=1)[0], (3000, 5000), dtype="float32"), 1),
        ("vector_norm", _gems(lambda x: _f("vector_norm")(x, 2, dim=1), (3000, 5000), dtype="float32"), 1),
        ("std", _gems(lambda x: _f("std")(x, dim=1), (3000, 5000), dtype="float32"), 1),
        ("triu", _gems(lambda x: _f("triu")(x, 1), (3000, 5000)), 1),
        ("upsample_nearest2d", _gems(lambda x: _f("upsample_nearest2d")(x, [300, 300]), (6, 40, 100, 100)), 1),
        ("prod_dim", _gems(lambda x: _f("prod")(x * 0 + 1, dim=1), (1500, 3000), dtype="float32"), 1),
        ("count_nonzero", _gems(lambda x: _f("count_nonzero")(x > 0, dim=1), (3000, 5000)), 1),
        ("upsample_nearest1d", _gems(lambda x: _f("upsample_nearest1d")(x, [3900]), (30, 60, 1300)), 1),
        ("upsample_nearest3d", _gems(lambda x: _f("upsample_nearest3d")(x, [27, 57, 57]), (3, 30, 15, 30, 30)), 1),
        ("upsample_bicubic2d", _gems(lambda x: _f("upsample_bicubic2d")(x, [300, 300], False), (6, 40, 100, 100),
                                     dtype="float32"), 1),
        ("upsample_bicubic2d_aa", _gems(lambda x: _f("_upsample_bicubic2d_aa")(x, [60, 60], False),
                                        (6, 40, 100, 100), dtype="float32"), 1),
        ("kron", _gems(_f("kron"), (60, 60), (30, 30), dtype="float32"), 1),
    )),
    # And at a third shape, small as in inference (a decode step's rows, a short prompt, one small image): the
    # lists were written for training sizes, so a small shape is where they fit least.
    *(Op(name + "@small", "flag_gems", make, reduce_dim=r, variant=True) for name, make, r in (
        ("mm", _gems(_f("mm"), (16, 4096), (4096, 4096)), 4096),
        ("addmm", _gems(_f("addmm"), (4096,), (16, 4096), (4096, 4096)), 4096),
        ("bmm", _gems(_f("bmm"), (32, 16, 128), (32, 128, 512)), 128),
        ("baddbmm", _gems(_f("baddbmm"), (32, 16, 512), (32, 16, 128), (32, 128, 512)), 128),
        ("mv", _gems(_f("mv"), (1024, 1024), (1024,)), 1024),
        ("addmv", _gems(_f("addmv"), (1024,), (1024, 1024), (1024,)), 1024),
        ("layer_norm", _gems(lambda x, w, b: _f("layer_norm")(x, (4096,), w, b), (16, 4096), (4096,), (4096,)), 1),
        ("amax", _gems(lambda x: _f("amax")(x, dim=1), (16, 4096), dtype="float32"), 1),
        ("max_dim", _gems(lambda x: _f("max")(x, dim=1).values, (16, 4096), dtype="float32"), 1),
        ("var_mean", _gems(lambda x: _f("var_mean")(x, dim=1)[0], (16, 4096), dtype="float32"), 1),
        ("vector_norm", _gems(lambda x: _f("vector_norm")(x, 2, dim=1), (16, 4096), dtype="float32"), 1),
        ("std", _gems(lambda x: _f("std")(x, dim=1), (16, 4096), dtype="float32"), 1),
        ("prod_dim", _gems(lambda x: _f("prod")(x * 0 + 1, dim=1), (16, 1024), dtype="float32"), 1),
        ("count_nonzero", _gems(lambda x: _f("count_nonzero")(x > 0, dim=1), (16, 4096)), 1),
        ("triu", _gems(lambda x: _f("triu")(x, 1), (512, 512)), 1),
        ("upsample_nearest2d", _gems(lambda x: _f("upsample_nearest2d")(x, [128, 128]), (1, 3, 64, 64)), 1),
        ("upsample_bicubic2d", _gems(lambda x: _f("upsample_bicubic2d")(x, [128, 128], False), (1, 3, 64, 64),
                                     dtype="float32"), 1),
    )),
    Op("liger_dyt", "liger_kernel", _liger_dyt()),
    Op("liger_dyt_bwd", "liger_kernel", _liger_dyt_bwd()),
    Op("liger_swiglu", "liger_kernel", _liger_swiglu()),
    *(Op(f"fla_{k}{'_bwd' * bwd}", "fla", _fla(k, bwd), reduce_dim=128 if k in ("gla", "delta_rule", "retention") else 4096)
      for k in ("gla", "delta_rule", "retention", "rms_norm", "layer_norm") for bwd in (False, True)),
    # Liger's and fla's ops at a second shape (SwiGLU's row strides stay 16-byte multiples: its host descriptors
    # need them)
    Op("liger_dyt@odd", "liger_kernel", _liger_dyt(3000, 5000), variant=True),
    Op("liger_dyt_bwd@odd", "liger_kernel", _liger_dyt_bwd(3000, 5000), variant=True),
    Op("liger_swiglu@odd", "liger_kernel", _liger_swiglu(3, 300, 1520, 2000), variant=True),
    *(Op(f"fla_{k}{'_bwd' * bwd}@odd", "fla", _fla(k, bwd, seq=1500, feats=3000), reduce_dim=3000, variant=True)
      for k in ("rms_norm", "layer_norm") for bwd in (False, True)),
    *(Op(f"fla_{k}{'_bwd' * bwd}@odd", "fla", _fla(k, bwd, seq=1500), reduce_dim=128, variant=True)
      for k in ("gla", "delta_rule", "retention") for bwd in (False, True)),
    Op("liger_dyt@small", "liger_kernel", _liger_dyt(16, 4096), variant=True),
    Op("liger_dyt_bwd@small", "liger_kernel", _liger_dyt_bwd(16, 4096), variant=True),
    Op("liger_swiglu@small", "liger_kernel", _liger_swiglu(1, 16, 2048, 2048), variant=True),
    *(Op(f"fla_{k}{'_bwd' * bwd}@small", "fla", _fla(k, bwd, seq=4), reduce_dim=4096, variant=True)
      for k in ("rms_norm", "layer_norm") for bwd in (False, True)),
    *(Op(f"fla_{k}{'_bwd' * bwd}@small", "fla", _fla(k, bwd, seq=256), reduce_dim=128, variant=True)
      for k in ("gla", "delta_rule", "retention") for bwd in (False, True)),
    # Triton's tutorials 03, 05 and 06, unedited (layer norm and attention: the tolerance of the tutorial's own test)
    Op("tut_matmul", "tutorials", _tut_matmul((M, 1024), (1024, M)), reduce_dim=1024),
    Op("tut_matmul@odd", "tutorials", _tut_matmul((3000, 1500), (1500, 2000)), reduce_dim=1500, variant=True),
    Op("tut_matmul@small", "tutorials", _tut_matmul((16, 4096), (4096, 4096)), reduce_dim=4096, variant=True),
    Op("tut_layer_norm", "tutorials", _tut_layer_norm(4096, 8192), tol=(0.0, 1e-2)),
    Op("tut_layer_norm@odd", "tutorials", _tut_layer_norm(1151, 5000), tol=(0.0, 1e-2), variant=True),
    Op("tut_layer_norm@small", "tutorials", _tut_layer_norm(16, 8192), tol=(0.0, 1e-2), variant=True),
    Op("tut_attention", "tutorials", _tut_attention(), tol=(0.0, 1e-2)),
    Op("tut_attention_bwd", "tutorials", _tut_attention(backward=True), tol=(0.0, 1e-2)),
    Op("tut_attention@small", "tutorials", _tut_attention(shape=(1, 16, 256, 64)), tol=(0.0, 1e-2), variant=True),
    Op("tut_attention_bwd@small", "tutorials", _tut_attention(backward=True, shape=(1, 16, 256, 64)), tol=(0.0, 1e-2),
       variant=True),
    # FlagGems' matmul inside torch.compile: Inductor lowers mm to an extern call of aten's mm, which FlagGems overrides
    Op("mm+compile", "flag_gems", _compiled(_gems(_f("mm"), (M, 1024), (1024, M))), reduce_dim=1024, compiled=True),
    Op("liger_dyt+compile", "liger_kernel", _compiled(_liger_dyt()), compiled=True),
    Op("fla_rms_norm_bwd+compile", "fla", _compiled(_fla("rms_norm", True)), reduce_dim=4096, compiled=True),
    Op("fla_gla+compile", "fla", _compiled(_fla("gla")), reduce_dim=128, compiled=True),
    Op("smoke_row_sum", "smoke", _smoke_row_sum, reduce_dim=100, smoke=True),
    Op("smoke_axpy", "smoke", _smoke_axpy, smoke=True),
    Op("trap_whole_blocks", "smoke", _trap_whole_blocks),
)
QUICK = ("mm", "addmm", "bmm", "softmax", "layer_norm", "sum_dim", "batch_norm", "liger_dyt", "liger_dyt_bwd")


# ---------------------------------------------------------------- child: one engine, driven over stdin


def _choice_stats(tuner: Any) -> Any:
    """tritune's phases for each key the tuner chose (``choices()[key].stats``: compile, load, race, ...), so a
    slow cold tuning can be attributed; None for Triton's autotuner, which keeps no such record."""
    choices = getattr(tuner, "choices", None)
    if not callable(choices):
        return None
    try:
        return json.loads(json.dumps({str(k): getattr(v, "stats", None) for k, v in choices().items()}, default=str))
    except Exception as e:  # a report, not a reason to lose the run
        return {"error": repr(e)}


# The autotuners behind a library op: which ones a call reaches, what each chose, and both engines' winners
# timed against each other in one process.
# - :class:`RunCounter` wraps ``run`` of Triton's ``Autotuner`` and every subclass (tritune's stand-in, FlagGems'
#   ``LibTuner``) while it is active, counting calls per tuner object; it is off during every timed loop.
# - :func:`describe` gives a config as JSON (``all_kwargs``: meta-parameters and launch options), the form in
#   which the tritune child sends its winners to the Triton child.
# - :func:`remeasure_winners` pins each tuner to one config (``tuner.configs = [cfg]``: with one config both
#   Triton's ``Autotuner.run`` and ``LibTuner.run`` launch it without tuning), clears the compiled-kernel cache of
#   any ``libentry`` wrapper over it, and times blocks of calls of the op, alternating the two engines' winners.


def original_autotuner() -> type:
    """Triton's own ``Autotuner`` class, also while ``tritune.patch_triton()`` has put its stand-in in its place."""
    try:
        from tritune.decorator.triton_surface import ORIGINAL_AUTOTUNER

        return ORIGINAL_AUTOTUNER  # type: ignore[no-any-return]
    except ImportError:
        from triton.runtime.autotuner import Autotuner

        return Autotuner


def _classes(base: type) -> Iterator[type]:
    seen: set[type] = set()
    todo = [base]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        yield cls
        todo.extend(type.__subclasses__(cls))


def tuner_name(t: Any) -> str:
    fn = getattr(t, "base_fn", None) or getattr(t, "fn", None)
    while fn is not None and not callable(getattr(fn, "__code__", None)) and hasattr(fn, "fn"):
        fn = fn.fn
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(t, '__name__', '?'))}"


class RunCounter:
    """``with RunCounter() as c: ...`` counts ``run`` calls per autotuner object (``c.counts``, ``c.objects``)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.objects: dict[int, Any] = {}
        self._saved: list[tuple[type, Any]] = []

    def __enter__(self) -> RunCounter:
        for cls in _classes(original_autotuner()):
            orig = cls.__dict__.get("run")
            if orig is None:
                continue
            self._saved.append((cls, orig))
            cls.run = self._wrap(orig)
        return self

    def _wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        counts, objects = self.counts, self.objects

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            counts[id(tuner)] = counts.get(id(tuner), 0) + 1
            objects[id(tuner)] = tuner
            return orig(tuner, *args, **kwargs)

        return run

    def __exit__(self, *exc: object) -> None:
        for cls, orig in self._saved:
            cls.run = orig
        self._saved.clear()

    def tuners(self) -> list[Any]:
        return [self.objects[i] for i in self.counts]


class RunTimer(RunCounter):
    """A :class:`RunCounter` that also sums the host seconds spent inside the outermost ``run`` calls
    (``seconds``): the part of an op's call that an autotuner engine owns (a stacked wrapper's nested ``run``
    is not counted twice). The wrapper itself adds ~0.5 us a call to both engines alike."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._depth = 0

    def _wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        import time

        counted = super()._wrap(orig)

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return counted(tuner, *args, **kwargs)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return counted(tuner, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self._depth -= 1

        return run


class RunRecorder(RunCounter):
    """A :class:`RunCounter` that also records, per autotuner object, the config each ``run`` call launched
    (``seen``: :func:`describe` of ``best_config`` after the call), in call order: an op that launches one
    autotuned kernel at several keys a call (fla's chunked kernels) has one config per key, and the order of the
    calls, the same in both engines' processes for the same op and arguments, names the key."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, list[dict[str, Any] | None]] = {}
        self.keys: dict[int, list[list[Any]]] = {}  # per run, the values of the tuner's key arguments

    def _wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        counted = super()._wrap(orig)
        seen, keys = self.seen, self.keys

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            out = counted(tuner, *args, **kwargs)
            seen.setdefault(id(tuner), []).append(describe(getattr(tuner, "best_config", None)))
            keys.setdefault(id(tuner), []).append(run_key(tuner, args, kwargs))
            return out

        return run


def run_key(tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The values of a tuner's key arguments in one run (a tensor's dtype), as JSON: what says which key a run was, so
    that the two engines' runs are paired only where they ran the same keys in the same order."""
    named = {**dict(zip(getattr(tuner, "arg_names", None) or (), args)), **kwargs}
    out: list[Any] = []
    for k in getattr(tuner, "keys", None) or ():
        v = named.get(k)
        plain = isinstance(v, (bool, int, float, str, type(None)))
        out.append(v if plain else str(getattr(v, "dtype", type(v).__name__)))
    return out


def describe(cfg: Any) -> dict[str, Any] | None:
    """A config's meta-parameters and launch options as JSON-able values (None for no config)."""
    if cfg is None:
        return None
    kw = cfg.all_kwargs() if hasattr(cfg, "all_kwargs") else {**cfg.kwargs, "num_warps": cfg.num_warps,
                                                                "num_stages": cfg.num_stages}
    return {k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v) for k, v in sorted(kw.items())}


def _described(pinned: Any) -> Any:
    """:func:`describe` of a pinned config, or of each config of a tuner pinned per run (a list)."""
    return [describe(c) for c in pinned] if isinstance(pinned, list) else describe(pinned)


def _each(pinned: Any) -> list[Any]:
    """A pinned config, or each config of a tuner pinned per run, as a list."""
    return pinned if isinstance(pinned, list) else [pinned]


def matching_config(tuner: Any, want: dict[str, Any]) -> Any:
    """The tuner's own config (with its pre_hook) whose description is ``want``; else a new ``triton.Config`` with
    the pre_hook every config of the list shares, if one."""
    for c in tuner.configs:
        if describe(c) == want:
            return c
    import triton

    kw = dict(want)
    opts = {k: kw.pop(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if k in kw}
    hooks = {id(c.pre_hook): c.pre_hook for c in tuner.configs}  # a config outside the list (widened) takes the
    hook = next(iter(hooks.values())) if len(hooks) == 1 else None  # library's one pre_hook (Liger's descriptors)
    return triton.Config(kw, **opts, pre_hook=hook)


def _libentries_over(tuner: Any) -> list[Any]:
    out = []
    for o in gc.get_objects():
        if type(o).__name__ != "LibEntry":
            continue
        fn = getattr(o, "fn", None)
        for _ in range(8):
            if fn is tuner:
                out.append(o)
                break
            fn = getattr(fn, "fn", None)
    return out


class Pinned:
    """Pin tuners to chosen configs (and back); a libentry wrapper's compiled-kernel cache is cleared each time.

    A tuner's entry in :meth:`pin` is one config, or a list of configs for a tuner that runs several times in one
    call of the op (one per key, in the order of the calls): each ``run`` then launches the next of the list,
    from the first again after the last (an instance ``run`` that sets ``configs`` to that one config before the
    class's own ``run``; with one config neither Triton's ``Autotuner`` nor ``LibTuner`` tunes)."""

    def __init__(self, tuners: list[Any]) -> None:
        self.tuners = tuners
        self.original = [t.configs for t in tuners]
        self.entries = [e for t in tuners for e in _libentries_over(t)]

    def pin(self, configs: list[Any]) -> None:
        for t, c in zip(self.tuners, configs):
            t.__dict__.pop("run", None)
            if isinstance(c, list):
                t.configs = [c[0]]
                t.run = self._in_turn(t, c)
            else:
                t.configs = [c]
        self._clear_entries()

    @staticmethod
    def _in_turn(tuner: Any, seq: list[Any]) -> Callable[..., Any]:
        calls = itertools.count()

        def run(*args: Any, **kwargs: Any) -> Any:
            tuner.configs = [seq[next(calls) % len(seq)]]
            return type(tuner).run(tuner, *args, **kwargs)

        return run

    def restore(self) -> None:
        for t, cs in zip(self.tuners, self.original):
            t.__dict__.pop("run", None)
            t.configs = cs
        self._clear_entries()

    def _clear_entries(self) -> None:
        for e in self.entries:
            for d in e.kernel_cache:
                d.clear()


class GpuHold:
    """A GPU sleep of a given length (``torch.cuda._sleep``): the host queues work behind it while the GPU waits,
    so the events that follow time the GPU's work, not the host's launch rate. The sleep's cycles per ms of event
    time are measured once per process (:meth:`cycles_per_ms`); the winners' judge, the dispatch loop's cover and
    serving.py's held spans size their sleeps with it."""

    _cycles_per_ms: float | None = None

    @classmethod
    def cycles_per_ms(cls, torch: Any) -> float:
        if cls._cycles_per_ms is None:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            # Warm first: the sleep kernel's first launch in a process loads its module while the device waits
            # behind event a, and that load counted as sleep (on an H100: 7.03e4 cycles per ms, a hold ~28x too
            # long; EventTimer._cycles_per_us warms likewise).
            torch.cuda._sleep(1000)
            torch.cuda.synchronize()
            a.record()
            torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            cycles = 2_000_000 / max(a.elapsed_time(b), 1e-3)
            if not 1e5 <= cycles <= 1e8:  # a GPU clock of 0.1-100 GHz: else every sleep is wrong
                raise RuntimeError(f"torch.cuda._sleep ran {cycles:.3g} cycles per ms of event time; a GPU sleep "
                                   "cannot be sized")  # fmt: skip
            cls._cycles_per_ms = cycles
        return cls._cycles_per_ms

    @classmethod
    def hold(cls, torch: Any, ms: float) -> None:
        torch.cuda._sleep(max(1, int(ms * cls.cycles_per_ms(torch))))


def host_bound(queued_ms: float, hold_ms: float) -> bool:
    """Whether a block queued behind a ``hold_ms`` GPU sleep in ``queued_ms`` of host time may have let the GPU
    wait for the host (the sleep ran out before the last launch was queued): its events then time the host's
    launch rate, not the kernels, and the block is timed again behind a longer sleep."""
    return queued_ms > 0.8 * hold_ms


def hold_for(queued_ms: float, floor_ms: float) -> float:
    """The sleep to queue a block behind: twice the host time its last queuing took, at least ``floor_ms``, at
    most 50 ms."""
    return min(50.0, max(floor_ms, 2.0 * queued_ms))


def remeasure_winners(torch: Any, fn: Callable[..., Any], args: tuple[Any, ...], tuners: list[Any],
                      sides: dict[str, list[Any]], blocks: int = 24, calls: int = 10,
                      cuda: bool = True, cold_calls: int = 0) -> dict[str, Any]:  # fmt: skip
    """GPU microseconds per call of ``fn(*args)`` with each side's configs pinned, blocks alternating sides
    (the first side alternates too). A GPU sleep ahead of each block (:class:`GpuHold`) keeps the GPU busy
    while the host queues the block, so host dispatch time is not counted: a block whose queuing outlasted its
    sleep (:func:`host_bound`: a library whose Python wrapper costs 100 us a call queues 20 calls in 2 ms) is
    timed again behind a sleep of twice its queuing time, which that side keeps (``redone``, ``hold_ms``).
    Returns each side's median (``us``: warm, the calls back to back). With ``cold_calls`` each block also
    times that many calls one at a time, each after an L2 flush (zeroing twice the L2) and a sleep that covers
    its queueing (``us_cold``: the cache state both engines tuned in, since Triton's ``do_bench`` and tritune's
    default policy flush). ``cuda=False`` (the CPU smoke run) times host wall time instead, which means nothing
    but exercises the pinning."""
    import time

    if not cuda:
        blocks, calls, cold_calls = 2, 2, 0
    pinned = Pinned(tuners)
    per: dict[str, list[float]] = {s: [] for s in sides}
    per_cold: dict[str, list[float]] = {s: [] for s in sides}
    hold_ms = {s: 2.5 for s in sides}  # grows with a side's host time a block
    hold_cold_ms = {s: 0.5 for s in sides}  # a call's
    redone = 0
    waits: set[str] = set()  # sides whose calls wait for the GPU
    names = list(sides)
    flush = None
    if cold_calls:
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        flush = torch.empty(max(2 * l2, 1 << 26) // 4, dtype=torch.int32, device="cuda")
    try:
        for b in range(blocks):
            for side in names if b % 2 == 0 else names[::-1]:
                pinned.pin(sides[side])
                fn(*args)  # the re-entered wrappers compile or load, and launch once: untimed
                if not cuda:
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        fn(*args)
                    per[side].append((time.perf_counter() - t0) * 1e6 / calls)
                    continue
                for attempt in range(2):
                    torch.cuda.synchronize()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    GpuHold.hold(torch, hold_ms[side])
                    t0 = time.perf_counter()
                    start.record()
                    for _ in range(calls):
                        fn(*args)
                    end.record()
                    queued_ms = (time.perf_counter() - t0) * 1e3
                    end.synchronize()
                    if side in waits or not host_bound(queued_ms, hold_ms[side]):
                        break
                    if attempt:  # still bound behind twice its queuing time: the calls wait for the GPU (a
                        waits.add(side)  # library that synchronizes), no sleep covers them; not retried again
                        hold_ms[side] = 2.5
                        break
                    hold_ms[side] = hold_for(queued_ms, hold_ms[side])
                    redone += 1
                per[side].append(start.elapsed_time(end) * 1e3 / calls)
                if flush is not None:
                    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                          for _ in range(cold_calls)]  # fmt: skip
                    longest_ms = 0.0
                    for s0, e0 in ev:
                        flush.zero_()
                        GpuHold.hold(torch, hold_cold_ms[side])  # the host queues the call behind it
                        t0 = time.perf_counter()
                        s0.record()
                        fn(*args)
                        e0.record()
                        longest_ms = max(longest_ms, (time.perf_counter() - t0) * 1e3)
                    ev[-1][1].synchronize()
                    per_cold[side].append(statistics.median(s0.elapsed_time(e0) * 1e3 for s0, e0 in ev))
                    if side not in waits:  # (a waiting call's host time includes the sleep: it would only grow)
                        hold_cold_ms[side] = hold_for(longest_ms, 0.5)
    finally:
        pinned.restore()
    out: dict[str, Any] = {"us": {s: statistics.median(v) for s, v in per.items()}, "blocks": blocks,
                           "calls_per_block": calls, "redone": redone, "waits": sorted(waits),
                           "hold_ms": {s: round(v, 3) for s, v in hold_ms.items()}}  # fmt: skip
    if flush is not None:
        out["us_cold"] = {s: statistics.median(v) for s, v in per_cold.items()}
        out["cold_calls_per_block"] = cold_calls
    return out


def _os_threads() -> dict[str, int] | None:
    """This process's OS threads by name (``/proc/self/task/*/comm``: Python's, torch's and the CUDA driver's
    alike), with how many carry each name; None where /proc is not there."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    names: dict[str, int] = {}
    for t in tasks:
        with contextlib.suppress(OSError):  # a thread that ended since the listing
            name = Path(f"/proc/self/task/{t}/comm").read_text().strip()
            names[name] = names.get(name, 0) + 1
    return dict(sorted(names.items()))


def _child_processes() -> int | None:
    """How many child processes this process has (compile workers and the like, zombies included): psutil where
    installed, else the kernel's ``children`` list of each of this process's threads, else a scan of /proc for
    processes whose parent is this one; None where none of these can be read."""
    try:
        import psutil  # type: ignore[import-untyped]

        return len(psutil.Process().children())
    except ImportError:
        pass
    except Exception:
        return None
    pid = os.getpid()
    try:
        kids: set[str] = set()
        for t in os.listdir(f"/proc/{pid}/task"):
            kids.update(Path(f"/proc/{pid}/task/{t}/children").read_text().split())
        return len(kids)
    except OSError:
        pass
    try:
        entries = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return None
    n = 0
    for d in entries:
        with contextlib.suppress(OSError, IndexError, ValueError):  # a process that ended since the listing
            stat = Path(f"/proc/{d}/stat").read_text()
            n += int(stat.rsplit(")", 1)[1].split()[1]) == pid  # the field after the state: the parent's pid
    return n


def process_state(torch: Any = None, cuda: bool = False) -> dict[str, Any]:
    """What a process carries besides the code it runs, any of which could make identical host code slower: its
    threads (Python's by name, and the OS's), child processes, the collector's settings and heap, the interpreter's
    switch interval and hooks, and on CUDA the allocator's memory. Read in milliseconds (the heap's object count
    walks every tracked object), right before a dispatch timing."""
    out: dict[str, Any] = {
        "thread_names": sorted(t.name for t in threading.enumerate()),
        "os_threads": _os_threads(), "children": _child_processes(),
        "switch_interval_s": sys.getswitchinterval(), "gc_enabled": gc.isenabled(),
        "gc_threshold": list(gc.get_threshold()), "gc_count": list(gc.get_count()),
        "gc_freeze_count": gc.get_freeze_count(), "gc_objects": len(gc.get_objects()),
        "profile_hook": None if sys.getprofile() is None else repr(sys.getprofile()),
        "trace_hook": None if sys.gettrace() is None else repr(sys.gettrace()),
        "modules": len(sys.modules),
    }  # fmt: skip
    out["threads"] = len(out["thread_names"])
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12 on: tools registered for sys.monitoring events
    if monitoring is not None:
        out["monitoring_tools"] = [t for t in (monitoring.get_tool(i) for i in range(6)) if t]
    with contextlib.suppress(OSError, ValueError, IndexError):
        out["rss_mib"] = round(int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    if torch is not None:
        out["torch_threads"] = torch.get_num_threads()
        stack = getattr(torch._C, "_len_torch_function_stack", None)  # torch function modes (a hook on every op)
        if stack is not None:
            out["torch_function_modes"] = stack()
        if cuda:
            out["cuda_reserved_mib"] = round(torch.cuda.memory_reserved() / 2**20, 1)
            out["cuda_allocated_mib"] = round(torch.cuda.memory_allocated() / 2**20, 1)
    return out


class _Child:
    def __init__(self, engine: str, outdir: Path, device: str, quick: bool) -> None:
        import torch

        self.torch, self.engine, self.outdir, self.device, self.quick = torch, engine, outdir, device, quick
        self.calls: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {}
        self.tuners: dict[str, list[Any]] = {}  # per op: the autotuner objects its first call reached
        self.sequences: dict[str, dict[str, dict[str, Any]]] = {}  # per op: a tuner run at several keys, its row
        # LIBS_PROFILE_COLD=1: each op's cold call under cProfile (profile-cold-OP.txt); a diagnostic run, its
        # cold times are the profiler's, not comparable
        self.profile_cold = bool(os.environ.get("LIBS_PROFILE_COLD"))

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def cold(self, op: Op) -> dict[str, Any]:

        fn, args = op.make(self.torch, self.device, self.quick)
        self.sync()
        prof = None
        if self.profile_cold:  # diagnostic: where the cold call's wall time goes (the profiler slows it)
            import cProfile

            prof = cProfile.Profile()
        with RunCounter() as counted:
            t0 = time.perf_counter()
            if prof is not None:
                prof.enable()
            out = fn(*args)
            self.sync()
            if prof is not None:
                prof.disable()
            cold = time.perf_counter() - t0
        if prof is not None:
            import io
            import pstats

            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(45)
            (self.outdir / f"profile-cold-{op.name}.txt").write_text(
                f"# {self.engine}, {op.name}, the cold call under cProfile ({cold:.3f} s), by cumulative time\n"
                + buf.getvalue())
        self.calls[op.name] = (fn, args)
        self.tuners[op.name] = counted.tuners()
        tuners = [{"name": tuner_name(t), "calls": counted.counts[id(t)], "config": describe(t.best_config),
                   "stats": _choice_stats(t)}
                  for t in counted.tuners()]  # fmt: skip
        loops = 3
        with RunRecorder() as again:  # cached calls: do they still reach an autotuner's run, with which configs?
            for _ in range(loops):
                fn(*args)
        self.sync()
        for t, entry in zip(counted.tuners(), tuners):
            # a tuner run at several keys a call: the config of each run of one cached call, in order
            runs = again.seen.get(id(t), [])
            if entry["calls"] > 1 and len(runs) == loops * entry["calls"]:
                entry["sequence"] = runs[: entry["calls"]]
                entry["sequence_keys"] = again.keys.get(id(t), [])[: entry["calls"]]
        self.sequences[op.name] = {t["name"]: t for t in tuners if "sequence" in t}
        path = self.outdir / f"{op.name}.pt"
        self.torch.save(out.detach().cpu() if hasattr(out, "detach") else out, path)
        return {"cold_s": cold, "output": str(path), "tuners": tuners,
                "reaches": sum(again.counts.values()) > 0, "runs_per_cached_call": sum(again.counts.values()) / loops}

    def winners(self, op: Op, other: list[dict[str, Any]]) -> dict[str, Any]:
        """Time this engine's winners against ``other``'s (the other engine's cold ``tuners``), pinned in turn."""

        mine = self.tuners.get(op.name, [])
        if not mine:
            return {"skipped": "the op reached no autotuner"}
        theirs = {t["name"]: t for t in other}
        names = [tuner_name(t) for t in mine]
        if sorted(names) != sorted(theirs):
            return {"skipped": f"the engines' ops reached different autotuners: {sorted(names)} vs {sorted(theirs)}"}
        if len(set(names)) != len(names):
            return {"skipped": f"two autotuners of one name: {sorted(names)}"}
        mine_seq = self.sequences.get(op.name, {})
        own: list[Any] = []
        alt: list[Any] = []
        for t, n in zip(mine, names):
            if theirs[n]["calls"] == 1 and n not in mine_seq:
                own.append(matching_config(t, describe(t.best_config)))
                alt.append(matching_config(t, theirs[n]["config"]))
                continue
            # run at several keys a call: each side's configs in the order of the runs, pinned in turn
            row = mine_seq.get(n) or {}
            a, b = row.get("sequence"), theirs[n].get("sequence")
            if not a or not b or len(a) != len(b):
                return {"skipped": f"{n} ran {theirs[n]['calls']} times in one call of the op and its configs "
                                   "per run were not recorded alike in both engines (a libentry wrapper's cached "
                                   "calls reach no autotuner)"}  # fmt: skip
            if row.get("sequence_keys") != theirs[n].get("sequence_keys"):
                return {"skipped": f"{n}'s runs in one call of the op were at other keys, or in another order, in "
                                   "the two engines: its configs cannot be paired run by run"}  # fmt: skip
            own.append([matching_config(t, d) for d in a])
            alt.append([matching_config(t, d) for d in b])
        fn, args = self.calls[op.name]
        # 60 blocks of 20 calls a side (24 blocks of 10 moved by up to ~3% between runs on ~250 us ops: prod_dim's
        # pinned winner came out 1.027x while its own op time was 0.985x); ~1 s an op.
        got = remeasure_winners(self.torch, fn, args, mine, {self.engine: own, "other": alt},
                                blocks=60, calls=20, cuda=self.device == "cuda", cold_calls=5)
        cold = got.get("us_cold")
        return {"us": {self.engine: got["us"][self.engine], "other": got["us"]["other"]},
                **({"us_cold": {self.engine: cold[self.engine], "other": cold["other"]}} if cold else {}),
                "same": [_described(a) == _described(b) for a, b in zip(own, alt)],
                "other_generated": [any(describe(x) not in [describe(c) for c in t.configs] for x in _each(b))
                                    for t, b in zip(mine, alt)],
                "configs": {self.engine: [_described(c) for c in own], "other": [_described(c) for c in alt]},
                "blocks": got["blocks"], "calls_per_block": got["calls_per_block"], "redone": got.get("redone", 0),
                "waits": got.get("waits", [])}

    def time_op(self, op: Op, reps: int) -> dict[str, Any]:
        fn, args = self.calls[op.name]
        times = []
        for _ in range(reps):
            if self.device == "cuda":
                start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*args)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e3)
            else:
                t0 = time.perf_counter()
                fn(*args)
                times.append((time.perf_counter() - t0) * 1e6)
        return {"us": times}

    def _cover(self, calls: int, per_call_us: float) -> None:
        """A GPU sleep of 1.5x the host time of ``calls`` calls: the host queues them while the GPU sleeps, so
        the launch queue never makes the host wait for the GPU."""
        GpuHold.hold(self.torch, 1.5 * calls * per_call_us / 1e3)

    def dispatch(self, op: Op, n: int, state: bool = False) -> dict[str, Any]:
        """Host time of ``n`` cached calls; with ``state``, the process's :func:`process_state` read first."""
        import gc

        fn, args = self.calls[op.name]
        read = process_state(self.torch, self.device == "cuda") if state else None
        self.sync()
        before = sum(g["collections"] for g in gc.get_stats())
        if self.device != "cuda":
            t0 = time.perf_counter()
            for _ in range(n):
                fn(*args)
            host = time.perf_counter() - t0  # host time to issue n cached calls
        else:
            # Chunks of calls, each behind a GPU sleep that covers its host time (sized from the last chunk,
            # 1.5x): the launch queue never fills, so the loop times the host's dispatch and not the GPU's
            # throughput. Issued in one loop of 500, an op whose kernels outlast its host code was timed by the
            # GPU (on an H200, sum_dim, which reaches no autotuner, ran 38-82 us a round, and its engines' ratio
            # came out 1.063).
            host, done, per_call_us, cpu_s = 0.0, 0, 200.0, 0.0
            chunks: list[float] = []
            cpu_chunks: list[float] = []
            while done < n:
                k = min(50, n - done)
                self._cover(k, per_call_us)
                c0 = time.thread_time()
                t0 = time.perf_counter()
                for _ in range(k):
                    fn(*args)
                dt = time.perf_counter() - t0
                cpu_chunk = time.thread_time() - c0
                cpu_s += cpu_chunk
                cpu_chunks.append(cpu_chunk / k * 1e6)
                host += dt
                per_call_us = max(dt / k * 1e6, 5.0)
                chunks.append(per_call_us)
                self.sync()
                done += k
        # The part of a call spent inside the autotuners' run (the engine's share; the rest is the library's own
        # host code, which neither engine touches): a shorter loop under RunTimer, behind a sleep likewise.

        k = min(n, 100)
        with RunTimer() as rt:
            if self.device == "cuda":
                self._cover(k, max(host / n * 1e6, 5.0))
            for _ in range(k):
                fn(*args)
        self.sync()
        # diagnostics for a process-level difference (a larger heap makes the collector's passes longer)
        out = {"us_per_call": host / n * 1e6, "run_us_per_call": rt.seconds / k * 1e6,
               "gc_passes": sum(g["collections"] for g in gc.get_stats()) - before, "gc_objects": len(gc.get_objects())}
        if self.device == "cuda":
            # The median chunk (one chunk an interrupt or a page fault slowed does not move it), and a control:
            # the same chunked loop over a fixed host path that neither engine touches (torch's own launch of
            # a tiny add). Its ratio between the two processes is what process-level differences alone (core
            # state, memory layout) do to identical code; an op that reaches no autotuner should show the same.
            out["us_per_call_median_chunk"] = statistics.median(chunks)
            # The calling thread's CPU time a call: the host work itself, without the time the thread was not
            # running (another process or the hypervisor on the pinned core), which wall time counts.
            out["cpu_us_per_call"] = cpu_s / n * 1e6
            # the fastest quarter of the chunks (what a call costs when nothing else ran on the core): a
            # secondary statistic, printed beside the primary, recorded for judging its spread on identical code
            fast = sorted(cpu_chunks)[: max(1, len(cpu_chunks) // 4)]
            out["cpu_us_per_call_fast_quarter"] = statistics.fmean(fast)
            out["control_us"], out["control_cpu_us"] = self._control(200)
        if read is not None:
            out["state"] = read
        return out

    def profile(self, op: Op, n: int) -> dict[str, Any]:
        """cProfile over ``n`` cached calls (each chunk behind a GPU sleep, as :meth:`dispatch`): where an op's
        host time goes, per function, under this engine. Written to ``profile-OP.txt`` beside the outputs."""
        import cProfile
        import io
        import pstats

        fn, args = self.calls[op.name]
        self.sync()
        prof = cProfile.Profile()
        for _ in range(max(1, n // 50)):
            if self.device == "cuda":
                self._cover(50, 400.0)  # the profiler slows the host several-fold
            prof.enable()
            for _ in range(50):
                fn(*args)
            prof.disable()
            self.sync()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
        path = self.outdir / f"profile-{op.name}.txt"
        path.write_text(f"# {self.engine}, {op.name}, {n} cached calls, sorted by own time\n" + buf.getvalue())
        return {"path": str(path)}

    def _control(self, n: int) -> tuple[float, float]:
        x = self._control_x if hasattr(self, "_control_x") else self.torch.zeros(16, device="cuda")
        self._control_x = x
        chunks, cpu = [], 0.0
        for _ in range(n // 50):
            self._cover(50, 20.0)
            c0 = time.thread_time()
            t0 = time.perf_counter()
            for _ in range(50):
                x.add_(1.0)
            chunks.append((time.perf_counter() - t0) / 50 * 1e6)
            cpu += time.thread_time() - c0
            self.sync()
        return statistics.median(chunks), cpu / (n // 50 * 50) * 1e6


def _fake_cpu_timer() -> None:
    """FAKE timer for --cpu-smoke only: Triton's autotuner cannot time configs on CPU (no active driver)."""
    from triton.runtime import autotuner

    def fake_do_bench(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
        t0 = time.perf_counter()
        kernel_call()
        ms = (time.perf_counter() - t0) * 1e3  # interpreter wall time: a FAKE stand-in for GPU time
        return [ms, ms, ms] if quantiles else [ms]

    autotuner.Autotuner.do_bench = property(lambda self: fake_do_bench)  # type: ignore[method-assign,assignment]


@contextlib.contextmanager
def _pinned_cpu(cpu: int | None) -> Iterator[None]:
    """Both engines' processes time on the same CPU core (the parent names it), so neither process's
    scheduling (core, SMT sibling, NUMA node) biases the host-side numbers; cold tuning runs unpinned, so
    compile workers forked then keep every core."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    was = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, was)


def child_main(engine: str, outdir: Path, cpu_smoke: bool, quick: bool) -> int:
    outdir.mkdir(parents=True, exist_ok=True)
    reply = sys.stdout
    sys.stdout = sys.stderr  # library prints must not interleave with the protocol
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)  # a stalled step's stacks, into the log

    def send(obj: dict[str, Any]) -> None:
        reply.write(MARK + json.dumps(obj) + "\n")
        reply.flush()

    if engine in ("tritune", FRESH):
        import tritune

        patch = getattr(tritune, "patch_triton", None)
        if patch is None:
            send({"fatal": "this tritune has no tritune.patch_triton() (the process-wide switch this benchmark "
                           "runs the libraries under); install a tritune that has it"})
            return 3
        patch()
    elif cpu_smoke:
        _fake_cpu_timer()
    libs: dict[str, str | None] = {}
    for lib in ("flag_gems", "liger_kernel", "fla"):
        if cpu_smoke and lib == "flag_gems":
            libs[lib] = "skipped: FlagGems refuses to import without a GPU device"
            continue
        try:
            mod = __import__(lib)
            if lib == "flag_gems":
                mod.enable()  # FlagGems' own switch: aten ops go to its Triton kernels
            libs[lib] = None
        except Exception as e:
            libs[lib] = f"{type(e).__name__}: {e}"
    # the tutorials: the files are checked here, and each is imported by the first op that calls it (03 runs a
    # matmul at import)
    libs["tutorials"] = tutorials_missing()
    import torch

    child = _Child(engine, outdir, "cpu" if cpu_smoke else "cuda", quick)
    by_name = {op.name: op for op in OPS}
    send({"ready": True, "libs": libs, "versions": _dist_versions(lib for lib, err in libs.items() if err is None),
          "torch": torch.__version__, "triton": _version("triton"), "tritune": _version("tritune"), "engine": engine})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        op = by_name[cmd["op"]]
        try:
            if libs.get(op.lib):
                raise RuntimeError(f"{op.lib} did not import: {libs[op.lib]}")
            if cmd["cmd"] == "cold":
                if op.name == os.environ.get("REAL_LIBRARIES_FAKE_HANG"):  # FAKE: a stalled tuning, for the tests
                    time.sleep(3600)
                res = child.cold(op)
            else:
                with _pinned_cpu(cmd.get("cpu")):
                    if cmd["cmd"] == "time":
                        res = child.time_op(op, cmd["reps"])
                    elif cmd["cmd"] == "winners":
                        res = child.winners(op, cmd["other"])
                    elif cmd["cmd"] == "profile":
                        res = child.profile(op, cmd["n"])
                    else:
                        res = child.dispatch(op, cmd["n"], bool(cmd.get("state")))
            send({"ok": True, **res})
        except Exception as e:
            send({"ok": False, "error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-4000:]})
    return 0


def _dist_versions(modules: Any) -> dict[str, str]:
    """The installed version of each imported library, by the distribution that provides the module (``fla`` comes
    from ``fla-core``)."""
    from importlib import metadata

    from tritune.bench.provenance import installed_version

    dists = metadata.packages_distributions()
    found = {dist: installed_version(dist) for mod in modules for dist in dists.get(mod, ())}
    return {dist: v for dist, v in found.items() if v is not None}


def _version(mod: str) -> str | None:
    try:
        return str(__import__(mod).__version__)
    except Exception:
        return None


# ---------------------------------------------------------------- parent: drives both engines


class _Engine:
    #: the least a step is waited for, however late it starts: a deadline guards against a step that hangs, and
    #: must not kill a working one that a late start left a second for
    MIN_WAIT_S = 30.0

    def __init__(self, name: str, args: argparse.Namespace, scratch: Path, log: Path, generation: int = 0,
                 home: Path | None = None) -> None:  # fmt: skip
        # a replacement for a stopped engine (``generation`` 1, 2, ...) starts from empty caches of its own too;
        # ``home`` names another engine's folder instead: its caches and store, as that engine left them
        home = home or scratch / (name if generation == 0 else f"{name}.{generation}")
        self.home = home
        env = dict(os.environ)
        env["TRITON_CACHE_DIR"] = str(home / "triton-cache")  # each engine from an empty cache
        env["TRITUNE_STORE"] = str(home / "tritune-store")
        # FlagGems keeps its own tuning results (LibTuner) and generated code under FLAGGEMS_CACHE_DIR: a shared
        # one let the second engine reuse the first engine's tuning (mm "tuned" in 0.43 s in the first run).
        env["FLAGGEMS_CACHE_DIR"] = str(home / "flaggems-cache")
        # One hash seed for both processes: dicts and sets of strings then lay out alike, so host-side timings of
        # identical code (an op that reaches no autotuner) do not differ by the seed each process drew.
        env["PYTHONHASHSEED"] = "0"
        if args.cpu_smoke:
            env["TRITON_INTERPRET"] = "1"
        if name in ("tritune", FRESH):  # --widen: the switch explores around each kernel's own configs
            env["TRITUNE_WIDEN"] = str(args.widen)
        cmd = [sys.executable, __file__, "--child", name, "--out", str(args.out / "outputs" / name)]
        cmd += ["--cpu-smoke"] * args.cpu_smoke + ["--quick"] * args.quick
        self._spawn(name, cmd, env, log)

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str], log: Path) -> None:
        """Start the process ``cmd``, which speaks the protocol of :func:`child_main`, and read its hello."""
        self.name = name
        self.log = log.open("w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)
        # replies arrive on a reader thread, so a step can be waited for with a deadline
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._reader, name=f"{name}-replies", daemon=True).start()
        self.stopped: str | None = None  # why the process was killed, once it was
        self.hello = self._read(None)

    def _reader(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # the pipe closed under us
            for line in self.proc.stdout:
                if line.startswith(MARK):
                    self._replies.put(dict(json.loads(line[len(MARK):])))
        self._replies.put(None)

    def _read(self, timeout_s: float | None, why: str = "") -> dict[str, Any]:
        try:
            got = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            # where it was: the child prints every thread's stack into its log on SIGUSR1 (child_main)
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal.SIGUSR1)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=2)
            self.proc.kill()
            self.proc.wait()
            self.stopped = f"stopped after {timeout_s:.0f} s" + (f": {why}" if why else "")
            return {"ok": False, "error": self.stopped}
        if got is None:
            self._replies.put(None)  # every later read sees the end too
            return {"ok": False, "fatal": f"the {self.name} engine's process exited ({self.proc.wait()}); see {self.log.name}"}
        return got

    def ask(self, deadline: float | None = None, why: str = "", **cmd: Any) -> dict[str, Any]:
        """Send one step and wait for its reply; past ``deadline`` (a ``time.time()``) the process is killed and
        the reply says so, with ``why``."""
        if self.stopped is not None or self.proc.poll() is not None:
            return {"ok": False, "error": f"the {self.name} engine's process is gone ({self.stopped or 'it exited'}); "
                                          f"see {self.log.name}"}
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return {"ok": False, "error": f"the {self.name} engine's process is gone; see {self.log.name}"}
        return self._read(None if deadline is None else max(self.MIN_WAIT_S, deadline - time.time()), why)

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.log.close()


def _tolerance(op: Op, dtype: Any) -> tuple[float, float]:
    import torch

    if op.tol is not None:
        return op.tol

    # FlagGems' per-dtype resolution (flag_gems.testing.RESOLUTION) as rtol
    rtol = {torch.float16: 1e-3, torch.bfloat16: 0.016, torch.float32: 1.3e-6, torch.float64: 1e-7}.get(dtype, 0.0)
    return rtol, 1e-4 * op.reduce_dim if dtype.is_floating_point else 0.0


def _compare(op: Op, a_path: str, b_path: str) -> dict[str, Any]:
    import torch

    a, b = torch.load(a_path), torch.load(b_path)
    if op.lib == "fla":  # fla's own test criterion (fla.utils.testing.assert_close): relative RMS error <= 0.005
        err = float((b.float() - a.float()).square().mean().sqrt()) / (float(a.float().square().mean().sqrt()) + 1e-8)
        return {"equal": bool(err <= 0.005), "rms_ratio": err, "bitwise": bool(torch.equal(a, b))}
    rtol, atol = _tolerance(op, a.dtype)
    try:
        torch.testing.assert_close(b, a, rtol=rtol, atol=atol, equal_nan=True)
        return {"equal": True, "rtol": rtol, "atol": atol}
    except AssertionError as e:
        return {"equal": False, "rtol": rtol, "atol": atol, "why": str(e)[:600]}


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def select_ops(args: argparse.Namespace) -> list[Op]:
    """The ops a run covers: the smoke ops, the quick set or all; ``+compile`` ops with ``--compile``; second shapes
    with ``--variants`` or when ``--ops`` names them. ``--ops`` keeps its order: an op's exact name, else every op
    whose name contains the text."""
    ops = [op for op in OPS if (op.smoke if args.cpu_smoke else (not args.quick or op.name in QUICK))
           and (args.compile or not op.compiled) and (args.variants or args.ops or not op.variant)]  # fmt: skip
    if args.ops:
        want = [w.strip() for w in args.ops.split(",") if w.strip()]
        names = {op.name for op in ops}
        picked = [op for w in want for op in ops if (op.name == w if w in names else w in op.name)]
        ops = list(dict.fromkeys(picked))
    return ops


def resumed_rows(path: Path, names: tuple[str, ...]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The rows of an earlier call's ``results.json`` that this call need not run again (every engine's cold run
    ended and its cached calls were timed), and that call's provenance. A run that needs more than one call's time
    limit (fla's chunked ops tune for minutes under Triton) adds up over calls on one machine: the ops of each call
    run from empty caches in their own engine processes, as in one call."""
    rows, prov = read_results(path, "--resume")
    done = {op: row for op, row in rows.items()
            if all((row.get(n) or {}).get("cold", {}).get("ok") and (row.get(n) or {}).get("us") for n in names)}
    return done, prov


def read_results(path: Path, flag: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """An earlier call's ``results.json``: its rows by op and its provenance; one line naming ``flag`` and the file
    when it is not one."""
    try:
        doc = json.loads(path.read_text())
        return doc["ops"], doc.get("provenance") or {}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{flag} {path}: not a results.json of real_libraries.py ({type(e).__name__}: {e})") from None


def _check_resumed(path: Path, earlier: dict[str, Any], prov: dict[str, Any]) -> None:
    """The earlier call must have run on the same GPU, driver, torch and triton, and each library that both calls
    imported in an engine must be the same version: one line naming what differs. A library (or the tutorials'
    files) that only one call could import does not refuse it: that call has no rows of it to mix."""
    from tritune.bench.provenance import machine_differences

    differ = machine_differences(earlier, prov)
    then, now = earlier.get("versions") or {}, prov.get("versions") or {}  # an older file has no versions
    for engine in sorted(set(then) & set(now)):
        a, b = then[engine] or {}, now[engine] or {}
        differ += [f"{engine}'s {d} {a[d]!r} there, {b[d]!r} here" for d in sorted(set(a) & set(b)) if a[d] != b[d]]
    if differ:
        raise SystemExit(f"--resume {path}: the earlier call ran elsewhere ({'; '.join(differ)}); its rows cannot be "
                         "counted with this call's: run the ops again here")  # fmt: skip


def parent_main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    ops = select_ops(args)
    names: tuple[str, ...] = tuple(n for n in ENGINES if n in args.engines.split(","))
    earlier_rows, earlier_prov = resumed_rows(args.resume, names) if args.resume else ({}, {})
    ops = [op for op in ops if op.name not in earlier_rows]
    rounds, reps, ncalls = (3, 3, 20) if args.cpu_smoke else ((5, 20, 200) if args.quick else (10, 30, 500))
    started = time.time()
    scratch = Path(tempfile.mkdtemp(prefix="real_libraries_"))
    engines = {e: _Engine(e, args, scratch, args.out / f"{e}.log") for e in names}
    started_engines = list(engines.values())  # replacements included: every one is closed at the end
    try:
        for e in engines.values():
            if "fatal" in e.hello:
                print(f"{e.name}: {e.hello['fatal']}", file=sys.stderr)
                return 2
        prov0 = _provenance(args, started, {n: e.hello for n, e in engines.items()})
        if args.resume:  # before any op runs: the earlier call's machine and versions must be this one's
            _check_resumed(args.resume, earlier_prov, prov0)
        rows: dict[str, dict[str, Any]] = {op.name: {"lib": op.lib} for op in ops}
        ran_in: dict[str, dict[str, _Engine]] = {op.name: {} for op in ops}  # the process each op's cold ran in
        cold_stop, step_stop = started + COLD_STOP * args.budget_s, started + STEP_STOP * args.budget_s
        cpu = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") and not args.no_pin else None
        fresh: _Engine | None = None
        fresh_ops: set[str] = set()
        rounds_done: dict[str, int] = {}

        def one_round(op: Op, r: int) -> None:
            """One interleaved round of an op's timing: engines alternate, the first mover alternating by round."""
            order = names if r % 2 == 0 else names[::-1]
            for n in order:
                got = engines[n].ask(step_stop, "timing", cmd="time", op=op.name, reps=reps, cpu=cpu)
                rows[op.name][n].setdefault("us", []).extend(got.get("us", []))
                if got.get("us"):
                    rows[op.name][n].setdefault("us_rounds", []).append(statistics.median(got["us"]))
            # the fresh process, where there is one, takes each place in turn (Triton's and tritune's order is
            # that of a run without it); the first round also reads each process's state
            with_fresh = [*order]
            if fresh is not None and op.name in fresh_ops:
                with_fresh.insert(r % (len(order) + 1), FRESH)
            state = {"state": True} if fresh is not None and r == 0 else {}
            for n in with_fresh:
                e = fresh if n == FRESH and fresh is not None else engines[n]
                got = e.ask(step_stop, "dispatch", cmd="dispatch", op=op.name, n=ncalls, cpu=cpu, **state)
                if "state" in got:
                    rows[op.name][n]["state"] = got["state"]
                if "us_per_call" in got:
                    rows[op.name][n].setdefault("dispatch_us", []).append(got["us_per_call"])
                    rows[op.name][n].setdefault("dispatch_gc", []).append([got["gc_passes"], got["gc_objects"]])
                    rows[op.name][n].setdefault("run_us", []).append(got.get("run_us_per_call"))
                    if "us_per_call_median_chunk" in got:
                        rows[op.name][n].setdefault("dispatch_chunk_us", []).append(got["us_per_call_median_chunk"])
                        rows[op.name][n].setdefault("control_us", []).append(got["control_us"])
                        rows[op.name][n].setdefault("dispatch_cpu_us", []).append(got["cpu_us_per_call"])
                        rows[op.name][n].setdefault("dispatch_cpu_fast_us", []).append(
                            got["cpu_us_per_call_fast_quarter"])
                        rows[op.name][n].setdefault("control_cpu_us", []).append(got["control_cpu_us"])
            rounds_done[op.name] = r + 1

        def judge(op: Op) -> None:
            """Both engines' winners pinned in turn in Triton's process: the kernels' ratio alone. It reads the
            winners from the processes that tuned the op, so it runs while they live."""
            if time.time() - started > args.budget_s:
                rows[op.name]["winners"] = {"skipped": f"not run: past --budget-s {args.budget_s}"}
                return
            other = rows[op.name]["tritune"]["cold"].get("tuners", [])
            rows[op.name]["winners"] = engines["triton"].ask(step_stop, "re-timing the winners", cmd="winners",
                                                             op=op.name, other=other, cpu=cpu)

        for op in ops:  # cold: one engine at a time, so neither's tuning competes with the other's
            for e in engines.values():
                if time.time() - started > 0.7 * args.budget_s:
                    rows[op.name][e.name] = {"cold": {"ok": False, "error": f"not run: past 70% of --budget-s {args.budget_s}"}}
                    continue
                t0 = time.time()
                own = t0 + args.op_share * args.budget_s
                why = (f"still tuning at {COLD_STOP:.0%} of --budget-s {args.budget_s}" if cold_stop <= own else
                       f"still tuning after {args.op_share:.0%} of --budget-s {args.budget_s}, one op's most "
                       "(--op-share)")
                got = e.ask(min(cold_stop, own), why, cmd="cold", op=op.name)
                rows[op.name][e.name] = {"cold": got}
                ran_in[op.name][e.name] = e
                print(f"cold {op.name} {e.name}: {'ok' if got.get('ok') else got.get('error', '?')[:200]} "
                      f"({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
                if e.stopped is not None and time.time() < cold_stop:
                    # the next ops run in a fresh process of this engine; the ops it had run lose their timing
                    gen = sum(x.name == e.name for x in started_engines)
                    fresh = _Engine(e.name, args, scratch, args.out / f"{e.name}.{gen}.log", gen)
                    started_engines.append(fresh)
                    if "fatal" in fresh.hello:
                        print(f"{e.name}: {fresh.hello['fatal']}", file=sys.stderr)
                        return 2
                    engines[e.name] = fresh
            colds = [rows[op.name][n]["cold"] for n in names]
            if len(colds) == 2 and all(c.get("ok") for c in colds):
                rows[op.name]["outputs"] = _compare(op, colds[0]["output"], colds[1]["output"])
            if not args.fresh_dispatch and all(c.get("ok") for c in colds) and all(
                    ran_in[op.name][n] is engines[n] and engines[n].stopped is None for n in names):  # fmt: skip
                # the op's first two rounds now, while its processes live: a later op's cold run that has to be
                # stopped takes the process's tuned state with it, and this op's row is whole already (a later
                # call's --resume counts it). With --fresh-dispatch every round waits for the fresh process.
                for r in range(2):
                    one_round(op, r)
                if len(names) == 2 and all(engines[n].stopped is None for n in names):
                    # and its winners judged: a later op whose cold run is stopped restarts Triton's process,
                    # whose tuned state this judge reads (an H100 run lost the judge of 21 ops that way)
                    judge(op)
            partial = {"provenance": {**prov0, "partial": "the ops so far; the run did not finish"},
                       "ops": {**earlier_rows, **rows}}
            (args.out / "results.json").write_text(json.dumps(partial, indent=1, default=str))
        # an engine that was stopped took its earlier ops' tuned state with it: those ops are not timed
        live = [op for op in ops if all(rows[op.name][n]["cold"].get("ok") and ran_in[op.name][n] is engines[n]
                                        and engines[n].stopped is None for n in names)]
        fresh = _fresh_engine(args, scratch, rows, ops, engines, ran_in, step_stop) if args.fresh_dispatch else None
        if fresh is not None:
            started_engines.append(fresh)
        fresh_ops = {op.name for op in ops if rows[op.name].get(FRESH, {}).get("cold", {}).get("ok")}
        for op in live:  # where the host time of the ops that reach an autotuner goes, under each engine (~0.5 s)
            reaches = rows[op.name][names[0]]["cold"].get("reaches")
            if args.profile_calls and reaches and time.time() - started < 0.8 * args.budget_s:
                for n in names:
                    got = engines[n].ask(step_stop, "profiling", cmd="profile", op=op.name, n=args.profile_calls,
                                         cpu=cpu)
                    rows[op.name][n]["profile"] = got.get("path") or got.get("error")
        for r in range(rounds):  # interleaved rounds; an op timed right after its cold runs has had two already
            if r >= 2 and time.time() - started > args.budget_s - WINNERS_RESERVE_S:
                break  # at least two rounds, so each engine has led once; time is kept for the winners
            for op in live:
                if rounds_done.get(op.name, 0) <= r:
                    one_round(op, r)
        if len(names) == 2:  # the live ops not judged after their first rounds (--fresh-dispatch)
            for op in live:
                if "winners" not in rows[op.name]:
                    judge(op)
        hello = {n: e.hello for n, e in engines.items()}
        if fresh is not None:
            hello[FRESH] = fresh.hello
    finally:
        for e in started_engines:
            e.close()
    prov = _provenance(args, started, hello)
    if args.resume:
        prov["resumed"] = {"from": str(args.resume), "ops": list(earlier_rows), "provenance": earlier_prov}
        rows = {**earlier_rows, **rows}
    table = _summarize(rows, names)
    (args.out / "results.json").write_text(json.dumps({"provenance": prov, "ops": rows, "summary": table}, indent=1))
    _print_table(table, prov)
    return 0


def _fresh_engine(args: argparse.Namespace, scratch: Path, rows: dict[str, dict[str, Any]], ops: list[Op],
                  engines: dict[str, _Engine], ran_in: dict[str, dict[str, _Engine]],
                  step_stop: float) -> _Engine | None:  # fmt: skip
    """--fresh-dispatch: a fresh process of the tritune engine on the caches and store of the live tritune process
    (the last generation, the one whose ops are timed), making the first call of each op that process ran; each
    reply is kept as ``rows[OP][FRESH]["cold"]``. None when no op qualifies or the process did not start."""
    tuner = engines.get("tritune")
    tuned = [op for op in ops if tuner is not None and tuner.stopped is None and ran_in[op.name].get("tritune") is tuner
             and rows[op.name]["tritune"]["cold"].get("ok")]  # fmt: skip
    if not tuned:
        print(f"--fresh-dispatch: no op that a live tritune process ran; no {FRESH} process", file=sys.stderr)
        return None
    fresh = _Engine(FRESH, args, scratch, args.out / f"{FRESH}.log", home=tuner.home)  # type: ignore[union-attr]
    if "fatal" in fresh.hello:
        print(f"{FRESH}: {fresh.hello['fatal']}", file=sys.stderr)
        for op in tuned:
            rows[op.name][FRESH] = {"cold": {"ok": False, "error": str(fresh.hello["fatal"])}}
        fresh.close()
        return None
    for op in tuned:
        t0 = time.time()
        got = fresh.ask(min(step_stop, t0 + args.op_share * args.budget_s), "making a first call from the store",
                        cmd="cold", op=op.name)  # fmt: skip
        rows[op.name][FRESH] = {"cold": got}
        print(f"first call {op.name} {FRESH}: {'ok' if got.get('ok') else got.get('error', '?')[:200]} "
              f"({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
    partial = {"provenance": {"partial": "cold runs and first calls so far; the run did not finish"}, "ops": rows}
    (args.out / "results.json").write_text(json.dumps(partial, indent=1, default=str))
    return fresh


def _paired(a: list[float], b: list[float]) -> float | None:
    """Median of the per-round ratios a[i]/b[i] (rounds measured back to back), None without a pair."""
    rs = [x / y for x, y in zip(a, b) if y]
    return statistics.median(rs) if rs else None


def _summarize(rows: dict[str, dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    per_op = {}
    # the totals and their ratio cover the ops every engine of the run ran (an op one engine failed would count for
    # the other alone); each engine's own total over every op it ran is kept beside them
    cold_total = {n: 0.0 for n in ENGINES}
    cold_own = {n: 0.0 for n in ENGINES}
    cold_ops = 0
    for name, row in rows.items():
        s: dict[str, Any] = {"lib": row["lib"]}
        every = all(row[n]["cold"].get("ok") for n in names)
        cold_ops += every
        for n in ENGINES:
            c = row[n]["cold"] if n in names else {"error": "not run (--engines)"}
            s[f"{n}_runs"] = bool(c.get("ok"))
            s[f"{n}_error"] = c.get("error")
            if c.get("ok"):
                cold_own[n] += c["cold_s"]
                cold_total[n] += c["cold_s"] if every else 0.0
            s[f"{n}_cold_s"] = c.get("cold_s")
            s[f"{n}_us"] = _median(row.get(n, {}).get("us", []))
            s[f"{n}_dispatch_us"] = _median(row.get(n, {}).get("dispatch_us", []))
            s[f"{n}_run_us"] = _median([x for x in row.get(n, {}).get("run_us", []) if x is not None])
            s[f"{n}_reaches"] = c.get("reaches")
            s[f"{n}_config"] = [t["config"] for t in c.get("tuners", [])] or None
        s["outputs_equal"] = row.get("outputs", {}).get("equal")
        s["cold_ratio"] = _ratio(s["tritune_cold_s"], s["triton_cold_s"])
        t, T = row.get("tritune", {}), row.get("triton", {})
        s["op_ratio"] = _paired(t.get("us_rounds", []), T.get("us_rounds", []))
        s["dispatch_ratio_mean"] = _paired(t.get("dispatch_us", []), T.get("dispatch_us", []))
        s["dispatch_ratio_chunk"] = _paired(t.get("dispatch_chunk_us", []), T.get("dispatch_chunk_us", []))
        cpu = _paired(t.get("dispatch_cpu_us", []), T.get("dispatch_cpu_us", []))
        # Primary (chosen before any run recorded it): the calling thread's CPU time a call (GPU runs); wall time,
        # a round's mean, where it was not recorded. Wall-time ratios of identical code in the two processes (ops
        # that reach no autotuner, and a control loop) spread 0.85-1.17 on an H200 host.
        s["dispatch_ratio"] = cpu if cpu is not None else s["dispatch_ratio_mean"]
        s["tritune_dispatch_cpu_us"] = _median(t.get("dispatch_cpu_us", []))
        s["triton_dispatch_cpu_us"] = _median(T.get("dispatch_cpu_us", []))
        s["dispatch_ratio_fast_quarter"] = _paired(t.get("dispatch_cpu_fast_us", []), T.get("dispatch_cpu_fast_us", []))
        s["control_ratio"] = _paired(t.get("control_us", []), T.get("control_us", []))
        s["control_ratio_cpu"] = _paired(t.get("control_cpu_us", []), T.get("control_cpu_us", []))
        w = row.get("winners") or {}
        us = w.get("us") or {}
        s["winner_same"] = all(w["same"]) if w.get("same") else None
        usc = w.get("us_cold") or {}
        # tritune's winner over Triton's, warm and each call after a flush. Where both engines chose the same
        # configs the kernels are the same, and the ratio is 1 by construction; the measured one is kept as the
        # judge's own A/A spread (on an H200: 1.062 and 1.071 cold on the same config of ~3.6 us kernels).
        s["winner_ratio_measured"] = _ratio(us.get("other"), us.get("triton"))
        s["winner_ratio_cold_measured"] = _ratio(usc.get("other"), usc.get("triton"))
        same = bool(s["winner_same"])
        s["winner_ratio"] = 1.0 if same and s["winner_ratio_measured"] is not None else s["winner_ratio_measured"]
        s["winner_ratio_cold"] = (1.0 if same and s["winner_ratio_cold_measured"] is not None
                                  else s["winner_ratio_cold_measured"])  # fmt: skip
        s["winner_note"] = w.get("skipped") or w.get("error")
        s["winner_waits"] = bool(w.get("waits"))  # a side's calls waited for the GPU: warm includes host time
        s["winner_generated"] = any(w["other_generated"]) if w.get("other_generated") else None  # not in the list
        s["reaches"] = s["triton_reaches"]  # classified under Triton; tritune's own is recorded beside it
        s["space"] = _spaces(row.get("tritune", {}).get("cold", {}).get("tuners", []))
        per_op[name] = s
    reach = [s["dispatch_ratio"] for s in per_op.values() if s["reaches"] and s["dispatch_ratio"] is not None]
    disp = [s["dispatch_ratio"] for s in per_op.values() if s["dispatch_ratio"] is not None]
    wins = [s["winner_ratio"] for s in per_op.values() if s["winner_ratio"] is not None]
    wins_cold = [s["winner_ratio_cold"] for s in per_op.values() if s.get("winner_ratio_cold") is not None]
    aa = [r for s in per_op.values() if s["winner_same"] for r in (s["winner_ratio_measured"], s["winner_ratio_cold_measured"])
          if r is not None]  # fmt: skip
    controls = [s["control_ratio_cpu"] for s in per_op.values() if s.get("control_ratio_cpu") is not None]
    walls = [s["dispatch_ratio_mean"] for s in per_op.values() if s["reaches"] and s["dispatch_ratio_mean"] is not None]
    bypass = [s["dispatch_ratio"] for s in per_op.values() if s["reaches"] is False and s["dispatch_ratio"] is not None]
    fq = {k: s.get("dispatch_ratio_fast_quarter") for k, s in per_op.items()}
    fq_reach = [r for k, r in fq.items() if r is not None and per_op[k]["reaches"]]
    fq_bypass = [r for k, r in fq.items() if r is not None and per_op[k]["reaches"] is False]
    widened = {k: s["winner_ratio"] for k, s in per_op.items() if s["winner_ratio"] is not None}
    out: dict[str, Any] = {"ops": per_op, "cold_total_s": cold_total, "cold_total_ops": cold_ops,
            "cold_own_total_s": cold_own,
            "winner_ratio_median": _median(list(widened.values())),
            "winner_ratio_best": min(widened.values()) if widened else None,
            "winners_at_most_1_01": sum(1 for r in widened.values() if r <= 1.01),
            "winners_faster_by_5pct": sorted(k for k, r in widened.items() if r <= 0.95),
            **_by_op(widened, per_op),
            "cold_total_ratio": _ratio(cold_total["tritune"], cold_total["triton"]),
            "engines": list(names),
            "ops_run": {n: sum(1 for s in per_op.values() if s[f"{n}_runs"]) for n in ENGINES},
            "ops_equal": sum(1 for s in per_op.values() if s["outputs_equal"]), "ops_total": len(per_op),
            "dispatch_ratio_median_reaching": _median(reach), "ops_reaching": len(reach),
            "dispatch_ratio_max_reaching": max(reach) if reach else None,
            "dispatch_ratio_max": max(disp) if disp else None,
            "winner_ratio_max": max(wins) if wins else None, "winners_compared": len(wins),
            "winners_within_1_02": sum(1 for r in wins if r <= 1.02),
            "winner_ratio_cold_max": max(wins_cold) if wins_cold else None, "winners_compared_cold": len(wins_cold),
            "winners_cold_within_1_02": sum(1 for r in wins_cold if r <= 1.02),
            "winners_warm_waiting": sorted(k for k, s in per_op.items() if s.get("winner_waits")),
            "dispatch_ratio_median_reaching_wall": _median(walls),
            "judge_aa_ratios": aa, "control_ratio_median": _median(controls),
            "control_ratio_range": [min(controls), max(controls)] if controls else None,
            "bypass_dispatch_range": [min(bypass), max(bypass)] if bypass else None,
            "fast_quarter_median_reaching": _median(fq_reach),
            "fast_quarter_bypass_range": [min(fq_bypass), max(fq_bypass)] if fq_bypass else None}
    if any(FRESH in row for row in rows.values()):
        out.update(_summarize_fresh(rows, per_op))
    return out


#: process_state's keys that change from one moment to the next on their own: kept in the rows, not compared
STATE_NOISE = ("gc_count",)


def _summarize_fresh(rows: dict[str, dict[str, Any]], per_op: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """--fresh-dispatch: per op (into ``per_op``), the fresh tritune process's first call (from the store) and the
    tuning process's dispatch time over the fresh one's, median of per-round ratios (the calling thread's CPU time;
    wall time where that was not recorded, as in --cpu-smoke), the control loop's likewise; over the ops, their
    median and worst, and the process state that differs between the two processes at the first op both read it."""
    ratios: dict[str, float] = {}
    controls: list[float] = []
    first_calls: dict[str, float] = {}
    state_diff: dict[str, Any] = {}
    for name, row in rows.items():
        if FRESH not in row:
            continue
        s = per_op[name]
        c, t, f = row[FRESH].get("cold", {}), row.get("tritune", {}), row[FRESH]
        s[f"{FRESH}_runs"] = bool(c.get("ok"))
        s[f"{FRESH}_error"] = c.get("error")
        s[f"{FRESH}_cold_s"] = c.get("cold_s")  # the first call in a fresh process with the store
        if c.get("ok"):
            first_calls[name] = c["cold_s"]
            mine = [x["config"] for x in t.get("cold", {}).get("tuners", [])]
            s[f"{FRESH}_same_config"] = [x["config"] for x in c.get("tuners", [])] == mine
        s[f"{FRESH}_dispatch_us"] = _median(f.get("dispatch_us", []))
        s[f"{FRESH}_dispatch_cpu_us"] = _median(f.get("dispatch_cpu_us", []))
        cpu = _paired(t.get("dispatch_cpu_us", []), f.get("dispatch_cpu_us", []))
        s["fresh_ratio_wall"] = _paired(t.get("dispatch_us", []), f.get("dispatch_us", []))
        s["fresh_ratio"] = cpu if cpu is not None else s["fresh_ratio_wall"]
        s["fresh_ratio_basis"] = "cpu" if cpu is not None else ("wall" if s["fresh_ratio"] is not None else None)
        s["fresh_control_ratio_cpu"] = _paired(t.get("control_cpu_us", []), f.get("control_cpu_us", []))
        if s["fresh_ratio"] is not None:
            ratios[name] = s["fresh_ratio"]
        if s["fresh_control_ratio_cpu"] is not None:
            controls.append(s["fresh_control_ratio_cpu"])
        if not state_diff and t.get("state") and f.get("state"):
            state_diff = {"op": name, "differs": {k: {"tuning": t["state"].get(k), "fresh": f["state"].get(k)}
                                                  for k in sorted({*t["state"], *f["state"]} - set(STATE_NOISE))
                                                  if t["state"].get(k) != f["state"].get(k)}}  # fmt: skip
    worst = max(ratios, key=ratios.__getitem__) if ratios else None
    return {"fresh_ratio_median": _median(list(ratios.values())), "fresh_ops_compared": len(ratios),
            "fresh_ratio_max": ratios[worst] if worst else None, "fresh_ratio_worst_op": worst,
            "fresh_ratio_basis": sorted({per_op[k]["fresh_ratio_basis"] for k in ratios}),
            "fresh_control_ratio_median": _median(controls),
            "fresh_first_call_s": first_calls, "fresh_first_call_total_s": sum(first_calls.values()),
            "fresh_state_diff": state_diff or None}


def _widen_arg(value: str) -> int | str:
    """``--widen``'s value, read as ``patch_triton(widen=)`` reads ``$TRITUNE_WIDEN``: a number of steps, or
    ``derived``."""
    from tritune.api import _widen
    from tritune.errors import ConfigError

    try:
        return _widen(value)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _spaces(tuners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """tritune's record of how each tuner's space was made (``choices()[key].stats["space"]``): the configs given
    and generated, the legal ones, whether the winner was generated and its time over the best given config's,
    measured in the same race."""
    out = []
    for t in tuners:
        for key, st in (t.get("stats") or {}).items():
            sp = (st or {}).get("space") if isinstance(st, dict) else None
            if sp:
                checked = (st.get("checked") or {}) if isinstance(st.get("checked"), dict) else {}
                warm = st.get("warm_check") if isinstance(st.get("warm_check"), dict) else None
                out.append({"tuner": t["name"], "key": key, **{k: sp.get(k) for k in (
                    "source", "given", "generated", "legal", "generated_legal", "winner_generated",
                    "winner_over_best_written", "stages_kept", "not_derived", "generated_timed")},
                    # generated configs the output check refused (what differed, and on which input)
                    "refused": dict(checked.get("other") or {}),
                    # seconds the check spent making its inputs and running the configs (the reference's runs too)
                    "check_s": checked.get("s"),
                    "total_s": st.get("total_s"),
                    "warm_kept": None if warm is None else warm.get("kept")})  # fmt: skip
    return out


def _check_seconds(sp: dict[str, Any]) -> str:
    """``; check 0.41 s of 1.59`` where the key's output check (inputs and runs) and total tuning time are known."""
    c = sp.get("check_s") or {}
    if not c:
        return ""
    total = sp.get("total_s")
    return f"; check {sum(c.values()):.2f} s" + (f" of {total:.2f}" if isinstance(total, (int, float)) else "")


def _fmt(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _print_table(t: dict[str, Any], prov: dict[str, Any]) -> None:
    print(f"# real libraries, {prov['gpu']}, torch {prov['torch']}, triton {prov['triton']}, {prov['date']}")
    head = ("op", "runs T/t", "equal", "cold T s", "cold t s", "ratio", "op T us", "op t us", "ratio",
            "winner t/T", "cold t/T", "same", "disp T cpu us", "disp t cpu us", "ratio", "reaches")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, s in t["ops"].items():
        cells = (name, f"{int(s['triton_runs'])}/{int(s['tritune_runs'])}", str(s["outputs_equal"]),
                 _fmt(s["triton_cold_s"], ".2f"), _fmt(s["tritune_cold_s"], ".2f"), _fmt(s["cold_ratio"], ".2f"),
                 _fmt(s["triton_us"], ".1f"), _fmt(s["tritune_us"], ".1f"), _fmt(s["op_ratio"], ".3f"),
                 _fmt(s["winner_ratio"], ".3f"), _fmt(s.get("winner_ratio_cold"), ".3f"), "-" if s["winner_same"] is None else str(s["winner_same"]),
                 _fmt(s.get("triton_dispatch_cpu_us") or s["triton_dispatch_us"], ".1f"),
                 _fmt(s.get("tritune_dispatch_cpu_us") or s["tritune_dispatch_us"], ".1f"),
                 _fmt(s["dispatch_ratio"], ".3f"), "-" if s["reaches"] is None else str(s["reaches"]))
        print("| " + " | ".join(cells) + " |")
        for n in ENGINES:
            if s[f"{n}_error"]:
                print(f"|   {n} error: {s[f'{n}_error'][:300]} |")
        if s["winner_note"]:
            print(f"|   winner not compared: {s['winner_note'][:300]} |")
    ct = t["cold_total_s"]  # an engine not run counts 0
    print(f"cold total over the {t['cold_total_ops']} ops every engine ran: triton {ct['triton']:.2f} s, tritune "
          f"{ct['tritune']:.2f} s, ratio {_fmt(t['cold_total_ratio'], '.3f')} (T = triton, t = tritune)")
    print(f"winners re-measured interleaved (warm: calls back to back): {t['winners_within_1_02']}/"
          f"{t['winners_compared']} within 1.02x of Triton's, worst {_fmt(t['winner_ratio_max'], '.3f')}")
    if t.get("winners_warm_waiting"):
        print(f"  warm, the calls of {', '.join(t['winners_warm_waiting'])} waited for the GPU (the library "
              "synchronizes): no sleep covers their queuing, so their warm times include host time")
    if t.get("winners_compared_cold"):
        print(f"winners re-measured interleaved (cold: each call after an L2 flush, the state both engines tune "
              f"in): {t['winners_cold_within_1_02']}/{t['winners_compared_cold']} within 1.02x, worst "
              f"{_fmt(t['winner_ratio_cold_max'], '.3f')}")
    if t.get("judge_aa_ratios"):
        aa = t["judge_aa_ratios"]
        print(f"  where both engines chose the same configs the ratio counts as 1.000 (same kernels); the judges "
              f"measured those pairs at {min(aa):.3f}-{max(aa):.3f} (their A/A spread)")
    print(f"dispatch (the calling thread's CPU time a call, median of per-round ratios): worst ratio "
          f"{_fmt(t['dispatch_ratio_max'], '.3f')}; median over the {t['ops_reaching']} ops "
          f"whose cached calls reach the autotuner {_fmt(t['dispatch_ratio_median_reaching'], '.3f')} "
          f"(wall time: {_fmt(t.get('dispatch_ratio_median_reaching_wall'), '.3f')}), worst of them "
          f"{_fmt(t.get('dispatch_ratio_max_reaching'), '.3f')}")
    if t.get("control_ratio_median") is not None:
        lo, hi = t["control_ratio_range"]
        print(f"  control (a torch add's host path, the same code in both processes, CPU time): tritune/Triton process "
              f"{t['control_ratio_median']:.3f} (ops' rounds {lo:.3f}-{hi:.3f}); ops that reach no autotuner "
              f"(identical code too): {_fmt((t.get('bypass_dispatch_range') or [None])[0], '.3f')}-"
              f"{_fmt((t.get('bypass_dispatch_range') or [None, None])[1], '.3f')}")
    if t.get("fast_quarter_median_reaching") is not None:
        lo, hi = t.get("fast_quarter_bypass_range") or (None, None)
        print(f"  secondary (each round's fastest quarter of chunks, CPU time): median over the reaching ops "
              f"{t['fast_quarter_median_reaching']:.3f}; ops that reach no autotuner {_fmt(lo, '.3f')}-{_fmt(hi, '.3f')}")
    reach = [(n, s) for n, s in t["ops"].items() if s["reaches"] and s.get("triton_run_us") is not None
             and s.get("tritune_run_us") is not None and s["triton_dispatch_us"] and s["tritune_dispatch_us"]]
    if reach:
        print("host us per cached call (wall time) inside the autotuners' run (the engine's share) and outside it "
              "(the library's own code), Triton / tritune:")
        for n, s in reach:
            print(f"  {n:22s} run {s['triton_run_us']:6.1f} / {s['tritune_run_us']:6.1f}   outside "
                  f"{s['triton_dispatch_us'] - s['triton_run_us']:6.1f} / {s['tritune_dispatch_us'] - s['tritune_run_us']:6.1f}")
    if prov.get("widen"):
        print("widened (t) against the library's own list as Triton tuned it (T), both winners pinned in Triton's "
              "process and timed interleaved (winner t/T above):")
        for n, s in t["ops"].items():
            for sp in s.get("space") or []:
                warm = {None: "", True: "; warm check: kept", False: "; warm check: the written config serves"}
                kept = " (num_stages kept: no loop)" if sp.get("stages_kept") else ""
                how = "derived" if sp.get("source") == "derived around the list" else "generated"
                kept += f" (not derived: {sp['not_derived'][:80]})" if sp.get("not_derived") else ""
                if sp.get("generated_timed") is not None:  # a widened list's neighbours: timed only near the best
                    kept += f" ({sp['generated_timed']} generated timed)"
                print(f"  {n:24s} {sp['tuner'][:28]:28s} given {sp['given']}, {how} {sp['generated']}{kept}, legal "
                      f"{sp['legal']} ({sp['generated_legal']} generated); winner generated: {sp['winner_generated']}, "
                      f"over the best given in tritune's race {_fmt(sp['winner_over_best_written'], '.3f')}; "
                      f"refused by the check: {len(sp.get('refused') or {})}{warm[sp.get('warm_kept')]}"
                      f"{_check_seconds(sp)}")
        gen = [n for n, s in t["ops"].items() if s.get("winner_generated")]
        print(f"  ops whose tritune winner is a config outside the library's list: {len(gen)} ({', '.join(gen) or '-'})")
        print(f"  winner t/T: median {_fmt(t['winner_ratio_median'], '.3f')}, best {_fmt(t['winner_ratio_best'], '.3f')}; "
              f"{t['winners_at_most_1_01']}/{t['winners_compared']} at most 1.01; faster by 5% or more: "
              f"{len(t['winners_faster_by_5pct'])} ({', '.join(t['winners_faster_by_5pct']) or '-'})")
        if t.get("base_ops_judged"):
            print(f"  per op over its shapes (OP, OP@odd, OP@small): {t['base_ops_judged']} ops judged at "
                  f"{t['winners_compared']} shapes, of {t['base_ops_run']} ops "
                  f"run; 5% faster at some shape: {len(t['base_ops_faster_somewhere'])} "
                  f"({', '.join(t['base_ops_faster_somewhere']) or '-'}), at every judged shape: "
                  f"{len(t['base_ops_faster_everywhere'])}; within 1.01 at every judged shape: "
                  f"{t['base_ops_within_1_01']}")
    if "fresh_ratio_median" in t:
        _print_fresh(t)
    print(f"ops run: triton {t['ops_run']['triton']}/{t['ops_total']}, tritune {t['ops_run']['tritune']}/"
          f"{t['ops_total']}; outputs equal {t['ops_equal']}/{t['ops_total']}")


def _by_op(widened: dict[str, float], per_op: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The winners' ratios per op over its shapes (``OP``, ``OP@odd``, ``OP@small`` are one op): how many ops were
    judged and run, which were 5% faster at some judged shape and at every one, and how many stayed within 1.01× at
    every one. An op run but not judged counts as neither."""
    shapes: dict[str, list[float]] = {}
    for name, r in widened.items():
        shapes.setdefault(name.split("@")[0], []).append(r)
    run = {name.split("@")[0] for name, s in per_op.items() if s.get("triton_runs") and s.get("tritune_runs")}
    return {"base_ops_judged": len(shapes), "base_ops_run": len(run),
            "base_ops_faster_somewhere": sorted(b for b, rs in shapes.items() if min(rs) <= 0.95),
            "base_ops_faster_everywhere": sorted(b for b, rs in shapes.items() if max(rs) <= 0.95),
            "base_ops_within_1_01": sum(1 for rs in shapes.values() if max(rs) <= 1.01)}


def _print_fresh(t: dict[str, Any]) -> None:
    """--fresh-dispatch's part of the table: the tuning tritune process against a fresh one, per op and overall, and
    the process state where the two differ."""
    basis = "the calling thread's CPU time" if t["fresh_ratio_basis"] == ["cpu"] else (
        "wall time where CPU time was not recorded" if t["fresh_ratio_basis"] else "-")
    print(f"tuning process / fresh process (tritune): a cached call in the process that tuned over one in a fresh "
          f"process on the same caches and store ({basis}, median of per-round ratios); first call: the fresh "
          f"process's first call of the op, with the store the tuning process wrote")
    head = ("op", "first call s", "same configs", "disp tuning us", "disp fresh us", "ratio", "control ratio",
            "reaches")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, s in t["ops"].items():
        if f"{FRESH}_runs" not in s:
            continue
        same = s.get(f"{FRESH}_same_config")
        cells = (name, _fmt(s[f"{FRESH}_cold_s"], ".3f"), "-" if same is None else str(same),
                 _fmt(s.get("tritune_dispatch_cpu_us") or s["tritune_dispatch_us"], ".1f"),
                 _fmt(s.get(f"{FRESH}_dispatch_cpu_us") or s[f"{FRESH}_dispatch_us"], ".1f"),
                 _fmt(s["fresh_ratio"], ".3f"), _fmt(s["fresh_control_ratio_cpu"], ".3f"),
                 "-" if s["tritune_reaches"] is None else str(s["tritune_reaches"]))
        print("| " + " | ".join(cells) + " |")
        if s[f"{FRESH}_error"]:
            print(f"|   {FRESH} error: {s[f'{FRESH}_error'][:300]} |")
    print(f"tuning process / fresh process (tritune): median {_fmt(t['fresh_ratio_median'], '.3f')} over "
          f"{t['fresh_ops_compared']} ops, worst {_fmt(t['fresh_ratio_max'], '.3f')} "
          f"({t['fresh_ratio_worst_op'] or '-'})")
    if t.get("fresh_control_ratio_median") is not None:
        print(f"  control (a torch add's host path, CPU time): tuning process / fresh process median "
              f"{t['fresh_control_ratio_median']:.3f}")
    print(f"first call in a fresh process with the store: {t['fresh_first_call_total_s']:.3f} s in all over "
          f"{len(t['fresh_first_call_s'])} ops")
    diff = t.get("fresh_state_diff")
    if not diff:
        return
    print(f"process state where the tuning and the fresh tritune process differ (read before {diff['op']}'s first "
          f"dispatch round), tuning / fresh:" + ("" if diff["differs"] else " nowhere"))
    for key, v in diff["differs"].items():
        a, b = v["tuning"], v["fresh"]
        if isinstance(a, (list, dict)) and isinstance(b, (list, dict)):
            ca, cb = Counter(a), Counter(b)  # names, with their counts for OS threads
            print(f"  {key}: only in the tuning process {_names(ca - cb)}; only in the fresh one {_names(cb - ca)}")
        else:
            print(f"  {key}: {a} / {b}")


def _names(c: Counter[str]) -> str:
    return ", ".join(n if k == 1 else f"{n} x{k}" for n, k in sorted(c.items())) or "-"


def _provenance(args: argparse.Namespace, started: float, hello: dict[str, Any]) -> dict[str, Any]:
    from tritune.bench.provenance import gpu_and_driver

    gpu, driver = ("cpu (interpreter smoke)", None) if args.cpu_smoke else gpu_and_driver()
    gpu = gpu or "unknown"
    h = hello.get("triton") or hello.get("tritune") or {}
    return {"gpu": gpu, "driver": driver, "torch": h.get("torch"), "triton": h.get("triton"),
            "tritune": hello.get("tritune", {}).get("tritune"), "libs": {n: v.get("libs") for n, v in hello.items()},
            "versions": {n: v.get("versions") for n, v in hello.items()},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "wall_s": round(time.time() - started, 1), "python": platform.python_version(),
            "command": " ".join([sys.executable, *sys.argv]), "widen": args.widen,
            "compile": bool(args.compile), "fresh_dispatch": bool(args.fresh_dispatch)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="directory for results.json, outputs and logs")
    p.add_argument("--profile-calls", type=int, default=1000,
                   help="cProfile this many cached calls of each op that reaches an autotuner, per engine (0: none)")
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, fewer rounds")
    p.add_argument("--ops", default="", help="comma-separated op names (or parts of names) to run, in this order")
    p.add_argument("--cpu-smoke", action="store_true", help="two tiny autotuned kernels under the interpreter, no GPU")
    p.add_argument("--budget-s", type=float, default=330.0,
                   help="stop starting cold runs at 70%% of this, and timing rounds (after two) at 100%%")
    p.add_argument("--op-share", type=float, default=OP_COLD_SHARE,
                   help="the most of --budget-s one op's cold run may take before its engine is stopped and replaced "
                        "(default %(default)s; an op that tunes for minutes under Triton, fla's chunked GLA, needs more)")
    p.add_argument("--engines", default=",".join(ENGINES), help="triton,tritune (default), or one of them to debug")
    p.add_argument("--widen", nargs="?", type=_widen_arg, const=1, default=0, metavar="STEPS",
                   help="the tritune engine widens each kernel's own configs (patch_triton(widen=STEPS), 1 when not "
                        "given; 'derived': the list and the space derived from the kernel's source); the winners' "
                        "comparison is then the widened winner against Triton's winner of the library's list")
    p.add_argument("--compile", action="store_true", help="also the ops marked +compile (called inside torch.compile)")
    p.add_argument("--resume", type=Path, default=None, metavar="RESULTS_JSON",
                   help="an earlier call's results.json (same GPU, torch, triton, libraries): its finished ops are not "
                        "run again and count in this call's summary")
    p.add_argument("--variants", action="store_true",
                   help="also the ops' other shapes (OP@odd: sizes no power of 2 divides; OP@small: inference sizes); "
                        "--ops can name them too")
    p.add_argument("--no-pin", action="store_true", help="do not pin both engines to one CPU core while timing")
    p.add_argument("--fresh-dispatch", action="store_true",
                   help="also time cached calls in a fresh tritune process on the caches and store the tuning one "
                        "wrote, and its first calls; each engine's process state is read in the first dispatch round")
    p.add_argument("--merge", type=Path, nargs="+", default=None, metavar="RESULTS_JSON",
                   help="run nothing: summarise the ops of these calls' results.json as one run (same GPU, driver, "
                        "torch, triton and libraries; an op in several: the first call that judged its winners), "
                        "into --out/results.json")
    p.add_argument("--child", choices=(*ENGINES, FRESH), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child_main(args.child, args.out, args.cpu_smoke, args.quick)
    if args.merge:
        return merge_main(args.merge, args.out)
    return parent_main(args)


def _completeness(row: dict[str, Any]) -> int:
    """2: the row's winners were judged; 1: every engine it names ran the op's cold call; 0: neither."""
    if ((row.get("winners") or {}).get("us") or {}).get("other") is not None:
        return 2
    sides = [row[n] for n in ENGINES if isinstance(row.get(n), dict)]
    return int(bool(sides) and all((side.get("cold") or {}).get("ok") for side in sides))


def merge_main(paths: list[Path], out: Path) -> int:
    """``--merge``: the ops of several calls' results.json summarised as one run, as ``--resume`` would count them
    (every call on the machine of the first). An op that several calls ran counts once: from the first call that
    judged its winners, else the first that ran it under every engine, else the first."""
    rows: dict[str, dict[str, Any]] = {}
    first: dict[str, Any] | None = None
    merged: list[dict[str, Any]] = []
    for path in paths:
        ops, prov = read_results(path, "--merge")
        if first is None:
            first = prov
        else:
            _check_resumed(path, first, prov)
        merged.append({"from": str(path), "ops": list(ops)})
        for name, row in ops.items():
            if name not in rows or _completeness(row) > _completeness(rows[name]):
                rows[name] = row
    names = tuple(n for n in ENGINES if any(n in row for row in rows.values()))
    table = _summarize(rows, names)
    prov = {**(first or {}), "merged": merged}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"provenance": prov, "ops": rows, "summary": table}, indent=1))
    _print_table(table, prov)
    return 0


if __name__ == "__main__":
    sys.exit(main())

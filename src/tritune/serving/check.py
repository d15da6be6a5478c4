"""The check of a candidate in incremental tuning: its scratch outputs against the provisional config's.

A check's device time is charged to the key's tuning budget, so the comparison is one fused pass where it
can be (:data:`differ_kernel`: reads both outputs once, counts the elements that differ with one atomic
per block), compiled in the engine's workers and loaded by the background thread before any check uses it
(:func:`prepare_fused`). Elsewhere (complex or non-contiguous outputs, before it is loaded, no GPU)
``torch.isclose``, about fifteen elementwise kernels, does the same count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any

import triton
import triton.language as tl

from tritune.config import Config
from tritune.verify.reference import tolerance as default_tolerance

#: The one config of :data:`differ_kernel` (a streaming pass: wide blocks, four warps).
DIFFER_CONFIG = Config({"BLOCK": 2048}, num_warps=4)


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["g_ptr", "r_ptr"])
def differ_kernel(g_ptr, r_ptr, n, atol, rtol, count_ptr, EXACT: tl.constexpr, WIDE: tl.constexpr,
                  BLOCK: tl.constexpr):  # fmt: skip
    """``count += #{i < n : g[i] and r[i] differ}``: exactly (``EXACT``), or beyond ``atol + rtol*|r|``,
    where equal values (infinities) and NaN in both agree (``torch.isclose(..., equal_nan=True)``).
    Pointers and ``n`` are not specialized: one binary per dtype serves every output."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m)
    r = tl.load(r_ptr + offs, mask=m)
    if EXACT:
        bad = g != r
    else:
        if WIDE:
            gf = g.to(tl.float64)
            rf = r.to(tl.float64)
        else:
            gf = g.to(tl.float32)
            rf = r.to(tl.float32)
        close = tl.abs(gf - rf) <= atol + rtol * tl.abs(rf)
        bad = ~(close | (gf == rf) | ((gf != gf) & (rf != rf)))
    tl.atomic_add(count_ptr, tl.sum((bad & m).to(tl.int32), axis=0))


def _fusable(t: Any) -> bool:
    return not t.dtype.is_complex and t.is_contiguous()


#: (dtype, device index) -> a fast launcher of :data:`differ_kernel` (built once the binary is loaded):
#: the comparison inside a check's event span is one launch, not Triton's binding of seven arguments.
_FAST_DIFFER: dict[tuple[str, Any], Callable[[Any, Any], Any]] = {}


def _differ_meta(dt: Any) -> dict[str, Any]:
    import torch

    return {"EXACT": not dt.is_floating_point, "WIDE": dt == torch.float64, **DIFFER_CONFIG.kwargs}


def _plan_differ(g: Any, r: Any, atol: float, rtol: float) -> tuple[Callable[[], None], Any]:
    """The differ pass as (launch, count): the count buffer is allocated and zeroed here, so the launch
    is the only device work (and the only host work) left for the check's span."""
    import torch

    count = torch.zeros(1, dtype=torch.int32, device=r.device)
    n = r.numel()
    grid = (triton.cdiv(max(n, 1), DIFFER_CONFIG.kwargs["BLOCK"]),)
    args = (g, r, n, float(atol), float(rtol), count)
    fast = _FAST_DIFFER.get((str(r.dtype), r.device.index)) if r.device.type == "cuda" else None
    if fast is not None:
        return (lambda: fast(args, grid)), count
    meta = _differ_meta(r.dtype)

    def launch() -> None:
        differ_kernel[grid](*args, **meta, **DIFFER_CONFIG.launch_options())

    return launch, count


def prepare_fused(dtype: Any, device: Any) -> str | None:
    """Compile :data:`differ_kernel` for ``dtype`` in the engine's workers and load it here (call from a
    background thread); None once it is ready, else why not."""
    import torch

    from tritune.device import current_target
    from tritune.engine.pipeline import load_binary
    from tritune.engine.precompile import precompile

    dt = getattr(torch, str(dtype).replace("torch.", ""))
    if dt.is_complex:
        return "complex outputs are compared by torch.isclose"
    a = torch.zeros(16, dtype=dt, device=device)
    args = (a, a, 16, 0.0, 0.0, torch.zeros(1, dtype=torch.int32, device=device))
    kw = {"EXACT": not dt.is_floating_point, "WIDE": dt == torch.float64}
    failed = precompile(differ_kernel, [DIFFER_CONFIG], args, kw, current_target())
    if failed:
        return failed[DIFFER_CONFIG]
    got = load_binary(differ_kernel, "differ_kernel", DIFFER_CONFIG, args, kw, (1,))
    if not isinstance(got, dict):
        return str(got.reason)
    from tritune.decorator.dispatch import make_fast

    # n and both pointers are not specialized, the count buffer is always a fresh (aligned) allocation, and
    # atol/rtol are floats: one launcher per dtype serves every output of every check.
    fl = make_fast(differ_kernel, Config(_differ_meta(dt), num_warps=DIFFER_CONFIG.num_warps), args, {})
    if fl is not None:
        _FAST_DIFFER[(str(dt), torch.device(device).index)] = fl.launch
    return None


def _run_then(go: Callable[[], None], count: Any) -> Any:
    go()
    return count


def _isclose_count(g: Any, r: Any, atol: float, rtol: float) -> Any:
    import torch

    return torch.isclose(g, r, rtol=rtol, atol=atol, equal_nan=True).logical_not_().sum()


def _ne_count(g: Any, r: Any) -> Any:
    return g.ne(r).sum()


def plan_comparison(ref: Mapping[str, Any], got: Mapping[str, Any], atol: float | None, rtol: float | None,
                    fused: Collection[str] = ()) -> tuple[Callable[[], None], Callable[[], str | None]]:  # fmt: skip
    """:func:`compare_outputs` in two steps: ``(launch, result)``. Everything but the device work (the
    tolerances, the count buffers, the choice of kernel) is done here, so ``launch()`` only enqueues the
    comparison: a check times ``launch()`` alone, and its span holds no host work but the launches."""
    steps: list[tuple[str, Callable[[], Any], int, float, float]] = []
    for name, r in ref.items():
        g = got[name]
        if r.dtype.is_floating_point or r.dtype.is_complex:
            a0, r0 = default_tolerance(r.dtype)
            a, rt = (a0 if atol is None else atol), (r0 if rtol is None else rtol)
        else:
            a, rt = 0.0, 0.0
        step: Callable[[], Any]
        if str(r.dtype) in fused and _fusable(r) and _fusable(g) and g.shape == r.shape:
            go, count = _plan_differ(g, r, a, rt)
            step = functools.partial(_run_then, go, count)
        elif r.dtype.is_floating_point or r.dtype.is_complex:
            step = functools.partial(_isclose_count, g, r, a, rt)
        else:
            step = functools.partial(_ne_count, g, r)
        steps.append((name, step, r.numel(), a, rt))
    counts: list[Any] = []

    def launch() -> None:
        for _, step, _, _, _ in steps:
            counts.append(step())

    def result() -> str | None:
        for (name, _, size, a, rt), nbad in zip(steps, counts):
            n = int(nbad.reshape(()).item())
            if n:
                return (f"output {name!r}: {n} of {size} elements differ from the provisional "
                        f"config's (atol={a:g}, rtol={rt:g}; integers and bools must be equal)")  # fmt: skip
        return None

    return launch, result


def compare_outputs(ref: Mapping[str, Any], got: Mapping[str, Any], atol: float | None, rtol: float | None,
                    fused: Collection[str] = ()) -> Callable[[], str | None]:  # fmt: skip
    """Queue the comparison on the device; the returned function (called after the device got there)
    says what differed, or None. Per output, one count of the elements that differ: beyond the tolerance
    for floats (NaN in both agrees), any difference for integers and bools. Outputs whose dtype (as
    ``str(dtype)``) is in ``fused`` are compared by :data:`differ_kernel`, the others by ``torch.isclose``."""
    launch, result = plan_comparison(ref, got, atol, rtol, fused)
    launch()
    return result


def warm_comparison(dtype: str, device: Any, atol: float | None = None, rtol: float | None = None,
                    fused: Collection[str] = ()) -> None:  # fmt: skip
    """Run :func:`compare_outputs` once on small ``dtype`` tensors on a side stream of ``device`` and wait:
    the device code it launches is loaded now, not at the first check on a caller's path."""
    import torch

    dt = getattr(torch, dtype.replace("torch.", ""))
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.stream(stream):
        a = torch.zeros(1 << 16, dtype=dt, device=device)
        b = a.clone()
        done = compare_outputs({"x": a}, {"x": b}, atol, rtol, fused)
    stream.synchronize()
    done()

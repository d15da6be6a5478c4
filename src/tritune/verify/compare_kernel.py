"""The output check's comparison on a GPU, by a Triton kernel of tritune's own.

torch's ops on a device are not always torch's: ``flag_gems.enable()`` registers its own kernels for CUDA, among
them autotuned ``sum`` and ``max``. Compared with torch's ops, each check of a candidate ran the library's
reductions, and under the switch tritune tuned them, widened, at every new output size inside the check (on an
H100, 5.6 s of the checks of a process's first key, against 0.03-1.5 s for later keys;
``benchmarks/results/2026-12-07-h100-widen-derived.tar.gz``). This kernel is a plain ``@triton.jit`` function, as
:mod:`tritune.verify.fill` is: no library replaces it and no autotuner tunes it. One launch reads both tensors
once and writes five numbers a block, which the host sums: the elements never written, the elements outside the
tolerance, the largest error, the first element outside it, and the elements whose bits differ.

Its rules are those of :func:`tritune.verify.compare.compare` (floats in float64; NaN where NaN is expected and
equal infinities agree; integers as int64, the poison sentinel marking the unwritten), checked against it under
the interpreter in ``tests/verify/test_compare_kernel.py`` and on a GPU in ``tests/gpu/test_compare_kernel_gpu.py``.
The tolerances reach the kernel as float32 arguments (Triton's type for a Python float), within a relative 6e-8
of their value; the bound is then computed in float64.
"""

from __future__ import annotations

import contextlib
from typing import Any

import triton
import triton.language as tl

#: Elements a program compares.
BLOCK = 1024
#: What a block writes: unwritten, mismatched, largest error, first mismatch (n where none), bits differing.
FIELDS = 5


@triton.jit(do_not_specialize=["n", "sentinel"])
def _compare(o_ptr, e_ptr, ob_ptr, eb_ptr, n, part_ptr, atol, rtol, sentinel, FLOATING: tl.constexpr,
             HAS_SENTINEL: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if FLOATING:
        o = tl.load(o_ptr + offs, mask=m, other=0.0).to(tl.float64)
        e = tl.load(e_ptr + offs, mask=m, other=0.0).to(tl.float64)
        o_nan = o != o
        e_nan = e != e
        err = tl.abs(o - e)
        ae = tl.abs(e)
        # (an infinite expected value has an infinite tolerance: only the same infinity agrees with it)
        ok = ((err <= ae * rtol + atol) & (ae < float("inf"))) | (o == e) | (o_nan & e_nan)
        unw = o_nan & (e_nan == 0)
        err = tl.where(err != err, 0.0, err)  # a NaN on one side only: counted as differing, not as the error
    else:
        o = tl.load(o_ptr + offs, mask=m, other=0).to(tl.int64)
        e = tl.load(e_ptr + offs, mask=m, other=0).to(tl.int64)
        diff = tl.abs(o - e)
        if HAS_SENTINEL:
            unw = (o == sentinel) & (e != sentinel)
        else:
            unw = o != o
        ok = diff.to(tl.float64) <= atol + rtol * tl.abs(e).to(tl.float64)
        err = tl.where(unw, 0, diff).to(tl.float64)
    bits = tl.load(ob_ptr + offs, mask=m, other=0) != tl.load(eb_ptr + offs, mask=m, other=0)
    unw = unw & m
    bad = (ok == 0) & m
    out = part_ptr + pid.to(tl.int64) * 5
    tl.store(out, tl.sum(unw.to(tl.float64), axis=0))
    tl.store(out + 1, tl.sum(bad.to(tl.float64), axis=0))
    tl.store(out + 2, tl.max(tl.where(m, err, 0.0), axis=0))
    tl.store(out + 3, tl.min(tl.where(bad, offs, n), axis=0).to(tl.float64))
    tl.store(out + 4, tl.sum((bits & m).to(tl.float64), axis=0))


def _kinds() -> tuple[dict[Any, Any], frozenset[Any]]:
    import torch

    floats = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
              torch.float64: torch.int64}  # fmt: skip
    ints = frozenset({torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool})
    return floats, ints


def takes(o: Any, e: Any) -> bool:
    """Whether the kernel compares these flat tensors: contiguous, on one device, both of float16, bfloat16,
    float32 or float64, or both of one integer or bool dtype (fp8, complex and other dtypes: torch's ops compare)."""
    floats, ints = _kinds()
    if o.device != e.device or not (o.is_contiguous() and e.is_contiguous()):
        return False
    return (o.dtype in floats and e.dtype in floats) or (o.dtype == e.dtype and o.dtype in ints)


def counts(o: Any, e: Any, *, atol: float, rtol: float,
           poisoned: int | None = None) -> tuple[int, int, float, int | None, int]:  # fmt: skip
    """(unwritten, mismatched, largest error, first mismatching index or None, elements whose bits differ) of the
    flat tensors ``o`` (the output) and ``e`` (the expected value), both of ``o.numel()`` elements and taken by
    :func:`takes`; on their GPU, or on the CPU under ``TRITON_INTERPRET=1``. ``poisoned``: the value that marks an
    integer output's element as never written (:func:`tritune.verify.compare.sentinel`; a float's is NaN). The bit
    count is meaningful where the dtypes are the same."""
    import torch

    n = o.numel()
    if n == 0:
        return 0, 0, 0.0, None, 0
    floats, _ = _kinds()
    floating = o.dtype in floats
    if floating and o.dtype == e.dtype:
        ob, eb = o.view(floats[o.dtype]), e.view(floats[e.dtype])
    else:  # integers (their values are their bits), or two float dtypes (the bits are not compared then)
        ob, eb = o, e
    has_sentinel = not floating and poisoned is not None
    grid = triton.cdiv(n, BLOCK)
    part = torch.empty(grid * FIELDS, dtype=torch.float64, device=o.device)
    with torch.cuda.device(o.device) if o.device.type == "cuda" else _interpreted():
        _compare[(grid,)](o, e, ob, eb, n, part, float(atol), float(rtol), poisoned if has_sentinel else 0,
                          FLOATING=floating, HAS_SENTINEL=has_sentinel, BLOCK=BLOCK, num_warps=4)  # fmt: skip
    rows = part.cpu().numpy().reshape(grid, FIELDS)  # summed on the host: no torch op a library may replace
    first = int(rows[:, 3].min())
    return (int(rows[:, 0].sum()), int(rows[:, 1].sum()), float(rows[:, 2].max()), first if first < n else None,
            int(rows[:, 4].sum()))  # fmt: skip


@contextlib.contextmanager
def _interpreted() -> Any:
    """The interpreter's numpy arithmetic, quiet: inf - inf is NaN there as on a GPU, where numpy would warn."""
    import numpy as np

    with np.errstate(all="ignore"):
        yield

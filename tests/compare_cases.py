"""The comparison kernel's cases (``tritune.verify.compare_kernel``): outputs against expected values that its rules
must count as torch's comparison counts them, for ``tests/verify/test_compare_kernel.py`` (the interpreter, CPU
tensors) and ``tests/gpu/test_compare_kernel_gpu.py`` (the same cases on a GPU)."""

from __future__ import annotations

from typing import Any

import torch

from tritune.verify import compare_kernel
from tritune.verify.compare import compare, poison, sentinel


def torch_counts(o: Any, e: Any, atol: float, rtol: float) -> tuple[int, int, float, int | None]:
    """(unwritten, mismatched, largest error, first mismatch) by torch's ops (CPU tensors)."""
    c = compare(o, e, atol=atol, rtol=rtol)  # CPU tensors: torch's ops
    return c.unwritten, c.mismatched, c.max_abs_error, c.first_bad_index


def cases() -> list[tuple[str, Any, Any, float, float]]:
    """(name, output, expected, atol, rtol), CPU tensors: every float dtype equal, mixed (a shifted element, a tail
    element, poisoned ones, NaN and infinities on either side) and exact; two float dtypes; each integer dtype with a
    sentinel; bool; each a tail shorter than a block."""
    g = torch.Generator().manual_seed(3)
    n = 3 * compare_kernel.BLOCK + 77  # a tail shorter than a block
    base = torch.randn(n, generator=g, dtype=torch.float64)
    out = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        e = base.to(dtype)
        o = e.clone()
        out.append((f"{dtype} equal", o, e, 1e-3, 1e-3))
        o = e.clone()
        o[5] += 1.0
        o[n - 1] -= 2.0
        poison(o[100:110])
        o[200] = float("inf")
        e2 = e.clone()
        e2[300], o[300] = float("nan"), float("nan")  # NaN where NaN is expected: agrees
        e2[400], o[400] = float("inf"), float("inf")  # the same infinity: agrees
        e2[500], o[500] = float("-inf"), float("inf")  # opposite infinities: differ
        e2[600] = float("inf")  # a number against an infinity: differs
        out.append((f"{dtype} mixed", o, e2, 1e-2, 1e-2))
        out.append((f"{dtype} exact", o, e2, 0.0, 0.0))
    out.append(("float16 against float32", base.to(torch.float16), base.to(torch.float32), 1e-3, 1e-3))
    for dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        e = torch.randint(0, 100, (n,), generator=g).to(dtype)
        o = e.clone()
        o[7] += 3
        o[n - 2] = sentinel(dtype)  # unwritten
        out.append((f"{dtype} exact", o, e, 0.0, 0.0))
        out.append((f"{dtype} within 3", o, e, 3.0, 0.0))
    e = torch.rand(n, generator=g) < 0.5
    o = e.clone()
    o[11] = ~o[11]
    out.append(("bool", o, e, 0.0, 0.0))
    return out

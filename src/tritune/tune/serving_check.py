"""The check of a candidate in incremental tuning: its scratch outputs against the provisional config's."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


def default_tolerance(dtype: Any) -> tuple[float, float]:
    """``(atol, rtol)`` for comparing a candidate's float output with the provisional config's: 8 units in
    the last place of the output dtype (2**-7 for float16, 2**-4 for bfloat16, 2**-3 for 8-bit floats),
    and 1e-4 for float32 and 1e-10 for float64. Configs of one kernel differ in the order of their sums
    (block sizes, split-K), which moves a result rounded to the output dtype by one or two ulps; eight
    leaves margin, while a wrong value (a missed block, a bad mask) is off by far more.
    ``benchmarks/serving.py`` records the largest difference seen between agreeing configs on the GPU."""
    name = str(dtype).replace("torch.", "")
    if name in ("float64",):
        return 1e-10, 1e-10
    if name in ("float32",):
        return 1e-4, 1e-4
    if name in ("float16",):
        return 2.0**-7, 2.0**-7
    if name in ("bfloat16",):
        return 2.0**-4, 2.0**-4
    if name.startswith("float8"):
        return 2.0**-3, 2.0**-3
    return 0.0, 0.0


def compare_outputs(ref: Mapping[str, Any], got: Mapping[str, Any], atol: float | None,
                    rtol: float | None) -> Callable[[], str | None]:  # fmt: skip
    """Queue the comparison on the device; the returned function (called after the device got there)
    says what differed, or None."""
    import torch

    pending: list[tuple[str, Any, Any, float, float]] = []
    for name, r in ref.items():
        g = got[name]
        if r.dtype.is_floating_point or r.dtype.is_complex:
            a0, r0 = default_tolerance(r.dtype)
            a, rt = (a0 if atol is None else atol), (r0 if rtol is None else rtol)
            bad = ~torch.isclose(g, r, rtol=rt, atol=a, equal_nan=True)
        else:
            a, rt = 0.0, 0.0
            bad = g != r
        diff = (g.double() - r.double()).abs().nan_to_num(nan=math.inf)
        pending.append((name, bad.sum(), diff.max() if diff.numel() else diff.sum(), a, rt))

    def result() -> str | None:
        for name, nbad, dmax, a, rt in pending:
            n = int(nbad.item())
            if n:
                return (f"output {name!r}: {n} elements differ from the provisional config's "
                        f"(max |diff| {float(dmax.item()):.3g}; atol={a:g}, rtol={rt:g})")  # fmt: skip
        return None

    return result

"""The output check's random values on a GPU, drawn by a Triton kernel of tritune's own.

torch's ops on a device are not always torch's: a library may register its own kernels for them, and
``flag_gems.enable()`` does for ``randn`` and ``rand`` on CUDA, its ``randn`` an autotuned Triton kernel. Drawn with
torch, the check's perturbed inputs would run the library's kernels and, under the switch, tune its ``randn`` at
every new tensor size inside the check (on an H100, 22 s of a process's first op;
``benchmarks/results/2026-12-07-h100-widen-randn.tar.gz``). This kernel is a plain ``@triton.jit`` function: no
library replaces it, no autotuner tunes it, and one launch fills a tensor.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import triton
import triton.language as tl

#: Elements a program fills.
BLOCK = 1024


@triton.jit(do_not_specialize=["n", "seed"])
def _normal_with_zeros(out_ptr, n, seed, scale, zeros, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    counter = offs.to(tl.int32)  # (past 2**31 elements the values repeat; still seeded, still normal)
    vals = tl.randn(seed, counter) * scale
    vals = tl.where(tl.rand(seed + 1, counter) < zeros, 0.0, vals)
    tl.store(out_ptr + offs, vals.to(out_ptr.dtype.element_ty), mask=offs < n)


def fill_normal(flat: Any, seed: int, scale: float, zeros: float) -> None:
    """Fill the 1-D contiguous tensor ``flat`` (a GPU tensor, or a CPU one under ``TRITON_INTERPRET=1``) with normal
    values times ``scale``, the share ``zeros`` of them zero, in its own dtype; the same values for the same
    ``seed`` (an int in ``[0, 2**31 - 2]``)."""
    import torch

    n = flat.numel()
    if n == 0:
        return
    with torch.cuda.device(flat.device) if flat.device.type == "cuda" else nullcontext():
        _normal_with_zeros[(triton.cdiv(n, BLOCK),)](flat, n, seed, scale, zeros, BLOCK=BLOCK, num_warps=4)


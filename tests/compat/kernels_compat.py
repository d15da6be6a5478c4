"""Kernels for the conformance suite, written for it after the patterns of real libraries."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def accumulate_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    """acc += x: running it twice gives twice x, so resets and launches can be counted."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(acc_ptr + offs, mask=mask)
    tl.store(acc_ptr + offs, acc + tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, FACTOR: tl.constexpr):
    """out = x * FACTOR; EVEN (from a heuristic) drops the mask when BLOCK divides n."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * FACTOR)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


@triton.jit
def bias_kernel(x_ptr, bias_ptr, out_ptr, n, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    """out = x (+ bias when given): bias_ptr may be None."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask)
    if HAS_BIAS:
        y += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y, mask=mask)


def grid1(n: int) -> Any:
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)

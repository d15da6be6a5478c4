"""Kernels whose globals Triton resolves at launch, written the way real libraries write them.

- ``scale_late`` calls ``later``, defined after it (tutorial 03's ``leaky_relu``);
- ``scale_via_module`` calls jitted helpers through a module attribute (FlagGems' ``tle.program_id``);
- ``scale_shadow`` calls a helper named like a ``tl`` function, which itself calls the ``tl`` one.

This file is also imported in a subprocess without ``TRITON_INTERPRET`` (then they are JITFunctions).
"""

import jitlib
import triton
import triton.language as tl

import tritune


@tritune.autotune(configs=[tritune.Config({"BLOCK": 16}), tritune.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def tuned_late(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # decorated before ``later`` exists (tutorial 03)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, later(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def scale_late(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, later(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def scale_via_module(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = jitlib.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, jitlib.twice(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def maximum(a, b):
    return tl.maximum(a, b) + 1


@triton.jit
def scale_shadow(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


@triton.jit
def later(x):
    return x * 3 - 1


KERNELS = {"late": scale_late, "module": scale_via_module, "shadow": scale_shadow}


def expected(name, x):
    import torch

    if name == "late":
        return x * 3 - 1
    if name == "module":
        return x * 2
    return torch.clamp(x, min=0.0) + 1

"""Jitted helpers reached through a module attribute (``jitlib.program_id(0)``), after FlagGems' ``tle`` module."""

import triton
import triton.language as tl


@triton.jit
def program_id(axis: tl.constexpr):
    return tl.program_id(axis)


@triton.jit
def twice(x):
    return x * 2

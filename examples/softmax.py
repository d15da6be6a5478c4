"""Row softmax that holds a whole row in registers: its limit is registers, not shared memory.

Each program loads ``BLOCK_N`` values of one row and keeps them live across the max and the sum, so
every thread holds ``BLOCK_N / (32 * num_warps)`` floats. Small blocks are limited by the resident-block
cap; as BLOCK_N grows per thread, register use grows until ptxas spills (a warning, not illegal) — the
opposite shape of limit from the matmul, where shared memory decides::

    tritune screen examples/softmax.py --target sm90
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax_args(key, device):
    x = torch.randn(key["rows"], key["cols"], device=device)
    return x, torch.empty_like(x), key["cols"], x.stride(0)


softmax = tritune.Workload(
    name="softmax",
    kernel=softmax_kernel,
    configs=tritune.Space(
        {"BLOCK_N": tritune.pow2(1024, 16384), "num_warps": [1, 2, 4, 8], "num_stages": [1]},
    ),
    args=softmax_args,
    grid=lambda meta, key: (key["rows"],),
    outputs=[1],
    oracle=lambda args: [torch.softmax(args[0], dim=1)],
    keys=[{"rows": 64, "cols": 1024}],
    atol=1e-6,
    rtol=1e-5,
    bytes=lambda key: 2 * 4 * key["rows"] * key["cols"],
)

"""The chapter's GELU kernel as a tritune workload.

    tritune verify examples/gelu.py      # any machine: every candidate checked against torch's gelu
    tritune screen examples/gelu.py --target sm90
    tritune tune examples/gelu.py        # a GPU machine: times the candidates and keeps the fastest
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def gelu_forward_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    SQRT_2_INV: tl.constexpr = 0.7071067811865476
    cdf = 0.5 * (1.0 + tl.math.erf(x * SQRT_2_INV))
    out = x * cdf
    tl.store(out_ptr + offsets, out, mask=mask)


def gelu_args(key, device):
    x = torch.randn(key["n"], device=device)
    return x, torch.empty_like(x), key["n"]


gelu = tritune.Workload(
    name="gelu",
    kernel=gelu_forward_kernel,
    configs=[
        tritune.Config({"BLOCK": 256}, num_warps=2, num_stages=1),
        tritune.Config({"BLOCK": 512}, num_warps=4, num_stages=2),
        tritune.Config({"BLOCK": 1024}, num_warps=8, num_stages=3),
        tritune.Config({"BLOCK": 2048}, num_warps=8, num_stages=4),
    ],
    args=gelu_args,
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    outputs=[1],
    oracle=lambda args: [torch.nn.functional.gelu(args[0], approximate="none")],
    keys=[{"n": 4096}, {"n": 10_000}],
    bytes=lambda key: 2 * 4 * key["n"],
)

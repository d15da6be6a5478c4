"""A workload for tests/gpu/test_sticky_gpu.py: one config stores far outside any allocation (an illegal
address, which loses the CUDA context of the process that launches it); the others double ``x``."""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def wild_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, WILD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    if WILD:
        far = offs.to(tl.int64) + 1099511627776  # 2**40 floats past out: an illegal address
        tl.store(out_ptr + far, v, mask=m)
    else:
        tl.store(out_ptr + offs, v * 2.0, mask=m)


sticky = tritune.Workload(
    name="sticky",
    kernel=wild_kernel,
    configs=[
        tritune.Config({"BLOCK": 256, "WILD": 0}, num_warps=4),
        tritune.Config({"BLOCK": 256, "WILD": 1}, num_warps=4),
        tritune.Config({"BLOCK": 512, "WILD": 0}, num_warps=4),
        tritune.Config({"BLOCK": 1024, "WILD": 0}, num_warps=4),
    ],
    args=lambda key, device: (lambda x: (x, torch.empty_like(x), key["n"]))(torch.randn(key["n"], device=device)),
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    outputs=[1],
    oracle=lambda args: [args[0] * 2.0],
    keys=[{"n": 1 << 20}],
)

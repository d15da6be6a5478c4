"""RMSNorm over the rows of an fp16 matrix: a short kernel (2-10 us on an H200) whose winner depends
on how it is timed. Each program normalizes one row in two passes of ``BLOCK_N`` columns: the
sum of squares in fp32, then ``x / rms * w`` stored in fp16.

    tritune verify examples/rmsnorm.py                            # a GPU machine: both keys
    tritune verify examples/rmsnorm.py --key rows=64,cols=2048    # any machine: the small key
    tritune tune examples/rmsnorm.py --measure graph              # as it runs inside a captured decode step
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        sq += x * x
    inv_rms = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm_args(key, device):
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(key["rows"], key["cols"], generator=gen).to(device=device, dtype=torch.float16)
    w = (1.0 + 0.1 * torch.randn(key["cols"], generator=gen)).to(device=device, dtype=torch.float16)
    return x, w, torch.empty_like(x), x.stride(0), key["cols"], 1e-6


def rmsnorm_oracle(args):
    x, w, eps = args[0].float(), args[1].float(), args[5]
    return [(x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * w).to(torch.float16)]


RMSNORM_SPACE = tritune.Space(
    {"BLOCK_N": [512, 1024, 2048, 4096], "num_warps": [2, 4, 8, 16], "num_stages": [1, 3]}
)

rmsnorm = tritune.Workload(
    name="rmsnorm",
    kernel=rmsnorm_kernel,
    configs=RMSNORM_SPACE,
    args=rmsnorm_args,
    grid=lambda meta, key: (key["rows"],),
    outputs=[2],
    oracle=rmsnorm_oracle,
    keys=[{"rows": 64, "cols": 2048}, {"rows": 1024, "cols": 4096}],
    atol=2e-3,  # fp16 output: half an ulp near |y| ~ 2 is 1e-3
    rtol=2e-3,
    bytes=lambda key: 2 * 2 * key["rows"] * key["cols"],
)

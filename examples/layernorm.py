"""Layer norm forward over the last dimension (fp16 in and out, fp32 statistics), 180 configs.

Each program normalizes ``ROWS`` rows at once as a ``[ROWS, BLOCK_N]`` tile, in two passes over the
row: sum and sum of squares, then normalize and store. It is memory-bound: the best configs read and
write near the copy bandwidth, and many configs are near-ties, while big tiles on few warps spill::

    tritune tune examples/layernorm.py --workload layernorm --sweep --record ln.json       # GPU
    tritune verify examples/layernorm.py --workload layernorm_small                       # any machine

``layernorm`` has the GPU key M=4096, N=8192; ``layernorm_small`` (M=16, N=1024) is for CPU verification
under Triton's interpreter. Both keys specialize alike (every size divisible by 16).
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, stride, eps, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows[:, None] < M
    base = rows[:, None] * stride
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    acc2 = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        ok = row_ok & (cols[None, :] < N)
        x = tl.load(x_ptr + base + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=1) / N
    var = tl.sum(acc2, axis=1) / N - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        ok = row_ok & (cols[None, :] < N)
        x = tl.load(x_ptr + base + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_ptr + base + cols[None, :], y.to(tl.float16), mask=ok)


def layernorm_args(key, device):
    m, n = key["M"], key["N"]
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = (torch.randn(m, n, generator=gen) * 2 + 0.5).to(device=device, dtype=torch.float16)
    w = (torch.rand(n, generator=gen) + 0.5).to(device=device, dtype=torch.float16)
    b = torch.randn(n, generator=gen).to(device=device, dtype=torch.float16)
    y = torch.empty_like(x)
    return x, w, b, y, m, n, x.stride(0), 1e-5


def layernorm_oracle(args):
    x, w, b = args[0].float(), args[1].float(), args[2].float()
    return [torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)]


LAYERNORM_SPACE = tritune.Space(
    {
        "ROWS": [1, 2],
        "BLOCK_N": tritune.pow2(256, 8192),
        "num_warps": [1, 2, 4, 8, 16],
        "num_stages": [1, 2, 3],
    }
)


def _workload(name, keys):
    return tritune.Workload(
        name=name,
        kernel=layernorm_kernel,
        configs=LAYERNORM_SPACE,
        args=layernorm_args,
        grid=lambda meta, key: (triton.cdiv(key["M"], meta["ROWS"]),),
        outputs=[3],
        oracle=layernorm_oracle,
        keys=keys,
        # fp16 output of values up to ~10: half an ulp is 4e-3; the one-pass variance loses a little more.
        atol=1e-2,
        rtol=1e-2,
        bytes=lambda key: 2 * 2 * key["M"] * key["N"],
    )


layernorm = _workload("layernorm", [{"M": 4096, "N": 8192}])
layernorm_small = _workload("layernorm_small", [{"M": 16, "N": 1024}])

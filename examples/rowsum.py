"""A first kernel of one's own: the sum of each row of an fp32 matrix, as a Triton user writes it.

Each program sums one row in chunks of ``BLOCK_N`` columns into an accumulator shaped by ``BLOCK_N``, and the
grid is Triton's one-argument form, ``grid(meta)``, reading the kernel's own ``n_rows`` argument from
``meta``. Two configs of the space are illegal on purpose, and verify says why in Triton's words before
anything runs: 300 is not a power of 2, and 2**21 elements exceed Triton's largest tensor::

    tritune verify examples/rowsum.py --allow-illegal    # any machine: every legal config correct, exit 0
    tritune screen examples/rowsum.py --target sm90      # registers and occupancy of the legal ones
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def rowsum_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


def rowsum_args(key, device):
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(key["rows"], key["cols"], generator=gen).to(device)
    return x, torch.empty(key["rows"], device=device), key["rows"], key["cols"]


rowsum = tritune.Workload(
    name="rowsum",
    kernel=rowsum_kernel,
    configs=tritune.Space({"BLOCK_N": [64, 256, 1024, 300, 2**21], "num_warps": [1, 4]}),
    args=rowsum_args,
    grid=lambda meta: (meta["n_rows"],),  # Triton's form: meta holds the kernel's arguments and the config
    outputs=[1],
    oracle=lambda args: [args[0].sum(dim=1)],
    keys=[{"rows": 16, "cols": 1000}],
    atol=1e-4,  # the summation order depends on BLOCK_N
    rtol=1e-4,
)

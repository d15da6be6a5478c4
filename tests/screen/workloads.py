"""Small workloads for the screen tests (loaded by path, so worker processes can import them too)."""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale_args(key, device):
    x = torch.randn(key["n"], device=device)
    return x, torch.empty_like(x), key["n"]


scale = tritune.Workload(
    name="scale",
    kernel=scale_kernel,
    configs=[
        tritune.Config({"BLOCK": 256}, num_warps=2, num_stages=1),
        tritune.Config({"BLOCK": 1024}, num_warps=4, num_stages=1),
        tritune.Config(
            {"BLOCK": 300}, num_warps=4, num_stages=1
        ),  # not a power of 2: the front end rejects it
        tritune.Config({"BLOCK": 512}, num_warps=3, num_stages=1),  # num_warps not a power of 2: static rule
    ],
    args=scale_args,
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    keys=[{"n": 4096}, {"n": 4097}],
)


@triton.jit
def mm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BLOCK_K
        b += BLOCK_K * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def mm_args(key, device):
    m = n = k = key["size"]
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = torch.randn(k, n, device=device, dtype=torch.float16)
    return a, b, torch.empty(m, n, device=device, dtype=torch.float16), m, n, k


def _mm(name, configs):
    return tritune.Workload(
        name=name,
        kernel=mm_kernel,
        configs=configs,
        args=mm_args,
        grid=lambda meta, key: (key["size"] // meta["BLOCK_M"], key["size"] // meta["BLOCK_N"]),
        keys=[{"size": 512}],
    )


#: Only a config that needs 4 x (128x128 + 128x128) x 2 B = 262144 B of shared memory: nothing fits sm_90.
mm_too_big = _mm(
    "mm_too_big",
    [tritune.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}, num_warps=4, num_stages=4)],
)

#: A fast config, then one whose ptxas runs long: a 512x256 fp32 accumulator on 4 warps spills ~1.6 KB per
#: thread and took 18 s to screen on the 2-core CI machine. (256x256x64 on 4 warps took 8.7 s, which an
#: idle machine brought under the tests' 6 s timeout.)
mm_slow = _mm(
    "mm_slow",
    [
        tritune.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        tritune.Config({"BLOCK_M": 512, "BLOCK_N": 256, "BLOCK_K": 32}, num_warps=4, num_stages=2),
    ],
)

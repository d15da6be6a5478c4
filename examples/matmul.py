"""fp16 matrix multiply C = A @ B (fp32 accumulation) with a 216-config tile space.

The space is BLOCK_M, BLOCK_N in {64, 128, 256}, BLOCK_K in {32, 64, 128}, num_warps in {4, 8} and
num_stages in {2, 3, 4, 5}. Many of its configs need more shared memory than a GPU has, which makes
it the screen's reference case::

    tritune screen examples/matmul.py --workload matmul --target sm90   # any machine, no GPU needed
    tritune tune examples/matmul.py --workload matmul                   # a GPU machine
    tritune verify examples/matmul.py --workload matmul_small           # any machine

Two workloads share the kernel and the space. ``matmul`` has the GPU key M=N=K=4096. ``matmul_small``
has M=N=K=256 for CPU verification under Triton's interpreter (4096 would take hours there). Every
dimension and stride is divisible by 16 at both keys, so the JIT specializes the kernel the same way
at both sizes: a screen of either one compiles the same binaries.
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M rows of tiles share their B columns in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(tl.float16), mask=c_mask)


def matmul_args(key, device):
    m, n, k = key["M"], key["N"], key["K"]
    gen = torch.Generator(device="cpu").manual_seed(0)
    # Scaled so that |C| stays near 1 at any K: fp16's absolute rounding error then stays near 5e-4.
    a = (torch.randn(m, k, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    b = (torch.randn(k, n, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    return (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def matmul_grid(meta, key):
    return (triton.cdiv(key["M"], meta["BLOCK_M"]) * triton.cdiv(key["N"], meta["BLOCK_N"]),)


def matmul_oracle(args):
    # The exact product of the fp16 inputs, in fp32; the kernel rounds its fp32 sum to fp16 once.
    return [torch.matmul(args[0].float(), args[1].float())]


MATMUL_SPACE = tritune.Space(
    {
        "BLOCK_M": [64, 128, 256],
        "BLOCK_N": [64, 128, 256],
        "BLOCK_K": [32, 64, 128],
        "num_warps": [4, 8],
        "num_stages": [2, 3, 4, 5],
    }
)


def _workload(name, keys):
    return tritune.Workload(
        name=name,
        kernel=matmul_kernel,
        configs=MATMUL_SPACE,
        args=matmul_args,
        grid=matmul_grid,
        outputs=[2],
        oracle=matmul_oracle,
        keys=keys,
        # fp16 output: half an ulp of |C| ~ 1 is 4.9e-4; accumulation order adds far less in fp32.
        atol=2e-3,
        rtol=2e-3,
        kwargs={"GROUP_M": 8},
        bytes=lambda key: 2 * (key["M"] * key["K"] + key["K"] * key["N"] + key["M"] * key["N"]),
        flops=lambda key: 2 * key["M"] * key["N"] * key["K"],
    )


matmul = _workload("matmul", [{"M": 4096, "N": 4096, "K": 4096}])
matmul_small = _workload("matmul_small", [{"M": 256, "N": 256, "K": 256}])

"""fp16 matrix multiply C = A @ B (fp32 accumulation) for Hopper: TMA tensor descriptors, persistent tiles.

The kernel follows Triton's tutorial 09 (``matmul_kernel_descriptor_persistent``): A, B and C are read
and written through tensor descriptors made on the device (``tl.make_tensor_descriptor``), which the
compiler lowers to TMA copies and pipelines into ``wgmma``; a program walks the output tiles
``pid, pid + programs, ...`` in grouped order, so a grid of one program per SM overlaps a tile's
epilogue with the next tile's loads. Two options on top:

* ``EPILOGUE_SUBTILE=2`` stores C in two halves, halving the epilogue's shared memory so that
  128x256x64 tiles keep a fourth pipeline stage (227 KB on sm_90).
* ``WARP_SPECIALIZE=1`` hands the tile loop to Triton's Hopper warp specialization: with
  ``num_warps=4`` it becomes one producer warp group issuing TMA loads and two consumer warp groups
  (12 warps) splitting the tile's rows, the producer running ahead into the next tile while the
  consumers store this one. The Hopper pass takes only ``num_warps=4`` and skips a function with
  if/else blocks, which flattening the loop makes, so the loop is flattened only without it.
  On an H200 with triton 3.6 the three warp-specialized configs with 128x128x64 tiles and
  ``num_stages=5`` compute WRONG results (up to 786k of 16.8M outputs never written); they stay in the space, and ``tritune tune`` reports them ``incorrect``
  before timing anything.

Descriptors are made on the device because a host ``TensorDescriptor`` carries the block shape,
which depends on the config, and a Workload's ``args(key, device)`` does not see the config.
Triton then needs a scratch allocator for the descriptors (128 bytes each per program): ``args``
installs one with ``triton.set_allocator`` when it makes CUDA tensors.

The kernel is correct for any grid, so one kernel and one space serve four workloads:
``matmul_tma_persistent`` (one program per SM, at most one per tile) and ``matmul_tma`` (one
program per tile; which of the two wins is the tuner's to find) at M=N=K=4096, and ``*_small`` at
256 for CPU verification under Triton's interpreter. The small persistent workload caps its grid at 3 programs so that, on the CPU too,
programs loop over several tiles (and over an uneven number of them). B is (K, N) row-major as in
examples/matmul.py, so both examples take the same arguments as ``torch.matmul(a, b)``::

    tritune screen examples/matmul_tma.py --workload matmul_tma_persistent --target sm90
    tritune tune examples/matmul_tma.py --workload matmul_tma_persistent        # a GPU machine
    tritune verify examples/matmul_tma.py --workload matmul_tma_persistent_small  # any machine
"""

import functools

import torch
import triton
import triton.language as tl

import tritune

H200_SMS = 132


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped ordering: GROUP_M rows of tiles share their B columns in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _persistent_tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr):  # fmt: skip
    # The tile loop of both kernels below: whatever made the descriptors, the loads and stores are the same.
    start_pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    # The epilogue recomputes its tile from its own counter: a value shared by the loads at the
    # top of a flattened loop and the stores at its bottom defeats the pipeliner (tutorial 09).
    tile_id_c = start_pid - programs
    for tile_id in tl.range(
        start_pid, num_tiles, programs, flatten=not WARP_SPECIALIZE, warp_specialize=WARP_SPECIALIZE
    ):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, offs_n])
            acc = tl.dot(a, b, acc)

        tile_id_c += programs
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE == 2:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c_desc.store([offs_cm, offs_cn], acc0.to(tl.float16))
            c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(tl.float16))
        else:
            c_desc.store([offs_cm, offs_cn], acc.to(tl.float16))


@triton.jit
def matmul_tma_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    a_desc = tl.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K]
    )
    b_desc = tl.make_tensor_descriptor(
        b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N]
    )
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N // EPILOGUE_SUBTILE]
    )
    _persistent_tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPILOGUE_SUBTILE,
                      WARP_SPECIALIZE)  # fmt: skip


@triton.jit
def matmul_tma_host_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """The same tiles through host ``TensorDescriptor``s (kernel parameters, as tutorial 09's fastest form):
    no descriptor is made per program. Their block shapes follow the config: :func:`set_descriptor_blocks`."""
    _persistent_tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPILOGUE_SUBTILE,
                      WARP_SPECIALIZE)  # fmt: skip


def _scratch(size, alignment, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)


def matmul_tma_args(key, device):
    m, n, k = key["M"], key["N"], key["K"]
    if device != "cpu":
        # Device-side descriptors live in global scratch that Triton asks this allocator for at launch.
        triton.set_allocator(_scratch)
    gen = torch.Generator(device="cpu").manual_seed(0)
    # Scaled so that |C| stays near 1 at any K: fp16's absolute rounding error then stays near 5e-4.
    a = (torch.randn(m, k, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    b = (torch.randn(k, n, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    return (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))


def as_host_descriptors(args):
    """``matmul_tma_args``-shaped arguments as ``matmul_tma_host_kernel``'s: host ``TensorDescriptor``s of A, B
    and C, then M, N, K. Their block shapes are placeholders until :func:`set_descriptor_blocks` (the workloads'
    ``pre_hook``) sets them per config."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, b, c, m, n, k = args[:6]
    return (*(TensorDescriptor.from_tensor(t, [16, 16]) for t in (a, b, c)), m, n, k)


def matmul_tma_host_args(key, device):
    return as_host_descriptors(matmul_tma_args(key, device))


def set_descriptor_blocks(nargs):
    """The ``pre_hook`` of the host-descriptor workloads (tutorial 09's ``matmul_tma_set_block_size_hook``):
    each descriptor's block is the tile the config loads or stores."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // nargs["EPILOGUE_SUBTILE"]]


def exact_product(a, b):
    """``a @ b`` of fp16 matrices in fp32: every product of two fp16 numbers is exact in fp32 and the sum is
    fp32's, as in the kernel before its one rounding to fp16. On a GPU cuBLAS does it on tensor cores
    (``torch.mm(..., out_dtype=torch.float32)``, torch >= 2.8): on the H200 0.7 ms at 6144^3 against 9.4 ms for
    the fp32 product of upcast copies (whose two 151 MB copies it also skips), and as close to the fp64 product
    (max |error| 0.0042 against 0.0017, at |C| up to 444, where fp16's spacing is 0.25). Elsewhere
    (the CPU, an older torch) the fp32 product of the upcast inputs."""
    if a.is_cuda:
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except (TypeError, RuntimeError):  # no out_dtype in this torch
            pass
    return torch.matmul(a.float(), b.float())


def matmul_tma_host_oracle(args):
    return [exact_product(args[0].base, args[1].base)]


@functools.cache
def num_sms():
    """The SM count of the current CUDA device; an H200's 132 without one (the screen, the interpreter)."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return H200_SMS


def num_tiles(meta, key):
    return triton.cdiv(key["M"], meta["BLOCK_M"]) * triton.cdiv(key["N"], meta["BLOCK_N"])


def tile_grid(meta, key):
    """One program per output tile."""
    return (num_tiles(meta, key),)


def persistent_grid(meta, key):
    """One program per SM (never more than there are tiles); each loops over its share of the tiles."""
    return (min(num_sms(), num_tiles(meta, key)),)


def small_persistent_grid(meta, key):
    """At most 3 programs, so that under the interpreter each one loops over several tiles."""
    return (min(3, num_tiles(meta, key)),)


def matmul_tma_oracle(args):
    # The exact products of the fp16 inputs, summed in fp32; the kernel rounds its fp32 sum to fp16 once.
    return [exact_product(args[0], args[1])]


SM90_SMEM = 232448  # bytes of shared memory a block may use on sm_90 (227 KB)


def smem_estimate(c):
    """Shared memory the pipelined kernel needs, in bytes: num_stages A and B tiles plus the C staging tile."""
    stage = 2 * (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"])
    epilogue = 2 * c["BLOCK_M"] * c["BLOCK_N"] // c["EPILOGUE_SUBTILE"]
    return c["num_stages"] * stage + epilogue


def plausible(c):
    """Whether a combination can run well on sm_90, judged before compiling anything.

    Its tiles must fit in shared memory (the estimate is a lower bound, so the screen still has the
    last word); the fp32 accumulator must fit the registers of the warp groups that hold it (a
    128x128 tile per warp group: two for ``num_warps=8`` and for the two consumer groups of warp
    specialization); and warp specialization must be the kind Hopper's pass takes: ``num_warps=4``,
    and no split epilogue (triton 3.6 aborts on it).
    """
    groups = 2 if c["WARP_SPECIALIZE"] else c["num_warps"] // 4
    return (
        smem_estimate(c) <= SM90_SMEM
        and c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 128 * groups
        and (not c["WARP_SPECIALIZE"] or (c["num_warps"] == 4 and c["EPILOGUE_SUBTILE"] == 1))
    )


# 768 combinations, of which the plausible ones (138) are the candidates.
MATMUL_TMA_GRID = {
    "BLOCK_M": [128, 256],
    "BLOCK_N": [128, 256],
    "BLOCK_K": [64, 128],
    "GROUP_M": [4, 8, 16],
    "EPILOGUE_SUBTILE": [1, 2],
    "WARP_SPECIALIZE": [0, 1],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
}
MATMUL_TMA_SPACE = tritune.Space.from_configs([c for c in tritune.Space(MATMUL_TMA_GRID) if plausible(c)])


def _workload(name, keys, grid):
    return tritune.Workload(
        name=name,
        kernel=matmul_tma_kernel,
        configs=MATMUL_TMA_SPACE,
        args=matmul_tma_args,
        grid=grid,
        outputs=[2],
        oracle=matmul_tma_oracle,
        keys=keys,
        # fp16 output: half an ulp of |C| ~ 1 is 4.9e-4; accumulation order adds far less in fp32.
        atol=2e-3,
        rtol=2e-3,
        bytes=lambda key: 2 * (key["M"] * key["K"] + key["K"] * key["N"] + key["M"] * key["N"]),
        flops=lambda key: 2 * key["M"] * key["N"] * key["K"],
    )


GPU_KEY = {"M": 4096, "N": 4096, "K": 4096}
SMALL_KEY = {"M": 256, "N": 256, "K": 256}

matmul_tma_persistent = _workload("matmul_tma_persistent", [GPU_KEY], persistent_grid)
matmul_tma = _workload("matmul_tma", [GPU_KEY], tile_grid)
matmul_tma_persistent_small = _workload("matmul_tma_persistent_small", [SMALL_KEY], small_persistent_grid)
matmul_tma_small = _workload("matmul_tma_small", [SMALL_KEY], tile_grid)

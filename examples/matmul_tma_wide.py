"""The Hopper TMA matmul of examples/matmul_tma.py over its WIDE space: thousands of configs, for search.

Same kernel, arguments and oracle as ``matmul_tma.py`` (imported from it); the space adds the axes a
Hopper matmul really has and exhaustive tuning cannot afford: 64-wide tiles and 32-deep K steps,
``GROUP_M`` 1 (no grouping) to 16, ``num_ctas`` (thread-block clusters of 2) and ``maxnreg`` (a
register cap that trades spills for occupancy), on top of epilogue subtiling and warp specialization.
Every rule is a named ``tritune.Space`` constraint, so ``tritune screen`` rejects an illegal
combination statically and says which rule and why::

    tritune screen examples/matmul_tma_wide.py --workload matmul_tma_wide --target sm90
    tritune tune examples/matmul_tma_wide.py --workload matmul_tma_wide --strategy surrogate --budget 10%

``matmul_tma_wide_host`` is the same space on ``matmul_tma_host_kernel``: host ``TensorDescriptor``s, their
block shapes set per config by the workload's ``pre_hook`` (``set_descriptor_blocks``), as tutorial 09's
fastest form passes them. On an H200, timed pair by pair against cuBLAS, that form ran at
0.989-0.991 of cuBLAS at 4096^3 against 0.975-0.976 for descriptors made on the device.
"""

from matmul_tma import (
    GPU_KEY,
    SM90_SMEM,
    SMALL_KEY,
    matmul_tma_args,
    matmul_tma_host_args,
    matmul_tma_host_kernel,
    matmul_tma_host_oracle,
    matmul_tma_kernel,
    matmul_tma_oracle,
    persistent_grid,
    set_descriptor_blocks,
    small_persistent_grid,
)

import tritune

WIDE_GRID = {
    "BLOCK_M": [64, 128, 256],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "EPILOGUE_SUBTILE": [1, 2],
    "WARP_SPECIALIZE": [0, 1],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
    "num_ctas": [1, 2],
    "maxnreg": [None, 128, 168, 232],
}

REGISTERS_PER_SM = 65536


def _threads(c):
    # Warp specialization with num_warps=4 runs a producer and two consumer warp groups: 12 warps.
    return 32 * (12 if c["WARP_SPECIALIZE"] else c["num_warps"])


def smem_bytes(c):
    """Shared memory of the pipelined kernel: num_stages A and B tiles plus the (sub)tile of C staged."""
    stage = 2 * (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"])
    return c["num_stages"] * stage + 2 * c["BLOCK_M"] * c["BLOCK_N"] // c["EPILOGUE_SUBTILE"]


def accumulator_registers(c):
    """fp32 accumulator registers per thread of the warp groups that hold the tile."""
    holders = 256 if c["WARP_SPECIALIZE"] else 32 * c["num_warps"]
    return c["BLOCK_M"] * c["BLOCK_N"] // holders


CONSTRAINTS = [
    tritune.Constraint(
        "fits_smem",
        lambda c: smem_bytes(c) <= SM90_SMEM,
        f"A/B pipeline stages plus the C staging tile exceed sm_90's {SM90_SMEM} bytes of shared memory; "
        "use fewer num_stages, a smaller BLOCK_K or EPILOGUE_SUBTILE=2",
    ),
    tritune.Constraint(
        "accumulator_fits",
        lambda c: accumulator_registers(c) <= 128,
        "the fp32 accumulator needs more than 128 registers per thread and spills; use more warps or a "
        "smaller tile",
    ),
    tritune.Constraint(
        "wgmma_tile",
        lambda c: c["BLOCK_M"] >= 64 * (c["num_warps"] // 4),
        "each warp group issues wgmma on at least 64 rows; BLOCK_M must be >= 64 x (num_warps / 4)",
    ),
    tritune.Constraint(
        "warp_specialize_shape",
        lambda c: not c["WARP_SPECIALIZE"] or (c["num_warps"] == 4 and c["EPILOGUE_SUBTILE"] == 1 and c["BLOCK_M"] >= 128),
        "Hopper warp specialization takes num_warps=4, two consumer groups (BLOCK_M >= 128) and no split "
        "epilogue (triton 3.6 aborts on it)",
    ),
    tritune.Constraint(
        "maxnreg_fits_the_block",
        lambda c: c.get("maxnreg") is None or c["maxnreg"] * _threads(c) <= REGISTERS_PER_SM,
        f"maxnreg x threads exceeds the {REGISTERS_PER_SM} registers of an SM; lower maxnreg or num_warps",
    ),
    tritune.Constraint(
        "maxnreg_above_accumulator",
        lambda c: c.get("maxnreg") is None or c["maxnreg"] >= accumulator_registers(c) + 40,
        "maxnreg leaves fewer than 40 registers beside the accumulator: every config would spill",
    ),
    tritune.Constraint(
        "cluster_needs_rows",
        lambda c: c["num_ctas"] == 1 or (c["BLOCK_M"] >= 128 and not c["WARP_SPECIALIZE"]),
        "num_ctas=2 splits the tile over a 2-CTA cluster: it needs BLOCK_M >= 128 and no warp specialization",
    ),
]

MATMUL_TMA_WIDE_SPACE = tritune.Space(WIDE_GRID, constraints=CONSTRAINTS)

#: Host descriptors with warp specialization fail in Triton's NVGPUWarpSpecialization pass (triton 3.6 on an
#: H200; triton 3.9 compiling for sm_90 on a CPU): a rule, so no worker compiles them.
HOST_CONSTRAINTS = [
    *CONSTRAINTS,
    tritune.Constraint(
        "host_descriptors_without_warp_specialization",
        lambda c: not c["WARP_SPECIALIZE"],
        "Triton's Hopper warp specialization fails to compile a loop over host TensorDescriptors "
        "(NVGPUWarpSpecialization pass); use WARP_SPECIALIZE=0, or the device-descriptor kernel",
    ),
]
MATMUL_TMA_WIDE_HOST_SPACE = tritune.Space(WIDE_GRID, constraints=HOST_CONSTRAINTS)


def make_workload(name, keys, grid, host=False, configs=None, args=None):
    """The wide space's workload on the kernel with host descriptors (shaped by the ``pre_hook``) or device ones;
    ``configs`` and ``args`` replace the space and the arguments (``benchmarks/search_tune.py``'s)."""
    return tritune.Workload(
        name=name,
        kernel=matmul_tma_host_kernel if host else matmul_tma_kernel,
        configs=configs if configs is not None else MATMUL_TMA_WIDE_HOST_SPACE if host else MATMUL_TMA_WIDE_SPACE,
        args=args if args is not None else matmul_tma_host_args if host else matmul_tma_args,
        grid=grid,
        outputs=[2],
        oracle=matmul_tma_host_oracle if host else matmul_tma_oracle,
        pre_hook=set_descriptor_blocks if host else None,
        keys=keys,
        atol=2e-3,
        rtol=2e-3,
        bytes=lambda key: 2 * (key["M"] * key["K"] + key["K"] * key["N"] + key["M"] * key["N"]),
        flops=lambda key: 2 * key["M"] * key["N"] * key["K"],
    )


# Three keys, for the "3 keys, then a new one" search measurements (benchmarks/search_tune.py).
WIDE_KEYS = [GPU_KEY, {"M": 8192, "N": 8192, "K": 4096}, {"M": 4096, "N": 4096, "K": 8192}]
matmul_tma_wide = make_workload("matmul_tma_wide", WIDE_KEYS, persistent_grid)
matmul_tma_wide_small = make_workload("matmul_tma_wide_small", [SMALL_KEY], small_persistent_grid)
matmul_tma_wide_host = make_workload("matmul_tma_wide_host", WIDE_KEYS, persistent_grid, host=True)
matmul_tma_wide_host_small = make_workload("matmul_tma_wide_host_small", [SMALL_KEY], small_persistent_grid, host=True)

"""The flash-attention forward of examples/attention.py over its WIDE space: thousands of configs, for search.

Same kernel, arguments and oracle as ``attention.py`` (imported from it). The space widens every axis
the kernel has, the launch options included: query blocks of 16 to 256 rows, key/value blocks of 16 to
256, 1 to 16 warps, 1 to 5 pipeline stages, thread-block clusters (``num_ctas``) and a register cap
(``maxnreg``). Named ``tritune.Space`` constraints reject the combinations that cannot work, with reasons::

    tritune screen examples/attention_wide.py --workload attention_wide --target sm90
    tritune tune examples/attention_wide.py --workload attention_wide --strategy surrogate --budget 10%
"""

from attention import HEAD_DIM, attention_args, attention_kernel, attention_oracle

import tritune

SM90_SMEM = 232448
REGISTERS_PER_SM = 65536

WIDE_GRID = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [16, 32, 64, 128, 256],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3, 4, 5],
    "num_ctas": [1, 2],
    "maxnreg": [None, 64, 96, 128, 168, 208, 232, 255],
}


def smem_bytes(c):
    """fp16 K and V blocks per pipeline stage, plus the Q block."""
    return 2 * HEAD_DIM * (c["num_stages"] * 2 * c["BLOCK_N"] + c["BLOCK_M"])


def registers_per_thread(c):
    """fp32 registers per thread for the accumulator (BLOCK_M x HEAD_DIM) and the scores (BLOCK_M x BLOCK_N)."""
    return c["BLOCK_M"] * (HEAD_DIM + c["BLOCK_N"]) // (32 * c["num_warps"])


CONSTRAINTS = [
    tritune.Constraint(
        "fits_smem",
        lambda c: smem_bytes(c) <= SM90_SMEM,
        "K/V pipeline stages and the Q block exceed sm_90's shared memory; use fewer stages or a smaller BLOCK_N",
    ),
    tritune.Constraint(
        "rows_per_warp",
        lambda c: c["BLOCK_M"] >= 16 * c["num_warps"],
        "each warp needs at least 16 query rows for its mma; BLOCK_M must be >= 16 x num_warps",
    ),
    tritune.Constraint(
        "no_spill",
        lambda c: registers_per_thread(c) <= 192,
        "the accumulator and score tiles need more than 192 registers per thread; use more warps or smaller blocks",
    ),
    tritune.Constraint(
        "maxnreg_fits_the_block",
        lambda c: c.get("maxnreg") is None or c["maxnreg"] * 32 * c["num_warps"] <= REGISTERS_PER_SM,
        "maxnreg x threads exceeds the 65536 registers of an SM; lower maxnreg or num_warps",
    ),
    tritune.Constraint(
        "maxnreg_above_tiles",
        lambda c: c.get("maxnreg") is None or c["maxnreg"] >= registers_per_thread(c) + 32,
        "maxnreg leaves fewer than 32 registers beside the tiles: every config would spill",
    ),
    tritune.Constraint(
        "cluster_needs_blocks",
        lambda c: c["num_ctas"] == 1 or c["BLOCK_M"] >= 64,
        "num_ctas=2 splits a block over a 2-CTA cluster: it needs BLOCK_M >= 64",
    ),
]

ATTENTION_WIDE_SPACE = tritune.Space(WIDE_GRID, constraints=CONSTRAINTS)


def _workload(name, keys):
    return tritune.Workload(
        name=name,
        kernel=attention_kernel,
        configs=ATTENTION_WIDE_SPACE,
        args=attention_args,
        grid=lambda meta, key: (key["N_CTX"] // meta["BLOCK_M"], key["heads"]),
        outputs=[3],
        oracle=attention_oracle,
        keys=keys,
        kwargs={"HEAD_DIM": HEAD_DIM},
        atol=5e-3,
        rtol=5e-3,
        bytes=lambda key: 4 * 2 * key["heads"] * key["N_CTX"] * HEAD_DIM,
        flops=lambda key: 4 * key["heads"] * key["N_CTX"] ** 2 * HEAD_DIM,
    )


attention_wide = _workload(
    "attention_wide", [{"heads": 32, "N_CTX": 4096}, {"heads": 16, "N_CTX": 8192}, {"heads": 64, "N_CTX": 2048}]
)
attention_wide_small = _workload("attention_wide_small", [{"heads": 2, "N_CTX": 256}])

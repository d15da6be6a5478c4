"""The timing benchmark's GELU space: BLOCK 128..16384 x num_warps {1,2,4,8,16} x num_stages {1,3} (80 configs).

Meant for a GPU: ``tritune tune examples/gelu_space.py``.
"""

import torch
import triton
from gelu import gelu_args, gelu_forward_kernel

import tritune

gelu_space = tritune.Workload(
    name="gelu_space",
    kernel=gelu_forward_kernel,
    configs=tritune.Space(
        {"BLOCK": tritune.pow2(128, 16384), "num_warps": [1, 2, 4, 8, 16], "num_stages": [1, 3]},
    ),
    args=gelu_args,
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    outputs=[1],
    oracle=lambda args: [torch.nn.functional.gelu(args[0], approximate="none")],
    keys=[{"n": 1 << 20}, {"n": 1 << 24}, {"n": 1 << 28}],
    bytes=lambda key: 2 * 4 * key["n"],
)

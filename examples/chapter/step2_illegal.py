"""Chapter 18.1.2, redone: BLOCK=300 is caught as illegal BEFORE anything launches, with the reason."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # no GPU needed; the check compiles for sm_90 anyway

import torch
import triton
from gelu import gelu_args, gelu_forward_kernel  # the chapter's kernel

import tritune

workload = tritune.Workload(
    name="gelu_with_a_typo",
    kernel=gelu_forward_kernel,
    configs=[
        tritune.Config({"BLOCK": 256}, num_warps=2, num_stages=1),
        tritune.Config({"BLOCK": 300}, num_warps=4, num_stages=2),  # not a power of 2
        tritune.Config({"BLOCK": 512}, num_warps=3, num_stages=2),  # num_warps not a power of 2
        tritune.Config({"BLOCKSIZE": 512}, num_warps=4, num_stages=2),  # no such parameter
    ],
    args=gelu_args,
    grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
    outputs=[1],
    oracle=lambda args: [torch.nn.functional.gelu(args[0])],
    keys=[{"n": 4096}],
)

report = tritune.verify(workload)
for cand in report.workloads[0].candidates:
    print(f"{cand.config.id:40s} {cand.status.value:8s} {cand.reason or ''}")

"""The wide example spaces (>= 1,500 legal configs): counted and their constraints checked on CPU, no compiling."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tritune.config import Config
from tritune.workload import load_workloads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def space_of(file: str, workload: str):  # type: ignore[no-untyped-def]
    (w,) = load_workloads(EXAMPLES / file, workload)
    return w.configs


@pytest.mark.parametrize(
    ("file", "workload", "combinations", "legal"),
    [
        ("matmul_tma_wide.py", "matmul_tma_wide", 27648, 5536),
        ("attention_wide.py", "attention_wide", 10000, 1908),
    ],
)
def test_wide_space_size_and_every_rule_bites(
    file: str, workload: str, combinations: int, legal: int
) -> None:
    space = space_of(file, workload)
    assert space.size == combinations
    verdicts = space.enumerate()
    ok = [c for c, why in verdicts if why is None]
    assert len(ok) == legal >= 1500
    reasons = collections.Counter(why.split(" for ")[0] for _, why in verdicts if why is not None)
    assert not any("raised" in r for r in reasons), f"a constraint crashed: {reasons}"
    # every named constraint rejects something, and says which config it rejected
    assert len(reasons) == len(space.constraints)
    rejected = next(c for c, why in verdicts if why is not None)
    assert rejected.id in (space.rejection(rejected) or "")


def test_matmul_wide_rules_reject_what_they_name() -> None:
    space = space_of("matmul_tma_wide.py", "matmul_tma_wide")
    base = {
        "BLOCK_M": 128,
        "BLOCK_N": 128,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "EPILOGUE_SUBTILE": 1,
        "WARP_SPECIALIZE": 0,
    }
    assert space.rejection(Config(base, num_warps=8, num_stages=3)) is None
    smem = space.rejection(Config({**base, "BLOCK_N": 256, "BLOCK_K": 128}, num_warps=8, num_stages=5))
    assert smem is not None and "shared memory" in smem
    ws = space.rejection(Config({**base, "WARP_SPECIALIZE": 1}, num_warps=8, num_stages=3))
    assert ws is not None and "warp specialization" in ws
    reg = space.rejection(Config({**base, "WARP_SPECIALIZE": 1}, num_warps=4, num_stages=3, maxnreg=232))
    assert reg is not None and "65536" in reg
    cluster = space.rejection(Config({**base, "BLOCK_M": 64}, num_warps=4, num_stages=3, num_ctas=2))
    assert cluster is not None and "cluster" in cluster


def test_attention_wide_rules_reject_what_they_name() -> None:
    space = space_of("attention_wide.py", "attention_wide")
    assert space.rejection(Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=2)) is None
    warps = space.rejection(Config({"BLOCK_M": 32, "BLOCK_N": 64}, num_warps=4, num_stages=2))
    assert warps is not None and "16 query rows" in warps
    spill = space.rejection(Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=2, maxnreg=64))
    assert spill is not None and "maxnreg" in spill
    assert len(load_workloads(EXAMPLES / "attention_wide.py", "attention_wide")[0].keys) == 3

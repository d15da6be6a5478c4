"""Occupancy arithmetic (per the CUDA occupancy calculator) and the verdict sentences."""

from __future__ import annotations

import pytest

from tritune.screen.occupancy import Resources, occupancy, register_limited_threads, violations
from tritune.screen.targets import get_target

SM90 = get_target("sm90")
SM86 = get_target("sm86")


@pytest.mark.parametrize(
    ("res", "target", "blocks", "limiter"),
    [
        # 128 threads, 64 regs: 2048 regs/warp, 8 warps per 16K partition -> 32 warps -> 8 blocks
        (Resources(threads=128, shared=16384, registers=64), SM90, 8, "registers"),
        # 98304 + 1024 static + 1024 reserved = 100352 B -> 233472 // 100352 = 2 (218 regs also allow only 2)
        (Resources(threads=128, shared=98304, registers=218, static_shared=1024), SM90, 2, "registers"),
        (Resources(threads=128, shared=98304, registers=128, static_shared=1024), SM90, 2, "shared_memory"),
        # 100 KB of sm_86 less 1 KB reserved: a 50000 B block fits once
        (Resources(threads=128, shared=50000, registers=32), SM86, 2, "shared_memory"),
        (Resources(threads=128, shared=51000, registers=32), SM86, 1, "shared_memory"),
        # 1024 threads = 32 warps -> 64 // 32 = 2 blocks by warps; 32 regs -> 16 warps/partition -> 2 blocks too
        (Resources(threads=1024, shared=0, registers=16), SM90, 2, "threads"),
        # tiny blocks: the resident-block cap decides (32 on sm_90, 16 on sm_86); named first in a tie
        (Resources(threads=32, shared=0, registers=16), SM90, 32, "blocks"),
        (Resources(threads=32, shared=0, registers=16), SM86, 16, "blocks"),
        # sm_86 has 48 warps per SM: 8-warp blocks -> 6 by threads
        (Resources(threads=256, shared=0, registers=32), SM86, 6, "threads"),
        # 255 regs round to 8192 per warp: 2 warps per partition -> 8 warps -> 2 blocks of 4 warps
        (Resources(threads=128, shared=0, registers=255), SM90, 2, "registers"),
        # register count rounds up per warp in units of 256: 33 regs -> 1280 per warp -> 12 warps per partition
        (Resources(threads=128, shared=0, registers=33), SM90, 12, "registers"),
    ],
)
def test_blocks_per_sm(res: Resources, target, blocks: int, limiter: str) -> None:
    occ = occupancy(res, target)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)


def test_illegal_config_has_zero_blocks_and_names_the_limit() -> None:
    occ = occupancy(Resources(threads=128, shared=262144), SM90)
    assert (occ.blocks_per_sm, occ.limiter) == (0, "shared_memory")


def test_shared_memory_verdict_is_the_issue_sentence() -> None:
    (v,) = violations(Resources(threads=128, shared=262144), SM90)
    assert v.rule == "shared_memory"
    assert v.reason == "needs 262144 B of shared memory; sm_90 allows 232448 B per block"


def test_static_shared_counts_towards_the_limit() -> None:
    assert violations(Resources(threads=128, shared=232448), SM90) == []
    (v,) = violations(Resources(threads=128, shared=232448, static_shared=1024), SM90)
    assert "plus 1024 B static" in v.reason


def test_register_and_thread_verdicts() -> None:
    # 255 registers x 512 threads: 8192 per warp x 16 warps = 131072 > 65536
    (v,) = violations(Resources(threads=512, shared=0, registers=255), SM90)
    assert (
        v.rule == "registers"
        and "131072 registers per block" in v.reason
        and "sm_90 allows 65536" in v.reason
    )
    (t,) = violations(Resources(threads=2048, shared=0), SM90)
    assert t.reason == "needs 2048 threads per block; sm_90 allows 1024"


def test_spills_are_a_warning_not_a_violation() -> None:
    from tritune.screen.occupancy import warnings_for

    res = Resources(threads=128, shared=0, registers=255, spilled_bytes=512)
    assert violations(res, SM90) == []
    assert any("spills" in w for w in warnings_for(res, SM90))


@pytest.mark.parametrize(
    ("regs", "threads"), [(0, 1024), (32, 1024), (64, 1024), (65, 896), (128, 512), (255, 256)]
)
def test_register_limited_threads(regs: int, threads: int) -> None:
    assert register_limited_threads(regs, SM90) == threads

"""Occupancy against what the H200's driver reported for real binaries (an H200, 2026-11-29)."""

import pytest

from tritune.screen.occupancy import Resources, occupancy
from tritune.screen.targets import get_target


@pytest.mark.parametrize(
    "threads, registers, shared, device_blocks",
    [
        (32, 48, 0, 32),  # softmax BLOCK_N=1024, 1 warp
        (64, 34, 8, 24),  # softmax BLOCK_N=1024, 2 warps
        (32, 255, 0, 8),  # softmax BLOCK_N=8192, 1 warp
        (64, 255, 0, 4),  # softmax BLOCK_N=8192, 2 warps
        (128, 255, 49152, 2),  # matmul 128x256x32, 4 warps, 2 stages
    ],
)
def test_blocks_per_sm_equal_the_drivers(threads, registers, shared, device_blocks):
    occ = occupancy(Resources(threads=threads, shared=shared, registers=registers), get_target("sm90"))
    assert occ.blocks_per_sm == device_blocks

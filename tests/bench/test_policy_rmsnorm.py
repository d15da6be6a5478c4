"""The RMSNorm example (a short kernel for the policy benchmark) is correct under Triton's interpreter."""

from __future__ import annotations

import torch
from rmsnorm import rmsnorm, rmsnorm_kernel


def test_rmsnorm_matches_its_oracle_across_block_sizes() -> None:
    key = {"rows": 3, "cols": 300}  # not a multiple of any BLOCK_N: both loops end on a masked block
    for block in (128, 512):
        args = rmsnorm.make_args(key, "cpu")
        rmsnorm_kernel[(key["rows"],)](*args, BLOCK_N=block)
        (want,) = rmsnorm.oracle(args)  # type: ignore[misc]
        torch.testing.assert_close(args[2], want, atol=rmsnorm.atol, rtol=rmsnorm.rtol)
        assert args[2].abs().max() > 0.5  # a real output, not the empty buffer

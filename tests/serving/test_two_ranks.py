"""Two gloo ranks tune one key while serving: same config for every call, promotion at the same step."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import incremental_ranks as ir
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))
from ranks import run_ranks

pytestmark = pytest.mark.slow


def test_two_ranks_launch_the_same_configs_and_promote_together(tmp_path: Path) -> None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    out = tmp_path / "out"
    out.mkdir()
    r0, r1 = run_ranks(
        ir.run, 2, out, (str(tmp_path / "rdv"), str(out)), ["torch.distributed", "triton", "tritune"]
    )
    assert r0["wrong"] == r1["wrong"] == 0
    assert r0["log"] == r1["log"]  # every launch, trial and scratch alike, on both ranks in the same order
    assert r0["promoted_at"] == r1["promoted_at"] and len(r0["promoted_at"]) == 1
    assert r0["winner"] == r1["winner"] == 512
    # Rank 0 compiled everything by its 2nd call, rank 1 by its 23rd: nothing else ran before both had it.
    assert r0["first_other"] is not None and r0["first_other"] >= 23

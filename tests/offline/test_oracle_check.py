"""``tritune tune`` checks correctness with verify's own check (in-place workloads too).

The kernel runs in Triton's interpreter and nothing is compiled ahead; the TIMINGS ARE SYNTHETIC (a made-up
landscape replayed by ReplayTimer), so only the correctness verdicts are under test here.
"""

from __future__ import annotations

import torch
import triton

import tritune
from kernels import scale_kernel
from tritune.bench import ReplayTimer
from tritune.config import Config
from tritune.engine.options import TuneOptions
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape, LandscapePoint
from tritune.offline.tune import tune
from tritune.outcome import Status

CONFIGS = [Config({"BLOCK": 256}), Config({"BLOCK": 512})]


def _in_place() -> tritune.Workload:
    return tritune.Workload(
        name="inplace",
        kernel=scale_kernel,
        configs=CONFIGS,
        args=lambda key, device: (lambda x: (x, x, 1000))(torch.randn(1000)),
        grid=lambda meta, key: (triton.cdiv(1000, meta["BLOCK"]),),
        outputs=[1],
        oracle=lambda args: [args[0] * 2],
        keys=[{}],
    )


def test_an_in_place_workload_is_correct_under_tune_as_under_verify() -> None:
    w = _in_place()
    assert all(c.status is Status.CORRECT for c in tritune.verify(w).workloads[0].candidates)
    pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in zip(CONFIGS, (0.02, 0.01), strict=True)]
    timer = ReplayTimer(Landscape.from_points("inplace", "synthetic", {}, pts), seed=0)  # SYNTHETIC timings
    opts = TuneOptions(jobs=1, race=RaceOptions(brief_budget_s=0.001, round_budget_s=0.003))
    res = tune([w], keys=[{}], ceilings=False, options=opts, timer=timer, target=None, device="cpu", group=None)
    (entry,) = res.workloads
    # Before the fix, tune poisoned the aliased output (the input itself): "1000 of 1000 elements never written".
    assert [(c.status, c.reason) for c in entry.candidates] == [(Status.MEASURED, None)] * 2
    assert entry.extra["winner"] == CONFIGS[1].to_json()


def test_tune_still_rejects_a_wrong_candidate_with_verify_reason() -> None:
    w = _in_place()
    w = tritune.Workload(name=w.name, kernel=w.kernel, configs=CONFIGS, args=w.args, grid=w.grid, outputs=[1],
                         oracle=lambda args: [args[0] * 3], keys=[{}])  # fmt: skip
    pts = [LandscapePoint(c, Status.MEASURED, 0.01) for c in CONFIGS]
    timer = ReplayTimer(Landscape.from_points("inplace", "synthetic", {}, pts), seed=0)  # SYNTHETIC timings
    opts = TuneOptions(jobs=1, race=RaceOptions(brief_budget_s=0.001, round_budget_s=0.003))
    (entry,) = tune([w], keys=[{}], ceilings=False, options=opts, timer=timer, target=None, device="cpu", group=None).workloads
    assert all(c.status is Status.INCORRECT for c in entry.candidates)
    assert all("vs the oracle" in (c.reason or "") for c in entry.candidates)

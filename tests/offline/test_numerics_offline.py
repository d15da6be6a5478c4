"""``tritune tune --numerics exact`` (the workload path): every candidate is checked, after the oracle, against the
first legal config's bits; the winner is the fastest of that class. TIMINGS ARE SYNTHETIC (a replay timer over a
made-up landscape; the kernel runs in Triton's interpreter for the checks)."""

from __future__ import annotations

from kernels import rowsum_workload
from tritune.bench import ReplayTimer
from tritune.engine.options import TuneOptions
from tritune.engine.race import RaceOptions
from tritune.landscape import Landscape, LandscapePoint
from tritune.offline.tune import tune
from tritune.outcome import Status
from tritune.store import MemoryStore

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)


def _timer(w) -> ReplayTimer:  # type: ignore[no-untyped-def]
    """SYNTHETIC: the larger the block, the faster."""
    pts = [LandscapePoint(c, Status.MEASURED, 1.0 / c.kwargs["BLOCK"]) for c in w.candidates()]
    return ReplayTimer(Landscape.from_points("rowsum", "synthetic", {}, pts), seed=0)


def test_exact_keeps_the_first_legal_configs_bits_and_any_takes_the_fastest() -> None:
    w = rowsum_workload()
    store = MemoryStore()
    runs = {}
    for numerics in ("any", "exact"):
        res = tune([w], ceilings=False, options=TuneOptions(jobs=1, race=OPTS, numerics=numerics), store=store,
                   timer=_timer(w), target=None, device="cpu", group=None)  # fmt: skip
        (entry,) = res.workloads
        runs[numerics] = entry
    assert runs["any"].extra["winner"]["kwargs"] == {"BLOCK": 256}
    assert runs["exact"].extra["winner"]["kwargs"] == {"BLOCK": 32}  # the reference: other blocks sum in another order
    n = runs["exact"].extra["numerics"]
    assert n["mode"] == "exact" and n["reference"].startswith("BLOCK=32,") and len(n["other"]) == 3
    statuses = {c.config.kwargs["BLOCK"]: c.status for c in runs["exact"].candidates}
    assert statuses[32] is Status.MEASURED and {statuses[b] for b in (64, 128, 256)} == {Status.OTHER_NUMERICS}
    keys = {e.key.numerics for e in store.entries()}
    assert keys == {"any", "exact"}  # one store key per mode

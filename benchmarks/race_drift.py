"""A race on a drifting GPU, replayed: what the drift correction of dropped configs changes (issue 16).

    PYTHONPATH=src python3 benchmarks/race_drift.py [--seeds 200] [--field 8,16] [--ramp 0.10] [--swing 0.03]

ALL TIMES ARE SYNTHETIC: recorded landscapes (``benchmarks/landscapes/``) replayed by a ReplayTimer with 1% noise
per sample and 0.5% per look, plus a common drift of the GPU (:class:`tritune.bench.GpuDrift`: looks ``ramp`` fast
at the start of the load, settling over ~0.1 s of device time, then wandering by ``swing``), fitted by eye to the
H100 looks of ``benchmarks/first_looks.py`` (session 25). Per landscape and seed: the ``field`` fastest legal configs
(a batch of a search's good region, as a transfer's opening is), in a random order, race with tuning's race options
(0.025 s of device time per candidate), with ``drift`` correction on and off, the same draws for both.

Printed per landscape, field and setting, over the seeds:

- ``winner``: the race's winner's true time over the field's true best (the correction leaves it alone);
- ``best told``: the same for the config with the smallest reported median, what a search's strategy and a
  transfer's confirmation take as the best (mean, and the share over 1.01);
- ``dropped err``: RMS over the dropped configs of (reported / true) over (the winner's reported / true), in percent.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from tritune.bench import GpuDrift, ReplayTimer  # noqa: E402
from tritune.engine.race import RaceOptions, race  # noqa: E402
from tritune.landscape import Landscape  # noqa: E402
from tritune.outcome import Status  # noqa: E402

LANDSCAPES = ("matmul_h100_4096_a", "matmul_h200_4096", "matmul_host_h200_4096", "attention_h200_32x4096",
              "layernorm_h200_4096x8192", "gelu_h200_n2e24")  # fmt: skip


def one(land: Landscape, field: list, seed: int, drift: bool, ramp: float, swing: float) -> dict[str, float]:  # type: ignore[type-arg]
    order = list(field)
    random.Random(seed).shuffle(order)
    timer = ReplayTimer(land, noise=0.01, look_noise=0.005, seed=seed,
                        drift=GpuDrift(ramp=ramp, swing=swing, seed=seed))  # fmt: skip
    res = race(order, timer.measure_config, RaceOptions(drift=drift))
    true = {c: land.lookup(c).time_ms for c in order}  # type: ignore[union-attr]
    best = min(true.values())
    assert res.winner is not None
    told = {o.config: o.measurement.median_ms for o in res.outcomes
            if o.status is Status.MEASURED and o.measurement is not None}  # fmt: skip
    first = min(told, key=told.__getitem__)
    w = told[res.winner] / true[res.winner]
    dropped = [math.log(told[o.config] / true[o.config] / w) ** 2 for o in res.outcomes
               if o.eliminated_round is not None and o.config in told]  # fmt: skip
    return {"winner": true[res.winner] / best, "best_told": true[first] / best,
            "dropped_err": 100 * math.sqrt(statistics.mean(dropped)) if dropped else 0.0}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--field", default="8,16")
    ap.add_argument("--ramp", type=float, default=0.10)
    ap.add_argument("--swing", type=float, default=0.03)
    a = ap.parse_args()
    print(f"SYNTHETIC replay: drift ramp {a.ramp}, swing {a.swing}; {a.seeds} seeds per row")
    print(f"{'landscape':28} {'field':>5} {'drift':>5} {'winner':>7} {'best told':>9} {'>1.01':>6} {'dropped err':>11}")
    for name in LANDSCAPES:
        land = Landscape.load(ROOT / "benchmarks" / "landscapes" / f"{name}.json")
        ok = sorted((p for p in land.points if p.status is Status.MEASURED and p.time_ms is not None),
                    key=lambda p: p.time_ms)  # type: ignore[arg-type, return-value]  # fmt: skip
        for k in (int(x) for x in a.field.split(",")):
            field = [p.config for p in ok[:k]]
            for drift in (False, True):
                rows = [one(land, field, s, drift, a.ramp, a.swing) for s in range(a.seeds)]
                bt = [r["best_told"] for r in rows]
                print(f"{name:28} {k:5d} {'on' if drift else 'off':>5} {statistics.mean(r['winner'] for r in rows):7.4f} "
                      f"{statistics.mean(bt):9.4f} {sum(x > 1.01 for x in bt) / len(bt):6.2f} "
                      f"{statistics.mean(r['dropped_err'] for r in rows):10.2f}%", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A transfer's opening race on a smaller budget, replayed: what it costs the new key's pick (issue 16, row 3).

    PYTHONPATH=src python3 benchmarks/opening_budget.py [--seeds 200] [--field 8] [--variants 0.025,0.015,...]

ALL TIMES ARE SYNTHETIC: recorded landscapes (``benchmarks/landscapes/``) replayed by a ReplayTimer with 1% noise per
sample and 0.5% per look and the common drift of ``race_drift.py`` (:class:`tritune.bench.GpuDrift`, fitted by eye
to the H100 looks of ``first_looks.py``, session 25). Per landscape and seed it runs what a confirmed transfer runs
on the GPU (``search_tune.py --only transfer``): the opening, the ``field`` fastest legal configs in a random order
(a transfer's opening holds the tuned keys' winners and the configs they measured fastest: near-ties, where a race
spends its whole budget), races with the variant's options; the tuned keys' winner is one of the field's 4 truly
fastest, drawn per seed; the transfer confirms when its reported time ties with the smallest reported one
(:meth:`tritune.search.TransferSearch.confirmed`'s rule); then the final race (:func:`tritune.engine.finals.final_field`,
tuning's race options) picks, on the same timer (the drift goes on). Every variant gets the same draws per seed.

A variant is ``BUDGET`` (device seconds per candidate of the opening race; tuning's default is 0.025) with ``/nopolish``
for no polishing of the opening's winner. Printed per landscape and variant, over the seeds: the pick's true time over
the field's true best (mean, share over 1.01 and 1.02), the share confirmed, and the opening race's and the final
race's device seconds (means). The last row pools the landscapes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from tritune.bench import GpuDrift, ReplayTimer  # noqa: E402
from tritune.engine.finals import final_field  # noqa: E402
from tritune.engine.race import RaceOptions, race  # noqa: E402
from tritune.landscape import Landscape  # noqa: E402
from tritune.outcome import Status  # noqa: E402
from tritune.search.transfer import CONFIRM_TOL  # noqa: E402

LANDSCAPES = ("matmul_h100_4096_a", "matmul_h100_4096_b", "matmul_h200_4096", "matmul_host_h200_4096",
              "attention_h200_32x4096", "layernorm_h200_4096x8192", "gelu_h200_n2e24")  # fmt: skip


def parse_variant(v: str) -> RaceOptions:
    budget, _, flag = v.partition("/")
    if flag not in ("", "nopolish"):
        raise SystemExit(f"unknown variant flag {flag!r} in {v!r}")
    return RaceOptions(budget_per_candidate_s=float(budget), polish=flag != "nopolish")


def one(land: Landscape, field: list[Any], seed: int, opening: RaceOptions) -> dict[str, float]:
    rng = random.Random(seed)
    order = list(field)
    rng.shuffle(order)
    true = {c: land.lookup(c).time_ms for c in order}  # type: ignore[union-attr]
    leader = sorted(order, key=lambda c: true[c])[rng.randrange(min(4, len(order)))]
    timer = ReplayTimer(land, noise=0.01, look_noise=0.005, seed=seed, drift=GpuDrift(seed=seed))
    first = race(order, timer.measure_config, opening)
    opening_s = timer.device_s
    told = {o.config: o.measurement for o in first.outcomes
            if o.status is Status.MEASURED and o.measurement is not None}  # fmt: skip
    best = min(told, key=lambda c: (told[c].median_ms, order.index(c)))
    limit = max(told[best].ci_high_ms, told[best].median_ms * (1 + CONFIRM_TOL))
    confirmed = told[leader].median_ms <= limit
    assert first.winner is not None
    picked = final_field([(c, m.median_ms) for c, m in told.items()], first.winner)
    pick = first.winner
    if picked:
        fin = race(picked, timer.measure_config, RaceOptions())
        pick = fin.winner or pick
    top = min(true.values())
    return {"q": true[pick] / top, "confirmed": float(confirmed), "opening_s": opening_s,
            "final_s": timer.device_s - opening_s}  # fmt: skip


def scaled(land: Landscape, best_ms: float) -> Landscape:
    """``land`` with every time scaled so that its best is ``best_ms``: a longer kernel of the same landscape, whose
    looks of the race's 5 ms hold fewer samples."""
    assert land.best is not None and land.best.time_ms
    k = best_ms / land.best.time_ms
    pts = [replace(p, time_ms=None if p.time_ms is None else p.time_ms * k) for p in land.points]
    return Landscape(land.kernel, land.device, dict(land.key), pts, dict(land.provenance), land.measure)


def row(name: str, variant: str, rows: list[dict[str, float]]) -> str:
    q = [r["q"] for r in rows]
    return (f"{name:26} {variant:16} {statistics.mean(q):7.4f} {sum(x > 1.01 for x in q) / len(q):6.3f} "
            f"{sum(x > 1.02 for x in q) / len(q):6.3f} {statistics.mean(r['confirmed'] for r in rows):6.2f} "
            f"{statistics.mean(r['opening_s'] for r in rows):9.3f} {statistics.mean(r['final_s'] for r in rows):7.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--field", type=int, default=8)
    ap.add_argument("--variants", default="0.025,0.025/nopolish,0.015,0.015/nopolish,0.010/nopolish")
    ap.add_argument("--best-ms", type=float, default=None,
                    help="scale each landscape's times so its best is this many ms (0.6: the 6144^3 matmul on an H100)")
    a = ap.parse_args()
    variants = a.variants.split(",")
    opts = {v: parse_variant(v) for v in variants}
    print(f"SYNTHETIC replay: field {a.field}, {a.seeds} seeds per row, drift GpuDrift() per seed"
          + (f", every landscape scaled to a best of {a.best_ms} ms" if a.best_ms else ""))
    print(f"{'landscape':26} {'opening':16} {'pick':>7} {'>1.01':>6} {'>1.02':>6} {'conf':>6} {'opening_s':>9} "
          f"{'final_s':>7}")  # fmt: skip
    pooled: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for name in LANDSCAPES:
        land = Landscape.load(ROOT / "benchmarks" / "landscapes" / f"{name}.json")
        if a.best_ms:
            land = scaled(land, a.best_ms)
        ok = sorted((p for p in land.points if p.status is Status.MEASURED and p.time_ms is not None),
                    key=lambda p: p.time_ms)  # type: ignore[arg-type, return-value]  # fmt: skip
        field = [p.config for p in ok[: a.field]]
        for v in variants:
            rows = [one(land, field, s, opts[v]) for s in range(a.seeds)]
            pooled[v] += rows
            print(row(name, v, rows), flush=True)
    for v in variants:
        print(row("all", v, pooled[v]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

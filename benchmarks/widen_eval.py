"""A widened list searched outward from its written configs (``rings``) against racing all of it, on recorded GPU
timings: how many configs each times, and how close the search's pick comes to the widened list's best.

For each recorded landscape (``benchmarks/landscapes``: every config of a kernel at one key, timed on an H100 or
H200) and each seed, a written list of ``--list`` configs is drawn from the landscape's measured configs (seeded:
it stands in for a library's hand-written list; ``--top 0.25`` draws from the fastest quarter, as a list tuned by
hand), widened ``--steps`` steps (:func:`tritune.space.widen` without a
kernel: the int meta-parameters whose name has BLOCK or that the list varies, ``num_warps``, ``num_stages``), and
kept to the configs the landscape recorded. The peer is racing every config of that widened list, which is what a
tuner does without ``rings`` and what a library's loop that times every config it is given does: its pick is the
widened list's recorded best. ``rings`` runs as tuning runs it (the search driver with a pool of ``--width``, the
tuner's final race, replay noise ``--noise``); its pick is judged on its recorded, noise-free time.

Printed per landscape, over the seeds: configs timed, rings over the whole list (median and worst); rings' pick
over the widened list's best (median, 90th percentile, worst), and the written list's own best over the widened
list's best (what ``triton.autotune`` on the list gets: the gain widening is for). No GPU is needed.

    python benchmarks/widen_eval.py benchmarks/landscapes --seeds 20 --list 4 --steps 1 --out widen_eval.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tritune.engine.finals import replay_final_race
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search import RingSearch
from tritune.search.base import Budget
from tritune.search.rings import ADMIT_MARGIN
from tritune.search.simulate import simulate_one
from tritune.space import widen


def widened_landscape(land: Landscape, size: int, steps: int, seed: int,
                      top: float = 1.0) -> tuple[Landscape, list[Any], dict[Any, Any]]:  # fmt: skip
    """A written list of ``size`` measured configs drawn with ``seed`` (from the fastest ``top`` share of them: a
    list someone tuned by hand, rather than any configs), widened ``steps`` steps and kept to the landscape's
    recorded configs: the sub-landscape, the written list, and each generated config's origins."""
    rng = np.random.default_rng([seed, 0x71D])
    measured = land.measured
    if top < 1.0:
        measured = sorted(measured, key=lambda p: p.time_ms or 0.0)[: max(size, round(top * len(measured)))]
    picks = rng.choice(len(measured), size=min(size, len(measured)), replace=False)
    written = [measured[int(i)].config for i in sorted(picks)]
    w = widen(written, radius=steps)
    keep = {c for c in w.configs() if land.lookup(c) is not None}
    origins = {g.config: tuple(o for o in g.origins if o in keep) for g in w.generated if g.config in keep}
    points = [p for c in w.configs() if c in keep and (p := land.lookup(c)) is not None]
    sub = Landscape.from_points(land.kernel, land.device, land.key, points, measure=land.measure)
    return sub, written, origins


def evaluate(land: Landscape, *, size: int, steps: int, seeds: int, noise: float, width: int,
             margin: float = ADMIT_MARGIN, top: float = 1.0) -> dict[str, Any]:  # fmt: skip
    runs = []
    for seed in range(seeds):
        sub, written, origins = widened_landscape(land, size, steps, seed, top)
        legal = [p for p in sub.points if p.status is not Status.ILLEGAL]
        best = sub.best.time_ms or 0.0
        written_best = min((p.time_ms for c in written if (p := sub.lookup(c)) is not None and p.time_ms is not None),
                           default=None)  # fmt: skip

        def rings(space: Any, *, seed: int, illegal: Any, origins: dict[Any, Any] = origins) -> RingSearch:
            return RingSearch(space, seed=seed, illegal=illegal, origins=origins, margin=margin)

        run = simulate_one(sub, rings, Budget(evaluations=len(legal)), seed=seed, noise=noise,
                           final=replay_final_race, width=width)  # fmt: skip
        runs.append({"seed": seed, "widened": len(legal), "timed": run.evaluations,
                     "pick_over_best": run.best_ratio,
                     "written_over_best": None if written_best is None else written_best / best,
                     "widened_best_generated": sub.best.config not in written})  # fmt: skip
    timed = [r["timed"] / r["widened"] for r in runs]
    picks = sorted(r["pick_over_best"] for r in runs if r["pick_over_best"] is not None)
    written_ratio = [r["written_over_best"] for r in runs if r["written_over_best"] is not None]
    return {
        "runs": runs,
        "timed_share_median": statistics.median(timed),
        "timed_share_worst": max(timed),
        "pick_median": statistics.median(picks) if picks else None,
        "pick_p90": picks[min(len(picks) - 1, int(0.9 * len(picks)))] if picks else None,
        "pick_worst": picks[-1] if picks else None,
        "written_median": statistics.median(written_ratio) if written_ratio else None,
        "widened_helps": sum(1 for r in runs if (r["written_over_best"] or 1.0) > 1.05),
        "rings_keeps_gain": sum(1 for r in runs if (r["written_over_best"] or 1.0) > 1.05
                                and (r["pick_over_best"] or 9.0) <= 1.02),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="recorded landscapes (benchmarks/landscapes)")
    p.add_argument("--seeds", type=int, default=20, help="written lists drawn per landscape")
    p.add_argument("--list", type=int, default=4, help="configs in a written list")
    p.add_argument("--steps", type=int, default=1, help="steps of widening (1: widen=True, 2: widen=2)")
    p.add_argument("--noise", type=float, default=0.01, help="replay noise per look (relative)")
    p.add_argument("--width", type=int, default=16, help="the compile pool's width")
    p.add_argument("--margin", type=float, default=ADMIT_MARGIN, help="out of the race: this much slower than the best")
    p.add_argument("--top", type=float, default=1.0,
                   help="draw the written configs from this fastest share of the measured ones (1: any)")
    p.add_argument("--out", type=Path, help="write every run as JSON here")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
    from fitted import recorded  # type: ignore[import-not-found]

    t0 = time.perf_counter()
    rows = {}
    print(f"widened lists of {args.list} written configs, {args.steps} step(s), {args.seeds} seeds, noise "
          f"{args.noise:g}, pool {args.width}, margin {args.margin:g}, drawn from the fastest {args.top:.0%}: rings "
          "against racing every config of the widened list")  # fmt: skip
    print(f"{'landscape':34s} {'configs':>7s} {'timed (med, worst)':>18s} {'pick/best (med, p90, worst)':>28s} "
          f"{'written/best (med)':>18s} {'gain kept':>9s}")  # fmt: skip
    for name, land in recorded(args.folder):
        r = evaluate(land, size=args.list, steps=args.steps, seeds=args.seeds, noise=args.noise, width=args.width,
                     margin=args.margin, top=args.top)  # fmt: skip
        rows[name] = r
        n = statistics.median(x["widened"] for x in r["runs"])
        print(f"{name:34s} {n:7.0f} {r['timed_share_median']:8.2f} {r['timed_share_worst']:8.2f}x "
              f"{r['pick_median']:9.3f} {r['pick_p90']:8.3f} {r['pick_worst']:8.3f} {r['written_median']:18.3f} "
              f"{r['rings_keeps_gain']:>4d}/{r['widened_helps']:<4d}")  # fmt: skip
    shares = [x["timed"] / x["widened"] for r in rows.values() for x in r["runs"]]
    picks = sorted(x["pick_over_best"] for r in rows.values() for x in r["runs"] if x["pick_over_best"] is not None)
    helps = sum(r["widened_helps"] for r in rows.values())
    kept = sum(r["rings_keeps_gain"] for r in rows.values())
    print(f"all: configs timed, rings / the whole widened list: median {statistics.median(shares):.2f}x; "
          f"rings' pick over the widened list's best: median {statistics.median(picks):.3f}, p90 "
          f"{picks[int(0.9 * (len(picks) - 1))]:.3f}, worst {picks[-1]:.3f}; lists whose widened best beat the "
          f"written best by >5%: {helps}, of which rings' pick within 2% of it: {kept}")  # fmt: skip
    if args.out is not None:
        from search_eval import provenance

        prov = provenance(list(sys.argv[1:] if argv is None else argv), script="widen_eval.py")
        args.out.write_text(json.dumps({"provenance": {**prov, "seconds": round(time.perf_counter() - t0, 1)},
                                        "landscapes": rows}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

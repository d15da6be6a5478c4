"""Session 12: why the default's tail runs on matmul_h200_4096 end ~5% off (40 seeds, tuner model, width 16).

Run from the repository root with PYTHONPATH=src: python3 .../p90_s12/diagnose.py [spec] [noises]
Per run off the best (> 1.02): the pick and its true ratio, whether the true best (and the configs within 2%)
was ever measured and at which evaluation, how the search measured it, whether it reached the final race, the
model's rank of the true best among all candidates at the end, and the fastest measured (the race's lead).
"""

import sys
from collections import Counter

import numpy as np

from tritune.engine.finals import replay_final_race
from tritune.landscape import Landscape
from tritune.search import registry
from tritune.search.base import Budget
from tritune.search.driver import ROUNDS
from tritune.search.simulate import simulate_one

spec = sys.argv[1] if len(sys.argv) > 1 else "surrogate"
noises = [float(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "0,0.01,0.02").split(",")]
land = Landscape.load("benchmarks/landscapes/matmul_h200_4096.json")
best_t = land.best.time_ms
name, options = registry.parse_spec(spec) if ":" in spec else (spec, {})
ratio = {p.config.id: p.time_ms / best_t for p in land.points if p.time_ms is not None}
near = {c for c, r in ratio.items() if r <= 1.02}
print("configs within 2%:", {c: round(ratio[c], 3) for c in sorted(near, key=ratio.get)})
legal = len(ratio)
budget = Budget.fraction(0.25, legal)
for noise in noises:
    kinds: Counter = Counter()
    for seed in range(40):
        box = {}

        def factory(space, *, seed, illegal, box=box):
            box["s"] = registry.get(name, space, seed=seed, illegal=illegal, **options)
            return box["s"]

        run = simulate_one(land, factory, budget, seed=seed, noise=noise, final=replay_final_race, width=16,
                           rounds=ROUNDS)
        if run.best_ratio is None or run.best_ratio <= 1.02:
            continue
        s = box["s"]
        hist = [o for o in s.history if o.ok and o.time_ms is not None] if hasattr(s, "history") else []
        ids = [s.candidates[i].id for i in range(len(s.candidates))]
        meas = {ids[i]: float(np.exp(t)) for i, t in s._measured.items()}
        asked_near = sorted((c for c in near if c in meas), key=ratio.get)
        score = s._scores()
        order = np.argsort(score)
        rank = {ids[int(i)]: k for k, i in enumerate(order)}
        bid = land.best.config.id
        lead = min(meas, key=meas.get)
        kind = ("near-best measured" if asked_near else "near-best never measured")
        kinds[kind] += 1
        print(f"noise {noise:.2f} seed {seed:2d} ratio {run.best_ratio:.3f} pick {run.best_config}")
        print(f"   lead (fastest measured) {lead} true {ratio[lead]:.3f} measured {meas[lead] / best_t:.3f}; "
              f"race {len(run.final or ())}: {[round(ratio[c], 3) for c in (run.final or ())]}")
        for c in asked_near:
            print(f"   measured near-best {c} true {ratio[c]:.3f} seen {meas[c] / best_t:.3f} in race {c in (run.final or ())}")
        print(f"   true best: model rank {rank[bid]} of {len(ids)}; model's top 5 unmeasured "
              f"{[round(ratio.get(ids[int(i)], 99), 3) for i in order if ids[int(i)] not in meas][:5]}; "
              f"measured {len(meas)}")
    print(f"noise {noise:.2f}: {dict(kinds)}", flush=True)

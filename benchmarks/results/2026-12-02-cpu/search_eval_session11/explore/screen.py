"""Session 11's quick screen: strategy specs on one recorded landscape or on held-out rows, 40 seeds.

Run from the repository root with PYTHONPATH=src (``nice -n 10``):

    python3 .../explore/screen.py recorded benchmarks/landscapes/matmul_h200_4096.json "surrogate;surrogate:swap=1" 0,0.01,0.02
    python3 .../explore/screen.py holdout "gelu_space~fit700;matmul~fit700" "surrogate;surrogate:polish=1" 0.02

Prints per row and spec the median and p90 best ratio over seeds 0-39 (tuner model, width 16, 16 rounds, as
search_eval.py), and for recorded rows how many runs ended more than 2% off the best, by ratio.
"""

import sys
from collections import Counter
from pathlib import Path

from tritune.engine.finals import replay_final_race
from tritune.landscape import Landscape
from tritune.search.driver import ROUNDS
from tritune.search.simulate import simulate

sys.path.insert(0, "benchmarks")
from search_eval import load_holdout, strategy_factory

suite, where, specs, noises = sys.argv[1], sys.argv[2], sys.argv[3].split(";"), sys.argv[4].split(",")
if suite == "recorded":
    lands = [(Path(where).stem, Landscape.load(where))]
else:
    prefixes = tuple(where.split(";"))
    lands = [(lab, land) for lab, land in load_holdout(Path("benchmarks/landscapes"), 1) if lab.startswith(prefixes)]
for label, land in lands:
    for noise in map(float, noises):
        for spec in specs:
            sim = simulate(land, strategy_factory(spec), 0.25, range(40), noise=noise, name=spec,
                           final=replay_final_race, width=16, rounds=ROUNDS)
            off = Counter(round(r.best_ratio, 3) for r in sim.runs if r.best_ratio is not None and r.best_ratio > 1.02)
            print(f"{label[:28]:28} {noise:.2f} {spec:36} median {sim.median_best_ratio:.3f} "
                  f"p90 {sim.p90_best_ratio:.3f} off {sum(off.values())} {dict(sorted(off.items()))}", flush=True)

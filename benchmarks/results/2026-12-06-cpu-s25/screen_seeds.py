"""Simulate one recorded landscape over a range of seeds at several noise levels, as `search_eval.py` runs a row.

    python3 benchmarks/results/2026-12-06-cpu-s25/screen_seeds.py LANDSCAPE STRATEGY NOISES FIRST-LAST
    e.g. ... benchmarks/landscapes/gelu_h200_n2e20.json surrogate 0,0.01,0.02 0-200
"""

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from search_eval import strategy_factory  # noqa: E402

from tritune.engine.finals import replay_final_race  # noqa: E402
from tritune.landscape import Landscape  # noqa: E402
from tritune.search.driver import ROUNDS  # noqa: E402
from tritune.search.simulate import simulate  # noqa: E402

land = Landscape.load(sys.argv[1])
spec, noises = sys.argv[2], [float(x) for x in sys.argv[3].split(",")]
a, b = map(int, sys.argv[4].split("-"))
for noise in noises:
    t = time.time()
    sim = simulate(land, strategy_factory(spec), 0.25, range(a, b), noise=noise, final=replay_final_race, width=16,
                   rounds=ROUNDS)  # fmt: skip
    r = [x.best_ratio for x in sim.runs]
    print(f"{spec:30} noise {noise} seeds {a}-{b}: off>2% {sum(x > 1.02 for x in r)}/{len(r)} "
          f"median {sim.median_best_ratio:.3f} p90 {sim.p90_best_ratio:.3f}  {time.time() - t:.0f}s", flush=True)

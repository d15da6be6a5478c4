import sys, math
import numpy as np
from tritune.engine.searched import replay_final_race
from tritune.landscape import Landscape
from tritune.search import registry
from tritune.search.base import Budget
from tritune.search.driver import ROUNDS
from tritune.search.simulate import simulate_one
path, spec, noise, seeds = sys.argv[1], sys.argv[2], float(sys.argv[3]), [int(s) for s in sys.argv[4].split(",")]
land = Landscape.load(path); bt = land.best.time_ms
name, options = registry.parse_spec(spec) if ":" in spec else (spec, {})
ratio = {p.config: p.time_ms / bt for p in land.points if p.time_ms is not None}
def r(s,i): return round(ratio.get(s.candidates[i],99),3)
for seed in seeds:
    def factory(space, *, seed, illegal):
        s = registry.get(name, space, seed=seed, illegal=illegal, **options)
        inner = s._endgame_picks
        def traced(n):
            out = inner(n)
            score = s._scores(); sd = s._sd
            yb = min(s._measured.values())
            for c in s._endgame_centres():
                mv = [(r(s,j), round(float(score[j]-yb),3), 'asked' if s._asked[j] else '') for j in s.grid.neighbours(c)]
                print(f"   centre {r(s,c)} meas {math.exp(s._measured[c])/bt:.3f} moves {mv}")
            print(f"  seed {seed} n={len(s._measured)+len(s._failed)} picks {[r(s,i) for i in out]}")
            return out
        s._endgame_picks = traced
        return s
    run = simulate_one(land, factory, Budget.fraction(0.25, len(ratio)), seed=seed, noise=noise, final=replay_final_race, width=16, rounds=ROUNDS)
    print(f"seed {seed} ratio {run.best_ratio:.3f}")

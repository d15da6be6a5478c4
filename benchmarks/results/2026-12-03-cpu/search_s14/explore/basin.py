import sys, math, collections
from tritune.engine.searched import replay_final_race
from tritune.landscape import Landscape
from tritune.search import registry
from tritune.search.base import Budget
from tritune.search.driver import ROUNDS
from tritune.search.simulate import simulate_one
path, spec, noise, a, b = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
land = Landscape.load(path); bt = land.best.time_ms
name, options = registry.parse_spec(spec) if ":" in spec else (spec, {})
ratio = {p.config: p.time_ms / bt for p in land.points if p.time_ms is not None}
cnt = collections.Counter(); n=0
for seed in range(a, b):
    box = {}
    def factory(space, *, seed, illegal):
        s = registry.get(name, space, seed=seed, illegal=illegal, **options); box['s'] = s; return s
    run = simulate_one(land, factory, Budget.fraction(0.25, len(ratio)), seed=seed, noise=noise, final=replay_final_race, width=16, rounds=ROUNDS)
    if run.best_ratio > 1.02:
        s = box['s']; n += 1
        meas = sorted((round(ratio[s.candidates[i]],3), round(math.exp(v)/bt,3)) for i, v in s._measured.items())
        near = [m for m in meas if m[0] < 1.11]
        for m in near: cnt[m[0]] += 1
        print(f"seed {seed} ratio {run.best_ratio:.3f} near-best measured (true, measured): {near}")
print(n, "off; how often each basin config was measured in them:", dict(sorted(cnt.items())))

"""Session 14: batch-by-batch trace of the default surrogate on one recorded landscape (tuner model, width 16).

    PYTHONPATH=src python3 .../explore/trace.py benchmarks/landscapes/matmul_h200_4096.json spec noise seed[,seed...]

For each guided batch: evaluations so far, the centres of the local step (true ratios), whether the true best is
in the local pool, its rank there by the model's mean and by expected improvement, and the picks' true ratios.
The GP's posterior sd is computed at every ask (it does not change the mean or any state the search reads).
"""

import math
import sys

import numpy as np

from tritune.engine.searched import replay_final_race
from tritune.landscape import Landscape
from tritune.search import gp as gpmod
from tritune.search import registry
from tritune.search.base import Budget
from tritune.search.driver import ROUNDS
from tritune.search.simulate import simulate_one

orig = gpmod.GaussianProcess.predict


def predict(self, idx, y, *, noise_var=0.0, with_std=False):
    return orig(self, idx, y, noise_var=noise_var, with_std=True)


gpmod.GaussianProcess.predict = predict

path, spec, noise, seeds = sys.argv[1], sys.argv[2], float(sys.argv[3]), [int(s) for s in sys.argv[4].split(",")]
land = Landscape.load(path)
bt = land.best.time_ms
name, options = registry.parse_spec(spec) if ":" in spec else (spec, {})
ratio = {p.config: p.time_ms / bt for p in land.points if p.time_ms is not None}


def phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def Phi(z):
    from math import erf
    return 0.5 * (1 + np.vectorize(erf)(z / math.sqrt(2)))


for seed in seeds:
    box = {}

    def factory(space, *, seed, illegal, box=box):
        s = registry.get(name, space, seed=seed, illegal=illegal, **options)
        box["s"] = s
        inner = s._propose_guided

        def traced(n, exclude=()):
            out = inner(n, exclude)
            score, sd = s._scores(), s._sd
            bi = s.index[land.best.config]
            tied = [s.index[o.config] for o in s.ties()[: 2 * s.top]]
            ranked = s._ranked(score)
            bf = list(dict.fromkeys(ranked[: s.top] + tied))
            local = s._local(bf)
            lc = np.flatnonzero(local)
            ybest = min(score[i] for i in s._measured)
            z = (ybest - score) / np.maximum(sd, 1e-9)
            ei = (ybest - score) * Phi(z) + sd * phi(z)
            def rk(v):
                return int((v[lc] < v[bi]).sum()) if local[bi] else None
            def rk_ei():
                return int((ei[lc] > ei[bi]).sum()) if local[bi] else None
            gr = int((score[~s._asked] < score[bi]).sum()) if not s._asked[bi] else None
            print(f"  seed {seed} n={len(s._measured)+len(s._failed):2d} centres {[round(ratio[s.candidates[i]],3) for i in bf]} "
                  f"best asked {bool(s._asked[bi])} in local {bool(local[bi])} (pool {len(lc)}) rank mean {rk(score)} "
                  f"ei {rk_ei()} global-mean-rank {gr}; best mu-ybest {score[bi]-ybest:+.3f} sd {sd[bi]:.3f}; "
                  f"picks {[round(ratio.get(c, 99),3) for c in out]}")
            return out

        s._propose_guided = traced
        return s

    run = simulate_one(land, factory, Budget.fraction(0.25, len(ratio)), seed=seed, noise=noise,
                       final=replay_final_race, width=16, rounds=ROUNDS)
    print(f"seed {seed} ratio {run.best_ratio:.3f}")

"""Milliseconds per SurrogateSearch.ask() on the recorded 216-config H200 matmul, model gp vs ridge.

    PYTHONPATH=src python benchmarks/results/2026-11-29-cpu/search_eval_session3/time_ask.py [SEEDS]

One config per ask, told its recorded time (no noise), for the 25% budget (42 evaluations) and for 168
(every legal config). "guided" counts only the asks after the space-filling start, which fit the model.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

from tritune.landscape import Landscape
from tritune.search.simulate import ReplayEvaluator, replay_space
from tritune.search.surrogate import SurrogateSearch

land = Landscape.load(Path("benchmarks/landscapes/matmul_h200_4096.json"))
space, illegal = replay_space(land)
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
for model in ("ridge", "gp"):
    for evals in (42, 168):
        every: list[float] = []
        guided: list[float] = []
        for seed in range(seeds):
            s = SurrogateSearch(space, seed=seed, illegal=illegal, model=model)
            evaluate = ReplayEvaluator(land, noise=0.0, seed=seed)
            for k in range(evals):
                t0 = time.perf_counter()
                configs = s.ask(1)
                ms = (time.perf_counter() - t0) * 1e3
                if not configs:
                    break
                every.append(ms)
                if k >= s.initial:
                    guided.append(ms)
                s.tell(configs[0], *evaluate(configs[0]))
        print(
            f"{model:5} {evals:3d} evals x {seeds} seeds: every ask mean {statistics.mean(every):5.2f} ms; "
            f"guided mean {statistics.mean(guided):5.2f}, p95 {np.percentile(guided, 95):5.2f}, "
            f"max {max(guided):5.2f} ms"
        )

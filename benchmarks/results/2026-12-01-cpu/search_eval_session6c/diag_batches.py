"""Per seed, under the tuner model at a batch width: the pick, the fastest config the search measured, the
fastest of each batch, and how many (BLOCK_M, BLOCK_N) tiles each batch covered (true ratios over the best).

    PYTHONPATH=src python3 benchmarks/results/2026-12-01-cpu/search_eval_session6c/diag_batches.py \
        benchmarks/landscapes/matmul_h200_4096.json 0 16
"""

from __future__ import annotations

import sys
from typing import Any

from tritune.engine.finals import replay_final_race
from tritune.landscape import Landscape
from tritune.search import Budget
from tritune.search.simulate import replay_space, simulate_one


def main() -> None:
    land = Landscape.load(sys.argv[1])
    noise, width = float(sys.argv[2]), int(sys.argv[3])
    truth = {p.config: p.time_ms or 0.0 for p in land.measured}
    best = min(truth.values())
    space, illegal = replay_space(land)
    budget = Budget.fraction(0.25, len(space.configs()) - len(set(illegal)))
    for seed in range(20):
        info: dict[str, Any] = {}

        def final(landscape: Landscape, observed: Any, info: dict[str, Any] = info, **kw: Any) -> Any:
            info["observed"] = observed
            return replay_final_race(landscape, observed, **kw)

        run = simulate_one(land, "surrogate", budget, seed=seed, noise=noise, final=final, width=width)
        seen = [c for c, _ in info["observed"]]
        batches = [seen[i : i + width] for i in range(0, len(seen), width)]
        per_batch = " ".join(f"{min(truth[c] for c in b) / best:.3f}" for b in batches)
        tiles = " ".join(str(len({(c["BLOCK_M"], c["BLOCK_N"]) for c in b})) for b in batches)
        print(f"seed {seed:2d} pick {run.best_ratio:.3f} best-seen {min(truth[c] for c in seen) / best:.3f} "
              f"per-batch best {per_batch}  tiles per batch {tiles}")  # fmt: skip


if __name__ == "__main__":
    main()

"""Per seed, under the tuner model: the pick, the fastest config the search measured, and the best config of the
final race's field (all as true ratios over the landscape's best). Says whether a miss is the search's or the pick's.

    PYTHONPATH=src python3 benchmarks/results/2026-12-01-cpu/search_eval_session6b/diag.py \
        benchmarks/landscapes/matmul_h200_4096.json 0.02 [probe]
"""

from __future__ import annotations

import sys
from typing import Any

from tritune.engine.finals import replay_final_race
from tritune.landscape import Landscape
from tritune.search import Budget, get
from tritune.search.simulate import replay_space, simulate_one


def main() -> None:
    land = Landscape.load(sys.argv[1])
    noise = float(sys.argv[2])
    probe = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    truth = {p.config: p.time_ms or 0.0 for p in land.measured}
    best = min(truth.values())
    space, illegal = replay_space(land)
    budget = Budget.fraction(0.25, len(space.configs()) - len(set(illegal)))

    def factory(space: Any, *, seed: int, illegal: Any) -> Any:
        return get("surrogate", space, seed=seed, illegal=illegal, probe=probe)

    for seed in range(20):
        info: dict[str, Any] = {}

        def final(landscape: Landscape, observed: Any, info: dict[str, Any] = info, **kw: Any) -> Any:
            info["observed"] = observed
            pick, raced = replay_final_race(landscape, observed, **kw)
            info["raced"] = raced
            return pick, raced

        run = simulate_one(land, factory, budget, seed=seed, noise=noise, final=final)
        seen = min(truth[c] for c, _ in info["observed"]) / best
        field = min([truth[c] for c in info["raced"]] or [float("nan")]) / best
        print(f"seed {seed:2d} pick {run.best_ratio:.3f} best-seen {seen:.3f} best-in-field {field:.3f} "
              f"field {len(info['raced'])}")  # fmt: skip


if __name__ == "__main__":
    main()

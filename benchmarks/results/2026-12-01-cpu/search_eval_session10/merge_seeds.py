"""Rows met and rows worse than random over the seeds of several search_eval JSONs taken together.

    python3 merge_seeds.py recorded_seeds0.json recorded_seeds20.json holdout_noise2_seeds0.json ...

Files of the same rows and strategies on disjoint seed ranges (``search_eval.py --first-seed``) are pooled per
row and strategy (a seed seen twice counts once), and each row is judged as search_eval judges it: median
<= 1.02 and p90 <= 1.05 over all the pooled seeds; worse than random when the median or the p90 is more than
0.005 above random's over the same seeds. Needs PYTHONPATH=src (the simulator's quantile).
"""

import json
import sys

from tritune.search.simulate import quantile

runs: dict[tuple[str, str, float, int], dict[str, dict[int, float]]] = {}
for path in sys.argv[1:]:
    seen: dict[tuple[str, float, str], int] = {}
    for r in json.load(open(path))["results"]:
        label = (r["landscape"], r["noise"], r["strategy"])
        seen[label] = seen.get(label, -1) + 1  # fitted variants share a label: the n-th row of that label
        key = (r["suite"], r["landscape"], r["noise"], seen[label])
        runs.setdefault(key, {}).setdefault(r["strategy"], {}).update(
            (x["seed"], x["best_ratio"]) for x in r["runs"]
        )
tally: dict[tuple[str, str], list] = {}
for key, per in runs.items():
    rand = list(per["random"].values())
    rand_med, rand_p90 = quantile(rand, 0.5), quantile(rand, 0.9)
    for name, by_seed in per.items():
        med, p90 = quantile(list(by_seed.values()), 0.5), quantile(list(by_seed.values()), 0.9)
        assert med is not None and p90 is not None and rand_med is not None and rand_p90 is not None
        worse = name != "random" and (med > rand_med + 0.005 or p90 > rand_p90 + 0.005)
        t = tally.setdefault((key[0], name), [0, 0, 0, len(by_seed), []])
        t[0] += 1
        t[1] += med <= 1.02 and p90 <= 1.05
        t[2] += worse
        if worse:
            t[4].append(f"{key[1]} @{key[2]:.0%}")
for (suite, name), (rows, met, worse, seeds, which) in tally.items():
    print(
        f"{suite:8} {name:36} met {met}/{rows}  worse than random {worse}  ({seeds} seeds) {'; '.join(which)}"
    )

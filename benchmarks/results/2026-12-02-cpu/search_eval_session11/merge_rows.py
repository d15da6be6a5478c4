"""Per-row tables over the seeds of several search_eval JSONs pooled (as merge_seeds.py of session 10 judges).

    PYTHONPATH=src python3 merge_rows.py recorded_seeds0.json.gz recorded_seeds20.json.gz holdout_noise2_seeds0.json.gz ...

Prints, per suite, the rows met and worse than random per strategy (merge_seeds.py's summary), then a markdown
table of median / p90 per row and strategy (MISS: a target missed; WTR: worse than random): every recorded row,
and the held-out rows where the strategies do not all agree on met and WTR. Reads ``.json`` or ``.json.gz``.
"""

import gzip
import json
import sys

from tritune.search.simulate import quantile

runs: dict[tuple[str, str, float, int], dict[str, dict[int, float]]] = {}
order: list[str] = []
for path in sys.argv[1:]:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    seen: dict[tuple[str, float, str], int] = {}
    for r in doc["results"]:
        label = (r["landscape"], r["noise"], r["strategy"])
        seen[label] = seen.get(label, -1) + 1  # fitted variants share a label: the n-th row of that label
        key = (r["suite"], r["landscape"], r["noise"], seen[label])
        if r["strategy"] not in order:
            order.append(r["strategy"])
        runs.setdefault(key, {}).setdefault(r["strategy"], {}).update((x["seed"], x["best_ratio"]) for x in r["runs"])

cells: dict[tuple[str, str, float, int], dict[str, tuple[float, float, bool, bool]]] = {}
tally: dict[tuple[str, str], list] = {}
for key, per in runs.items():
    rand = list(per["random"].values())
    rand_med, rand_p90 = quantile(rand, 0.5), quantile(rand, 0.9)
    for name, by_seed in per.items():
        med, p90 = quantile(list(by_seed.values()), 0.5), quantile(list(by_seed.values()), 0.9)
        assert med is not None and p90 is not None and rand_med is not None and rand_p90 is not None
        met = med <= 1.02 and p90 <= 1.05
        worse = name != "random" and (med > rand_med + 0.005 or p90 > rand_p90 + 0.005)
        cells.setdefault(key, {})[name] = (med, p90, met, worse)
        t = tally.setdefault((key[0], name), [0, 0, 0, len(by_seed), []])
        t[0] += 1
        t[1] += met
        t[2] += worse
        if worse:
            t[4].append(f"{key[1]} @{key[2]:.0%}")
for (suite, name), (rows, met, worse, seeds, which) in tally.items():
    print(f"{suite:8} {name:36} met {met}/{rows}  worse than random {worse}  ({seeds} seeds) {'; '.join(which)}")
for suite in ("dev", "holdout"):
    keys = [k for k in cells if k[0] == suite]
    if not keys:
        continue
    print(f"\n{'Recorded' if suite == 'dev' else 'Held-out'} rows{'' if suite == 'dev' else ' where the strategies differ'}:\n")
    print("| landscape | noise | " + " | ".join(order) + " |")
    print("|---|---|" + "---|" * len(order))
    for k in keys:
        row = cells[k]
        if suite == "holdout" and len({(c[2], c[3]) for n, c in row.items() if n != "random"}) == 1:
            continue
        out = []
        for n in order:
            med, p90, met, worse = row[n]
            out.append(f"{med:.3f} / {p90:.3f}" + ("" if met else " MISS") + (" WTR" if worse else ""))
        print(f"| {k[1]} | {k[2]:.0%} | " + " | ".join(out) + " |")

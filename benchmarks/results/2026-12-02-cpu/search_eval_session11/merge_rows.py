"""Per-row tables over the seeds of several search_eval JSONs pooled (as merge_seeds.py of session 10 judges).

    PYTHONPATH=src python3 merge_rows.py recorded_seeds0.json.gz recorded_seeds20.json.gz holdout_noise2_seeds0.json.gz ...

Prints, per suite, the rows met and worse than random per strategy (merge_seeds.py's summary), then a markdown
table of median / p90 per row and strategy (MISS: a target missed; WTR: worse than random): every recorded row,
and the held-out rows where the strategies do not all agree on met and WTR. Reads ``.json`` or ``.json.gz``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from search_eval import judge_row, pooled_runs, print_pooled_summary

runs, order = pooled_runs(sys.argv[1:])
cells = {key: judge_row(per) for key, per in runs.items()}
print_pooled_summary(runs)
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

"""Per-landscape median / p90 of one strategy across files (same order of rows)."""

import json
import sys

strat = sys.argv[1]
files = sys.argv[2:]
data = [json.load(open(f)) for f in files]
rows = [[r for r in d["results"] if r["strategy"] == strat] for d in data]
rand = [[r for r in d["results"] if r["strategy"] == "random"] for d in data]
print("| landscape | noise | " + " | ".join(f"R={d.get('rounds') or '-'}" for d in data) + " | random (R=-) |")
print("|---|---|" + "---|" * (len(data) + 1))
for i, r0 in enumerate(rows[0]):
    cells = []
    for rs in rows:
        r = rs[i]
        tag = (" **MISS**" if not r["met"] else "") + (" **WTR**" if r["worse_than_random"] else "")
        cells.append(f"{r['median_best_ratio']:.3f} / {r['p90_best_ratio']:.3f}{tag}")
    rr = rand[0][i]
    cells.append(f"{rr['median_best_ratio']:.3f} / {rr['p90_best_ratio']:.3f}")
    print(f"| {r0['landscape']} | {r0['noise']:.0%} | " + " | ".join(cells) + " |")

"""Compare search_eval JSONs: rows met / WTR per strategy, WTR also against a fixed random (the first file's)."""

import json
import sys

files = sys.argv[1:]
data = {f: json.load(open(f)) for f in files}
base = data[files[0]]
baserand = [r for r in base["results"] if r["strategy"] == "random"]
for f, d in data.items():
    out: dict[tuple[str, str], list[int]] = {}
    i = -1
    for r in d["results"]:
        if r["strategy"] == "random":
            i += 1
            continue
        b = baserand[i]
        assert b["landscape"] == r["landscape"] and b["noise"] == r["noise"]
        wf = (r["median_best_ratio"] > b["median_best_ratio"] + 0.005
              or r["p90_best_ratio"] > b["p90_best_ratio"] + 0.005)  # fmt: skip
        s = out.setdefault((r["strategy"], r["suite"]), [0, 0, 0, 0])
        s[0] += 1
        s[1] += r["met"]
        s[2] += r["worse_than_random"]
        s[3] += wf
    summary = {f"{k[0]}/{k[1]}": f"met {v[1]}/{v[0]} WTR {v[2]} (vs base random {v[3]})" for k, v in out.items()}
    print(f.split("/")[-1], d.get("rounds"), summary)

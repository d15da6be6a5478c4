"""Session 18's A/B of the transfer's ``cached_next`` (ALL TIMES SYNTHETIC), from the repository root:

    PYTHONPATH=src python3 benchmarks/results/2026-12-04-cpu/transfer_cached_s18/ab.py ONLY FAMILIES SEEDS NOISE OUT.json

``ONLY``: recorded landscape names containing it ("" for all); the ``per_key`` opening with ``cached_next`` off
(``old``), on (``cached``, the prior's ranking) and on with the model's ranking (``cached_model``).
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, "benchmarks")
sys.path.insert(0, "benchmarks/landscapes")

import transfer_opening as T
from fitted import families  # type: ignore[import-not-found]

import tritune.search.transfer as TR

only, fams_n, seeds, noise, out_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
fams = [f for f in families(4, fams_n, Path("benchmarks/landscapes")) if only in f[0].kernel]
t = time.time()
out = T.run(fams, seeds, noise, ["per_key"], ["old", "cached"])
TR.CACHED_RANK = "model"
out["per_key/cached_model"] = T.run(fams, seeds, noise, ["per_key"], ["cached"])["per_key/cached"]
TR.CACHED_RANK = "prior"
summ = {k: T.summarize(rows) for k, rows in out.items()}
for k, s in summ.items():
    print(k, noise, {a: round(b, 3) for a, b in s.items()})
print(time.time() - t)
Path(out_path).write_text(json.dumps({"summary": summ, "rows": out}) + "\n")

"""Wall time of SurrogateSearch.ask(16) on a 2,000-config space, 400 told measurements with 3% intervals.

    PYTHONPATH=src python3 benchmarks/results/2026-12-01-cpu/search_eval_session5b/ask_time.py [OPTIONS]

OPTIONS are SurrogateSearch keywords, e.g. "cover=0.25". The told times are a SYNTHETIC smooth function
plus noise: only the time of ask() is measured here, not quality.
"""

import math
import sys
import time

import numpy as np

from tritune.outcome import Status
from tritune.search.surrogate import SurrogateSearch
from tritune.space import Space

axes = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [16, 32, 64, 128, 256],
    "BLOCK_K": [16, 32, 64, 128],
    "num_warps": [2, 4, 8, 16],
    "num_stages": [1, 2, 3, 4, 5],
}
space = Space(axes)
print(len(space.configs()), "configs")
options = eval(f"dict({sys.argv[1] if len(sys.argv) > 1 else ''})")
search = SurrogateSearch(space, seed=0, **options)
rng = np.random.default_rng(0)
times = []
while search.evaluations < 400:
    t = time.perf_counter()
    batch = search.ask(16)
    times.append(time.perf_counter() - t)
    for c in batch:
        v = math.log2(c["BLOCK_M"]) + 0.7 * math.log2(c["BLOCK_N"]) - 0.1 * c["num_stages"]
        ms = math.exp((v + 0.3 * rng.normal()) / 5)
        search.tell(c, Status.MEASURED, ms, ci=(ms * 0.97, ms * 1.03))
print("per ask (s):", " ".join(f"{t:.3f}" for t in times))
print(f"ask(16) max {max(times):.3f} s median {sorted(times)[len(times) // 2]:.3f} s over {len(times)} asks")

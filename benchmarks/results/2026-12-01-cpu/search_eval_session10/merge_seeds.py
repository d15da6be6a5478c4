"""Rows met and rows worse than random over the seeds of several search_eval JSONs taken together.

    PYTHONPATH=src python3 merge_seeds.py recorded_seeds0.json recorded_seeds20.json holdout_noise2_seeds0.json ...

Files of the same rows and strategies on disjoint seed ranges (``search_eval.py --first-seed``) are pooled per
row and strategy (a seed seen twice counts once), and each row is judged as search_eval judges it: median
<= 1.02 and p90 <= 1.05 over all the pooled seeds; worse than random when the median or the p90 is more than
0.005 above random's over the same seeds (``benchmarks/search_eval.py``'s ``pooled_runs`` and ``judge_row``,
where this script's own loops went in session 11, unchanged).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from search_eval import pooled_runs, print_pooled_summary

print_pooled_summary(pooled_runs(sys.argv[1:])[0])

"""benchmarks/search_eval.py with two extra names: surrogate-ridge and surrogate-gp (SurrogateSearch's models).

    PYTHONPATH=src python benchmarks/results/2026-11-29-cpu/search_eval_session3/eval_variants.py \
        benchmarks/search_eval.py --synthetic --strategies surrogate,surrogate-ridge --out OUT.json
"""

from __future__ import annotations

import functools
import runpy
import sys

from tritune.search import registry
from tritune.search.surrogate import SurrogateSearch

registry.register("surrogate-ridge", functools.partial(SurrogateSearch, model="ridge"))
registry.register("surrogate-gp", functools.partial(SurrogateSearch, model="gp"))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")

"""CPU checks of the benchmark scripts' own logic (stream judges, pooling, summaries), run with no GPU:

    python -m pytest -q -p no:cacheprovider benchmarks/checks

They are the benchmarks' tests, kept beside them so that tritune's own suite (``tests/``) never imports a
benchmark script. ``.ci/run`` runs them after the suite.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # kernels run in Triton's CPU interpreter
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

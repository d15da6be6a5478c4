"""benchmarks/search_tune.py's space: >= 1,500 legal configs of the wide Hopper matmul, loadable by ``tritune tune``."""

from __future__ import annotations

from pathlib import Path

from tritune.space import check_static
from tritune.workload import load_workloads

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "search_tune.py"


def test_the_benchmark_space_is_large_legal_and_inside_the_wide_one() -> None:
    (w,) = load_workloads(BENCH, "matmul_search")
    legal = [c for c in w.candidates() if check_static(c, w.info, w.caller_kwargs(w.keys[0]), w.space) is None]
    assert len(legal) == 2000
    assert all(c.launch_options().get("num_ctas", 1) == 1 for c in legal)
    (wide,) = load_workloads(BENCH.parents[1] / "examples" / "matmul_tma_wide.py", "matmul_tma_wide")
    assert set(legal) <= set(wide.space.configs())
    assert len(w.keys) == 3

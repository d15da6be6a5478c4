"""search_eval.py's pooling of several runs' JSONs over disjoint seeds, and its row verdicts."""

from __future__ import annotations

import gzip
import json

from search_eval import judge_row, pooled_runs


def _doc(seeds: range, ratios: dict[str, float]) -> dict:
    return {"results": [{"suite": "dev", "landscape": "m", "noise": 0.0, "strategy": s,
                         "runs": [{"seed": k, "best_ratio": r} for k in seeds]} for s, r in ratios.items()]}  # fmt: skip


def test_runs_on_disjoint_seeds_pool_into_one_row_and_are_judged_over_all(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json.gz"
    a.write_text(json.dumps(_doc(range(0, 20), {"random": 1.10, "surrogate": 1.00})))
    with gzip.open(b, "wt") as f:  # the later seeds: the surrogate misses its p90 there
        json.dump(_doc(range(20, 40), {"random": 1.10, "surrogate": 1.08}), f)
    runs, order = pooled_runs([str(a), str(b)])
    assert order == ["random", "surrogate"]
    (key,) = runs
    assert key == ("dev", "m", 0.0, 0) and len(runs[key]["surrogate"]) == 40
    verdict = judge_row(runs[key])
    _med, p90, met, worse = verdict["surrogate"]
    assert not met and p90 == 1.08 and not worse  # missed over 40 seeds, though its first 20 met
    assert verdict["random"][2:] == (False, False)
    only_first, _ = pooled_runs([str(a)])
    assert judge_row(only_first[key])["surrogate"][2] is True

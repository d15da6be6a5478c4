"""widen_eval.py on CPU: the written lists, their widened sub-landscapes and the rings replay on a recorded landscape."""

from __future__ import annotations

from pathlib import Path

from tritune.landscape import Landscape

ROOT = Path(__file__).resolve().parents[2]
LAND = ROOT / "benchmarks" / "landscapes" / "matmul_h100_4096_a.json"


def test_a_written_list_is_widened_within_the_recorded_configs_with_each_neighbours_origins() -> None:
    from widen_eval import widened_landscape

    land = Landscape.load(LAND)
    sub, written, origins = widened_landscape(land, 4, 1, seed=3)
    again = widened_landscape(land, 4, 1, seed=3)
    assert [p.config for p in again[0].points] == [p.config for p in sub.points]  # seeded
    recorded = set(land.configs)
    assert len(written) == 4 and set(written) <= set(sub.configs) <= recorded
    assert set(origins) == set(sub.configs) - set(written)  # every neighbour kept has its origins
    assert all(o and set(o) <= set(written) for o in origins.values())  # one step: its origins are written ones


def test_rings_times_part_of_the_widened_list_and_its_pick_is_judged_against_the_lists_best() -> None:
    from widen_eval import evaluate

    land = Landscape.load(LAND)
    r = evaluate(land, size=4, steps=1, seeds=3, noise=0.0, width=16)
    for run in r["runs"]:
        assert 0 < run["timed"] <= run["widened"]
        assert run["pick_over_best"] >= 1.0 and run["written_over_best"] >= 1.0
    assert r["timed_share_worst"] <= 1.0 and r["pick_worst"] >= r["pick_median"] >= 1.0
    wide = evaluate(land, size=4, steps=1, seeds=3, noise=0.0, width=16, margin=100.0)  # admits everything
    assert all(x["timed"] == x["widened"] and x["pick_over_best"] == 1.0 for x in wide["runs"])


def test_top_draws_the_written_list_from_the_fastest_configs_and_one_keeps_the_plain_draw() -> None:
    from widen_eval import widened_landscape

    land = Landscape.load(LAND)
    times = sorted(p.time_ms for p in land.measured if p.time_ms is not None)
    cut = times[round(0.25 * len(times)) - 1]
    _, written, _ = widened_landscape(land, 4, 1, seed=5, top=0.25)
    assert all((land.lookup(c).time_ms or 0.0) <= cut for c in written)  # type: ignore[union-attr]
    _, plain, _ = widened_landscape(land, 4, 1, seed=5)
    assert plain == widened_landscape(land, 4, 1, seed=5, top=1.0)[1]

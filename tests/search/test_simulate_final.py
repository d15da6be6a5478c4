"""``tritune simulate``'s tuner model: tuning's driver, then the tuner's final race picks.

Landscapes here are FAKE (analytic times, not GPU data); one test uses a FAKE ``final`` callable that
records what it is handed, to test the plumbing.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tritune.bench import ReplayTimer
from tritune.cli.main import main
from tritune.config import Config
from tritune.engine.finals import FINAL_LIMIT, FINAL_WITHIN, final_field, replay_final_race
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import Budget, get
from tritune.search.simulate import simulate, simulate_one


def _cfg(b: int, w: int = 0) -> Config:
    return Config({"B": b, "W": w})


def _grid() -> Landscape:
    """FAKE: 64 configs; (4, 2) is 1.0, its neighbours 1.01-1.03 (ties at 2% noise), the rest slower."""
    points = []
    for b, w in itertools.product(range(8), range(8)):
        d = abs(b - 4) + abs(w - 2)
        points.append(LandscapePoint(_cfg(b, w), Status.MEASURED, 1.0 + 0.01 * d + 0.2 * max(0, d - 3)))
    return Landscape.from_points("fake_grid", "FAKE", {}, points)


def _pair() -> Landscape:
    """FAKE: A = 1.00 ms, B = 1.06 ms, C = 1.50 ms."""
    times = {_cfg(0): 1.0, _cfg(1): 1.06, _cfg(2): 1.5}
    return Landscape.from_points("fake_pair", "FAKE", {}, [LandscapePoint(c, Status.MEASURED, t)
                                                            for c, t in times.items()])  # fmt: skip


def test_a_look_keeps_one_offset_for_all_its_samples() -> None:
    land = _pair()
    timer = ReplayTimer(land, noise=0.0, look_noise=0.05, seed=3)
    looks = [timer.measure_config(_cfg(0), 0.01) for _ in range(40)]
    for m in looks:  # no per-sample noise: every sample of one look is the same, off by the look's draw
        assert len(set(m.samples)) == 1
    medians = [m.median_ms for m in looks]
    assert len(set(medians)) == 40 and max(medians) / min(medians) > 1.05
    assert abs(statistics.median(medians) - 1.0) < 0.03  # the offsets are centred on the recorded time
    with pytest.raises(ValueError, match="look_noise"):
        ReplayTimer(land, look_noise=-0.1)


def test_final_field_is_the_tuners_rule() -> None:
    medians = [(_cfg(i), t) for i, t in enumerate([1.05, 1.0, 1.02, 1.029, 1.01, 1.031, 1.025])]
    assert FINAL_WITHIN == 0.03 and FINAL_LIMIT == 4
    # within 3% of the smallest, fastest first, at most 4
    assert final_field(medians, _cfg(1)) == [_cfg(1), _cfg(4), _cfg(2), _cfg(6)]
    # the race's winner always races, in the last place when it is not among the fastest
    assert final_field(medians, _cfg(0)) == [_cfg(1), _cfg(4), _cfg(2), _cfg(0)]
    assert final_field([(_cfg(0), 1.0), (_cfg(1), 1.1)], _cfg(0)) == []  # nobody within 3%: no final race
    assert final_field([(_cfg(0), 1.0)], _cfg(0)) == []


def test_replayed_final_race_undoes_a_lucky_draw() -> None:
    land = _pair()
    observed = [(_cfg(1), 0.99), (_cfg(0), 1.01), (_cfg(2), 1.49)]  # B's one draw was lucky: it looks fastest
    pick, raced = replay_final_race(land, observed, noise=0.0, seed=0)
    assert raced == [_cfg(1), _cfg(0)] and pick == _cfg(0)  # C is 50% off: not raced
    picks = [replay_final_race(land, observed, noise=0.02, seed=s)[0] for s in range(20)]
    assert picks.count(_cfg(0)) >= 18  # a 6% gap is told apart through 2% noise per look
    # outside the 3% field the race cannot help: the lucky draw stands
    assert replay_final_race(land, [(_cfg(1), 0.9), (_cfg(0), 1.01)], noise=0.02, seed=0) == (_cfg(1), [])


def test_the_search_spends_the_whole_budget_without_a_reserve_and_the_race_is_free() -> None:
    land = _grid()
    seen: list[list[tuple[Config, float]]] = []

    def final(landscape: Landscape, observed: Any, **kw: Any) -> Any:
        seen.append(list(observed))
        return replay_final_race(landscape, observed, **kw)

    for seed in range(3):
        run = simulate_one(land, "surrogate", Budget(evaluations=20), seed=seed, noise=0.02, final=final)
        assert run.evaluations == 20 and len({c for c, _ in seen[-1]}) == 20  # 20 configs, none re-measured
        assert run.final is not None and len(run.final) <= FINAL_LIMIT
        assert not run.final or run.best_config in run.final
        old = simulate_one(land, "surrogate", Budget(evaluations=20), seed=seed, noise=0.02)
        assert old.evaluations == 20 and old.final is None
    # the probe strategy keeps the driver's reserve (15% of 20 = 3) for its finals, as in tuning
    calls: list[tuple[int, int]] = []

    def probe1(space: Any, *, seed: int, illegal: Any) -> Any:
        s = get("surrogate", space, seed=seed, illegal=illegal, probe=1)
        finals = s.finals

        def spy(reserve: int) -> int:
            calls.append((reserve, s.evaluations))
            return finals(reserve)

        s.finals = spy  # type: ignore[method-assign]
        return s

    probe = simulate_one(land, probe1, Budget(evaluations=20), seed=0, noise=0.0, final=final)
    assert calls == [(3, 17)] and probe.evaluations == 20 and len({c for c, _ in seen[-1]}) == 20


def test_the_pick_is_the_final_races_not_the_strategys() -> None:
    """FAKE final race: it records what it is handed and picks the slowest config it was shown."""
    land = _grid()
    handed: list[Any] = []

    def fake_final(landscape: Landscape, observed: list[tuple[Config, float]], *, noise: float, seed: int) -> Any:
        handed.append((landscape, list(observed), noise, seed))
        slowest = max(observed, key=lambda t: t[1])[0]
        return slowest, [slowest]

    run = simulate_one(land, "random", Budget(evaluations=12), seed=5, noise=0.01, final=fake_final)
    (landscape, observed, noise, seed), = handed
    assert landscape is land and noise == 0.01 and seed == 5 and len(observed) == 12
    truth = {p.config: p.time_ms for p in land.points}
    slowest = max(observed, key=lambda t: t[1])[0]
    assert run.best_config == slowest.id and run.best_ratio == pytest.approx(truth[slowest] / 1.0)
    assert run.final == (slowest.id,) and run.evaluations == 12
    # every observed time is a noisy draw of the recorded one, 1% noise
    assert all(abs(t / truth[c] - 1) < 0.06 for c, t in observed)


def test_simulate_and_the_cli_name_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    land = _grid()
    sim = simulate(land, "random", 0.25, 3, noise=0.02, final=replay_final_race)
    assert sim.model == "tuner" and sim.to_json()["model"] == "tuner"
    assert simulate(land, "random", 0.25, 1).model == "reserve"
    path = tmp_path / "land.json"
    land.write(path)
    out = tmp_path / "sim.json"
    assert main(["simulate", str(path), "--seeds", "2", "--noise", "0.02", "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["model"] == "tuner" and all("final" in r for r in doc["runs"])
    assert "model tuner" in capsys.readouterr().out
    assert main(["simulate", str(path), "--seeds", "2", "--noise", "0.02", "--quiet", "--model", "reserve",
                 "--json", str(out)]) == 0  # fmt: skip
    doc = json.loads(out.read_text())
    assert doc["model"] == "reserve" and all("final" not in r for r in doc["runs"])

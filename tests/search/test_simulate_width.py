"""``tritune simulate --width``: batches as wide as the compile pool, proposed before any of them is measured.

Landscapes here are FAKE (analytic times, not GPU data). ``_Spy`` is a FAKE strategy (random search that
logs every ask and tell) to test the plumbing: in what order the simulator asks and tells.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.engine.finals import replay_final_race
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import Budget
from tritune.search.random_search import RandomSearch
from tritune.search.simulate import simulate, simulate_one


def _grid() -> Landscape:
    """FAKE: 64 configs, (4, 2) fastest, times growing with the grid distance from it."""
    points = [LandscapePoint(Config({"B": b, "W": w}), Status.MEASURED, 1.0 + 0.05 * (abs(b - 4) + abs(w - 2)))
              for b, w in itertools.product(range(8), range(8))]  # fmt: skip
    return Landscape.from_points("fake_grid", "FAKE", {}, points)


class _Spy(RandomSearch):
    """FAKE strategy: random search that logs ``("ask", n configs returned)`` and ``("tell", config id)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[tuple[str, Any]] = []

    def ask(self, n: int = 1) -> list[Config]:
        out = super().ask(n)
        self.events.append(("ask", len(out)))
        return out

    def tell(self, config: Config, status: Status, time_ms: float | None = None, **kw: Any) -> None:
        self.events.append(("tell", config.id))
        super().tell(config, status, time_ms, **kw)


def _spy_run(width: int, *, noise: float = 0.0, final: Any = replay_final_race) -> tuple[_Spy, Any]:
    made: list[_Spy] = []

    def factory(space: Any, *, seed: int, illegal: Any) -> _Spy:
        made.append(_Spy(space, seed=seed, illegal=illegal))
        return made[0]

    run = simulate_one(_grid(), factory, Budget(evaluations=16), seed=0, noise=noise, final=final, width=width)
    return made[0], run


def _batches(events: list[tuple[str, Any]]) -> list[tuple[int, int]]:
    """Per ask: (configs it returned, tells between it and the next ask)."""
    out: list[tuple[int, int]] = []
    for kind, value in events:
        if kind == "ask":
            out.append((value, 0))
        else:
            assert out, "a tell before any ask"
            out[-1] = (out[-1][0], out[-1][1] + 1)
    return out


@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_width_4_asks_4_configs_before_any_outcome_is_told(noise: float) -> None:
    spy, run = _spy_run(4, noise=noise)
    # the first 4 configs are all proposed before the first tell, and so is every later batch
    assert spy.events[0] == ("ask", 4) and all(kind == "tell" for kind, _ in spy.events[1:5])
    assert _batches(spy.events) == [(4, 4)] * 4
    assert run.evaluations == 16


def test_width_1_tells_each_config_before_the_next_ask() -> None:
    spy, run = _spy_run(1)
    assert _batches(spy.events) == [(1, 1)] * 16 and run.evaluations == 16


def test_the_last_batch_is_cut_to_the_budget_and_the_reserve_model_batches_too() -> None:
    spy, run = _spy_run(6)
    assert _batches(spy.events) == [(6, 6), (6, 6), (4, 4)] and run.evaluations == 16
    spy, run = _spy_run(4, final=None)  # the reserve model, no noise: no reserve, the search alone
    assert _batches(spy.events) == [(4, 4)] * 4 and run.evaluations == 16


def test_width_changes_the_search_and_is_recorded() -> None:
    land = _grid()
    one = simulate(land, "surrogate", 0.25, 2, noise=0.01, final=replay_final_race)
    wide = simulate(land, "surrogate", 0.25, 2, noise=0.01, final=replay_final_race, width=16)
    assert one.width == 1 and wide.width == 16 and wide.to_json()["width"] == 16
    assert [r.evaluations for r in wide.runs] == [16, 16]
    with pytest.raises(SearchError, match="width=0"):
        simulate(land, "random", 0.25, 1, width=0)


def test_cli_width(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "land.json"
    _grid().write(path)
    out = tmp_path / "sim.json"
    assert main(["simulate", str(path), "--seeds", "1", "--quiet", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["width"] == 16  # the default: the H200 host's compile pool
    assert "width 16" in capsys.readouterr().out
    assert main(["simulate", str(path), "--seeds", "1", "--quiet", "--width", "1", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["width"] == 1
    capsys.readouterr()
    assert main(["simulate", str(path), "--seeds", "1", "--width", "0"]) == 2
    assert "--width 0 must be at least 1" in capsys.readouterr().err


def test_rounds_narrow_the_simulated_batches_as_tuning_does_and_the_cli_defaults_to_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made: list[_Spy] = []

    def factory(space: Any, *, seed: int, illegal: Any) -> _Spy:
        made.append(_Spy(space, seed=seed, illegal=illegal))
        return made[-1]

    simulate_one(_grid(), factory, Budget(evaluations=16), seed=0, final=replay_final_race, width=16, rounds=8)
    assert _batches(made[-1].events) == [(2, 2)] * 8  # 16 at width 16 is one round < 8: ceil(16 / 8) = 2
    path = tmp_path / "land.json"
    _grid().write(path)
    out = tmp_path / "sim.json"
    assert main(["simulate", str(path), "--seeds", "1", "--quiet", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["rounds"] == 16  # tuning's ROUNDS, as for a budget given
    assert "rounds 16" in capsys.readouterr().out
    assert main(["simulate", str(path), "--seeds", "1", "--quiet", "--rounds", "0", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["rounds"] is None
    capsys.readouterr()
    assert main(["simulate", str(path), "--seeds", "1", "--rounds", "-1"]) == 2
    assert "--rounds -1 must be at least 0" in capsys.readouterr().err

"""The ask/tell base, Budget, run_search and the registry: misuse gets a clear SearchError."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tritune.config import Config
from tritune.errors import NoLegalConfigError, SearchError
from tritune.outcome import Status
from tritune.search import Budget, RandomSearch, get, names, register, resolve, run_search, unregister
from tritune.search.grid import Grid
from tritune.space import Constraint, Space, pow2
from tritune.testing.strategy_contract import contract_space, fake_evaluate


def test_budget_values() -> None:
    assert Budget.fraction(0.25, 200).evaluations == 50
    assert Budget.fraction(0.25, 201).evaluations == 51
    assert Budget.fraction(0.001, 10).evaluations == 1
    b = Budget(evaluations=3, seconds=10.0)
    assert not b.exhausted(2, 1.0) and b.exhausted(3, 1.0) and b.exhausted(0, 10.0)
    for bad in ({}, {"evaluations": 0}, {"seconds": -1.0}, {"seconds": float("inf")}):
        with pytest.raises(SearchError):
            Budget(**bad)
    with pytest.raises(SearchError, match="fraction"):
        Budget.fraction(1.5, 10)


def test_tell_rules() -> None:
    s = RandomSearch(contract_space(), seed=0)
    (c,) = s.ask()
    with pytest.raises(SearchError, match="never asked"):
        s.tell(Config({"BLOCK": 7}), Status.MEASURED, 1.0)
    with pytest.raises(SearchError, match="without a time"):
        s.tell(c, Status.MEASURED, None)
    with pytest.raises(SearchError, match="never as inf"):
        s.tell(c, Status.MEASURED, float("inf"))
    with pytest.raises(SearchError, match="only 'measured' carries a time"):
        s.tell(c, Status.COMPILE_FAILED, 1.0)
    s.tell(c, Status.COMPILE_FAILED, None)
    assert s.best() is None and s.evaluations == 1
    with pytest.raises(SearchError, match="already told"):
        s.tell(c, Status.MEASURED, 1.0)
    with pytest.raises(SearchError, match="positive integer"):
        s.ask(0)


def test_every_config_screened_out_is_an_error() -> None:
    space = Space({"BLOCK": [64, 128]})
    with pytest.raises(NoLegalConfigError, match="no legal config"):
        RandomSearch(space, illegal=space.configs())


def test_time_budget_uses_the_clock() -> None:
    ticks = iter(range(100))
    result = run_search(
        RandomSearch(contract_space()), fake_evaluate, Budget(seconds=5), clock=lambda: float(next(ticks))
    )
    assert result.stopped == "budget"
    assert result.evaluations == 4  # the clock advances one tick per check: t=1..4 < 5, then 5


def test_run_search_validates_the_evaluator_and_strategy() -> None:
    with pytest.raises(SearchError, match=r"must return \(Status, time_ms or None\)"):
        run_search(RandomSearch(contract_space()), lambda c: 1.0, Budget(evaluations=2))  # type: ignore[arg-type,return-value]
    with pytest.raises(SearchError, match="is not a search strategy"):
        run_search(object(), fake_evaluate, Budget(evaluations=2))  # type: ignore[arg-type]


def test_registry_register_get_resolve() -> None:
    assert {"exhaustive", "random", "neighbourhood", "surrogate", "tpe"} <= set(names())
    with pytest.raises(SearchError, match="unknown search strategy 'nope'; registered: "):
        get("nope", contract_space())
    with pytest.raises(SearchError, match="already registered"):
        register("random", RandomSearch)
    register("my_random", RandomSearch)
    try:
        assert isinstance(get("my_random", contract_space(), seed=3), RandomSearch)
    finally:
        unregister("my_random")
    own = RandomSearch(contract_space())
    assert resolve(own, contract_space()) is own
    with pytest.raises(SearchError, match="not a search strategy"):
        resolve(42, contract_space())  # type: ignore[arg-type]


def test_tpe_without_optuna_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna now raises ImportError
    with pytest.raises(SearchError, match=r"tritune\[search\]"):
        get("tpe", contract_space())


def test_tpe_is_quiet(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("optuna", reason="the 'tpe' strategy needs the search extra (optuna)")
    s = get("tpe", contract_space(), seed=0)
    run_search(s, fake_evaluate, Budget(evaluations=12))
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert not [r for r in caplog.records if r.name.startswith("optuna")]


def test_grid_steps_are_x2_and_jump_over_gaps() -> None:
    space = Space(
        {"BLOCK": pow2(64, 512), "num_stages": [1, 2, 3]},
        constraints=[Constraint("no_256", lambda c: c["BLOCK"] != 256)],
    )
    cands = space.configs()
    grid = Grid(cands)
    at = cands.index(Config({"BLOCK": 128}, num_stages=2))
    got = sorted(cands[j].id for j in grid.neighbours(at))
    assert got == sorted(
        [
            "BLOCK=64,num_warps=4,num_stages=2",  # /2
            "BLOCK=512,num_warps=4,num_stages=2",  # x2 is illegal (256): the next legal value
            "BLOCK=128,num_warps=4,num_stages=1",
            "BLOCK=128,num_warps=4,num_stages=3",
        ]
    )


def test_neighbourhood_climbs_to_the_optimum_of_a_bowl() -> None:
    space = Space({"A": pow2(1, 256), "B": pow2(1, 256), "num_stages": [1, 2, 3, 4, 5]})

    def bowl(c: Config) -> tuple[Status, Any]:
        a, b = c["A"].bit_length(), c["B"].bit_length()
        return Status.MEASURED, 1.0 + (a - 6) ** 2 + (b - 3) ** 2 + (c.num_stages - 4) ** 2

    result = run_search(get("neighbourhood", space, seed=1), bowl, Budget(evaluations=40))
    assert result.best is not None and result.best.time_ms == 1.0  # 40 of 405 configs suffice to climb

"""Every registered strategy passes the strategy contract (tritune.testing.strategy_contract)."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from tritune.search import registry
from tritune.search.transfer import KeyResults
from tritune.space import Space
from tritune.testing.strategy_contract import CHECKS, SCREENED_OUT, contract_space, fake_evaluate


def _factory(name: str) -> Any:
    if name == "tpe":
        pytest.importorskip("optuna", reason="the 'tpe' strategy needs the search extra (optuna)")
    if name == "transfer":  # transfer needs tuned neighbours: one FAKE neighbour key, from the fake landscape
        neighbour = KeyResults({"n": 2}, {c: fake_evaluate(c)[1] for c in contract_space().configs()})
        return functools.partial(registry.get, name, key={"n": 1}, neighbours=[neighbour])
    return functools.partial(registry.get, name)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", registry.names())
def test_contract(name: str, check: Any) -> None:
    check(_factory(name))


def test_contract_catches_a_strategy_that_breaks_it() -> None:
    """The suite is not vacuous: a strategy that repeats itself and ignores screening fails it."""

    class Careless:  # a user's own strategy object, implementing the protocol badly on purpose
        def __init__(self, space: Space, *, seed: int = 0, illegal: Any = ()) -> None:
            self.configs = space.configs()
            self.i = 0
            self.best_obs: Any = None

        def ask(self, n: int = 1) -> list[Any]:
            out = [self.configs[self.i % len(self.configs)] for _ in range(n)]
            self.i += 1
            return out

        def tell(self, config: Any, status: Any, time_ms: Any = None) -> None:
            pass

        def best(self) -> Any:
            return self.best_obs

        def done(self) -> bool:
            return False

    failures = 0
    for check in CHECKS:
        try:
            check(Careless)
        except Exception:
            failures += 1
    assert failures >= 4


def test_contract_fixture_has_illegal_and_failing_configs() -> None:
    space = contract_space()
    assert len(space.configs()) < space.size, "the constraint must remove some combinations"
    assert all(c in space for c in SCREENED_OUT)
    statuses = {fake_evaluate(c)[0].value for c in space.configs()}
    assert statuses == {"measured", "compile_failed"}

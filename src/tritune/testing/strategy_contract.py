"""The contract every search strategy must pass, as plain checks you can run on your own strategy.

Each check takes a factory ``factory(space, *, seed, illegal) -> SearchStrategy`` (a registered name's
factory, a Strategy subclass, or your own) and raises ``AssertionError`` naming what broke::

    from tritune.testing.strategy_contract import CHECKS

    @pytest.mark.parametrize("check", CHECKS)
    def test_my_strategy(check):
        check(MyStrategy)

The checks run on a small FAKE landscape (an analytic time function, not a GPU measurement) that has a
constraint, configs screened out as illegal, and configs that fail to compile.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

from tritune.config import Config
from tritune.outcome import Status
from tritune.search.base import Budget, SearchStrategy
from tritune.search.driver import run_search
from tritune.space import Constraint, Space

Factory = Callable[..., SearchStrategy]


def contract_space() -> Space:
    """48 combinations, of which a constraint removes some: BLOCK x num_warps x num_stages."""
    return Space(
        {"BLOCK": [32, 64, 128, 256], "num_warps": [1, 2, 4, 8], "num_stages": [1, 2, 3]},
        constraints=[Constraint("block_covers_warps", lambda c: c["BLOCK"] >= 16 * c["num_warps"])],
    )


#: Configs that "screening" rejected: a strategy must never propose them.
SCREENED_OUT = (
    Config({"BLOCK": 256}, num_warps=1, num_stages=3),
    Config({"BLOCK": 128}, num_warps=4, num_stages=2),
)


def _hash01(config: Config) -> float:
    return int(hashlib.sha256(config.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def fake_time_ms(config: Config) -> float:
    """FAKE timing: a smooth bowl over log2 sizes with per-config roughness; fastest near BLOCK=128, 4 warps."""
    b, w, s = math.log2(config["BLOCK"]), math.log2(config.num_warps), config.num_stages
    return round(
        1.0 + 0.3 * (b - 7) ** 2 + 0.2 * (w - 2) ** 2 + 0.1 * (s - 2) ** 2 + 0.05 * _hash01(config), 6
    )


def fake_evaluate(config: Config) -> tuple[Status, float | None]:
    """FAKE evaluator: every config whose roughness hash is under 0.15 fails to compile."""
    if _hash01(config) < 0.15:
        return Status.COMPILE_FAILED, None
    return Status.MEASURED, fake_time_ms(config)


def legal(space: Space) -> list[Config]:
    return [c for c in space.configs() if c not in SCREENED_OUT]


def _drive(factory: Factory, *, seed: int = 0, budget: int | None = None, batch: int = 1) -> Any:
    space = contract_space()
    strategy = factory(space, seed=seed, illegal=SCREENED_OUT)
    n = budget if budget is not None else len(legal(space))
    return strategy, run_search(strategy, fake_evaluate, Budget(evaluations=n), batch=batch)


def check_budget_respected(factory: Factory) -> None:
    """Exactly ``budget`` evaluations when the space is larger; ``ask(n)`` never returns more than n."""
    _, result = _drive(factory, budget=7)
    assert result.evaluations == 7, f"budget 7 but {result.evaluations} evaluations"
    assert result.stopped == "budget"
    strategy = factory(contract_space(), seed=0, illegal=SCREENED_OUT)
    asked = strategy.ask(3)
    assert 1 <= len(asked) <= 3, f"ask(3) returned {len(asked)} configs"


def check_no_duplicates(factory: Factory) -> None:
    """Driven to exhaustion in batches, every legal config is asked exactly once."""
    space = contract_space()
    strategy = factory(space, seed=0, illegal=SCREENED_OUT)
    asked: list[Config] = []
    for _ in range(len(legal(space)) + 2):  # bounded, so a strategy that never stops fails instead of hanging
        if strategy.done():
            break
        batch = strategy.ask(3)
        if not batch:
            break
        assert len(batch) <= 3, f"ask(3) returned {len(batch)} configs"
        asked.extend(batch)
        for c in batch:
            strategy.tell(c, *fake_evaluate(c))
    else:
        raise AssertionError("the strategy was not done after every legal config was asked")
    ids = [c.id for c in asked]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"configs asked twice: {dupes}"
    assert set(asked) == set(legal(space)), "exhausting the strategy did not cover every legal config once"
    assert strategy.ask(1) == [], "an exhausted strategy still proposed a config"


def check_never_illegal(factory: Factory) -> None:
    """No proposal breaks a constraint or is one of the configs screening rejected."""
    space = contract_space()
    _strategy, result = _drive(factory, seed=3)
    for obs in result.history:
        assert obs.config in space, f"proposed {obs.config.id}, which breaks a constraint"
        assert obs.config not in SCREENED_OUT, f"proposed {obs.config.id}, which screening rejected"


def check_deterministic(factory: Factory) -> None:
    """Two runs with the same seed ask the same configs in the same order."""
    runs = [[o.config.id for o in _drive(factory, seed=11, budget=15)[1].history] for _ in range(2)]
    assert runs[0] == runs[1], "the same seed gave two different search orders"


def check_finds_best_when_exhausted(factory: Factory) -> None:
    """With a budget of the whole legal space, the best found is the true best."""
    space = contract_space()
    _, result = _drive(factory, seed=5)
    outcomes = {c: fake_evaluate(c) for c in legal(space)}
    true_best = min((t, c.id) for c, (s, t) in outcomes.items() if s is Status.MEASURED and t is not None)
    assert result.best is not None, "nothing reported as best after exhausting the space"
    assert result.best.config.id == true_best[1], f"best {result.best.config.id}, true best {true_best[1]}"


def check_failures_never_best(factory: Factory) -> None:
    """Failures told back do not crash the strategy and are never reported as best."""
    space = contract_space()
    strategy = factory(space, seed=2, illegal=SCREENED_OUT)

    def all_fail_but_slow(config: Config) -> tuple[Status, float | None]:
        status, t = fake_evaluate(config)
        if status is Status.MEASURED and t is not None and t < 1.5:
            return Status.LAUNCH_FAILED, None  # the fast ones fail: best must be a measured slow one
        return status, t

    result = run_search(strategy, all_fail_but_slow, Budget(evaluations=len(legal(space))))
    best = strategy.best()
    assert best is not None and best.status is Status.MEASURED and best.time_ms is not None
    assert best.time_ms >= 1.5, f"a failed config {best.config.id} was reported as best"
    assert result.best == best


def check_wide_batches_and_resume(factory: Factory) -> None:
    """A batch as wide as a compile pool has distinct legal configs; stored results are never re-proposed.

    The resume half applies to :class:`~tritune.search.base.Strategy` subclasses (which have
    ``preload``); a bare ask/tell object is checked on its batches only.
    """
    space = contract_space()
    strategy = factory(space, seed=0, illegal=SCREENED_OUT)
    stored = [c for c in legal(space)[::5]]
    preload = getattr(strategy, "preload", None)
    if preload is not None:
        for c in stored:
            status, t = fake_evaluate(c)
            preload(c, status, t)
    seen: list[Config] = []
    while True:
        batch = strategy.ask(16)
        if not batch:
            break
        assert len(batch) <= 16 and len(set(batch)) == len(batch), "a batch repeats a config"
        for c in batch:
            assert c in space and c not in SCREENED_OUT, f"batch proposed illegal {c.id}"
            seen.append(c)
            strategy.tell(c, *fake_evaluate(c))
    assert len(seen) == len(set(seen)), "a config was proposed in two batches"
    if preload is not None:
        assert not set(seen) & set(stored), "a stored (preloaded) config was proposed again"
        assert len(seen) + len(stored) == len(legal(space)), (
            "the space was not exhausted around the stored results"
        )


CHECKS: tuple[Callable[[Factory], None], ...] = (
    check_budget_respected,
    check_no_duplicates,
    check_never_illegal,
    check_deterministic,
    check_finds_best_when_exhausted,
    check_failures_never_best,
    check_wide_batches_and_resume,
)

"""Replay a recorded landscape to measure a strategy with no GPU: ``simulate(landscape, "random", 0.25, 20)``.

The space is the landscape's own configs. Configs recorded ``illegal`` are the ones screening rejects
before any search, so they are handed to the strategy as known-illegal and are not counted in the
budget's base; every other non-measured status (``compile_failed``, ``launch_failed``, ``incorrect``...)
is told back as that failure when the strategy proposes it. Optional multiplicative noise
(``time * exp(noise * z)``, ``z ~ N(0, 1)``, seeded per run) lets strategies meet realistic measurements;
the best ratio is always judged on the recorded (noise-free) time of the config finally picked.

**Batches.** ``width`` is the compile pool's width, as in tuning (``SearchDriver(width=...)``, the pool of
``tritune tune --jobs``, by default one worker per core: 16 on the H200 host the landscapes were recorded
on). Each batch of ``width`` configs is proposed before any of them is measured, then all are measured and
told; ``width=1`` asks one config at a time. ``rounds`` (tuner model) is the
driver's adaptive width (:class:`~tritune.search.SearchDriver`): a budget that allows fewer than ``rounds``
batches of ``width`` asks batches of ``ceil(budget / rounds)``, as tuning does for a budget given explicitly
(``tritune simulate`` and ``benchmarks/search_eval.py`` pass :data:`~tritune.search.driver.ROUNDS` by default).

Two models of what happens after the search's evaluations:

* **the tuner's** (``final=`` a final race, what ``tritune simulate`` and ``benchmarks/search_eval.py`` pass:
  :func:`tritune.engine.finals.replay_final_race`): the search runs through the tuning driver
  (:class:`~tritune.search.SearchDriver`), so the budget is held back for :meth:`Strategy.finals` only when
  the strategy wants finals, exactly as in tuning; then the tuner's final race re-times the configs within
  3% of the fastest seen (at most 4) on a replay timer with the same noise per look, at no evaluation
  cost, and the pick is that race's winner (not the strategy's :meth:`best`, which tuning does not use).
* **the reserve model** (``final=None``, ``search_eval.py --model reserve``): with noise, a share of the budget is
  kept back and re-measures the strategy's contenders (:func:`_race_finalists`), counted as evaluations,
  and the pick is the strategy's. Conservative: tuning spends no evaluation on re-measuring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tritune.config import Config
from tritune.errors import SearchError
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search.base import Budget, Observation, SearchStrategy, Strategy
from tritune.search.driver import CONFIRM, SearchDriver, finals_reserve, run_search
from tritune.search.registry import get
from tritune.space import Space

#: Within this ratio of the landscape's best counts as found (``evals_to_2pct``).
WITHIN = 1.02

# The share of the budget a noisy simulation keeps to re-measure the finalists (see :func:`simulate_one`) is
# :data:`tritune.search.driver.CONFIRM`, the tuning driver's reserve for a strategy's finals too.


class ReplayEvaluator:
    """An evaluator that looks each config up in a landscape, with optional seeded multiplicative noise."""

    def __init__(
        self, landscape: Landscape, *, noise: float = 0.0, seed: int = 0, report_ci: bool = True
    ) -> None:
        if not (noise >= 0 and math.isfinite(noise)):
            raise SearchError(f"noise={noise!r} must be a finite relative spread >= 0")
        self.landscape = landscape
        self.noise = float(noise)
        self.report_ci = bool(report_ci)
        self._rng = np.random.default_rng([int(seed), 0x5EA])

    def __call__(self, config: Config) -> tuple[Status, float | None, tuple[float, float] | None]:
        point = self.landscape.lookup(config)
        if point is None:
            raise SearchError(
                f"{config.id} is not in the landscape of {self.landscape.kernel!r}; it cannot be replayed"
            )
        if point.status is not Status.MEASURED:
            return point.status, None, None
        if point.time_ms is None:
            return Status.ERROR, None, None
        if self.noise == 0.0:
            return Status.MEASURED, point.time_ms, None
        t = point.time_ms * math.exp(self.noise * float(self._rng.standard_normal()))
        # The 95% interval a real measurement with this spread would report (a Measurement's ci_*_ms).
        half = math.exp(1.96 * self.noise)
        return Status.MEASURED, t, ((t / half, t * half) if self.report_ci else None)


def replay_space(landscape: Landscape) -> tuple[Space, list[Config]]:
    """The landscape's configs as a Space, and those recorded ``illegal`` (what screening removes)."""
    if not landscape.measured:
        raise SearchError(f"landscape of {landscape.kernel!r} has no measured config; nothing to search for")
    space = Space.from_configs(landscape.configs)
    illegal = [p.config for p in landscape.points if p.status is Status.ILLEGAL]
    return space, illegal


@dataclass(frozen=True)
class SimulatedRun:
    """One seed's outcome: best recorded time found / landscape best, evaluations used, and when it got within 2%."""

    seed: int
    best_ratio: float | None
    evaluations: int
    evals_to_2pct: int | None
    best_config: str | None = None
    #: The tuner model's final race: the configs it raced (None under the reserve model).
    final: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "seed": self.seed,
            "best_ratio": self.best_ratio,
            "evaluations": self.evaluations,
            "evals_to_2pct": self.evals_to_2pct,
            "best_config": self.best_config,
        }
        if self.final is not None:
            d["final"] = list(self.final)
        return d


def quantile(values: Sequence[float | None], q: float) -> float | None:
    """Linear-interpolated quantile where ``None`` (nothing found) ranks worst; ``None`` if it decides."""
    if not values:
        return None
    ranked = sorted(values, key=lambda v: (v is None, v or 0.0))
    pos = q * (len(ranked) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    a, b = ranked[lo], ranked[hi]
    if a is None or b is None:
        return None
    return a + (b - a) * (pos - lo)


@dataclass(frozen=True)
class Simulation:
    """Every seed's run of one strategy on one landscape at one budget, with the median and p90 ratios."""

    strategy: str
    budget: float
    budget_evaluations: int
    kernel: str
    legal_configs: int
    noise: float
    runs: tuple[SimulatedRun, ...] = field(default_factory=tuple)
    #: ``"tuner"`` (the tuning driver, then the tuner's final race picks) or ``"reserve"`` (module docstring).
    model: str = "reserve"
    #: Configs proposed per batch before any is measured (the compile pool's width; module docstring).
    width: int = 1
    #: The driver's fewest batch rounds (``SearchDriver(rounds=)``, adaptive width; tuner model); None: the width.
    rounds: int | None = None

    @property
    def median_best_ratio(self) -> float | None:
        return quantile([r.best_ratio for r in self.runs], 0.5)

    @property
    def p90_best_ratio(self) -> float | None:
        return quantile([r.best_ratio for r in self.runs], 0.9)

    @property
    def median_evals_to_2pct(self) -> float | None:
        return quantile([None if r.evals_to_2pct is None else float(r.evals_to_2pct) for r in self.runs], 0.5)

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "runs": [r.to_json() for r in self.runs],
            "median_best_ratio": self.median_best_ratio,
            "p90_best_ratio": self.p90_best_ratio,
            "median_evals_to_2pct": self.median_evals_to_2pct,
            "budget_evaluations": self.budget_evaluations,
            "legal_configs": self.legal_configs,
            "kernel": self.kernel,
            "noise": self.noise,
            "model": self.model,
            "width": self.width,
            "rounds": self.rounds,
        }


StrategyFactory = Callable[..., SearchStrategy]
#: The tuner's final race on a landscape: ``final(landscape, [(config, observed_ms), ...], noise=, seed=)`` ->
#: ``(pick, the configs raced)`` (:func:`tritune.engine.finals.replay_final_race`; this layer cannot import it).
FinalRace = Callable[..., "tuple[Config | None, list[Config]]"]


def simulate_one(
    landscape: Landscape,
    strategy: str | StrategyFactory,
    budget: Budget,
    *,
    seed: int = 0,
    noise: float = 0.0,
    confirm: float = CONFIRM,
    final: FinalRace | None = None,
    width: int = 1,
    rounds: int | None = None,
) -> SimulatedRun:
    """One seeded run. ``strategy`` is a registered name or a factory ``(space, *, seed, illegal)``.

    With ``final`` (the tuner model, module docstring) the search runs as tuning runs it and ``final``
    picks; ``confirm`` is then the driver's reserve for a strategy's finals. Without it (the reserve
    model), with noise, a share ``confirm`` of the evaluation budget is kept back to decide between the
    best and its ties. For a :class:`Strategy` the decision is
    interval-aware (:func:`_race_finalists`): only configs whose interval overlaps the best's are
    re-measured, in rounds, their draws pooled (:meth:`Strategy.retell`), and what no tie needs goes
    to the search. Other strategy objects get the plain rule: the fastest few measured once more, the
    pick the lowest mean log time of the two draws. Re-measurements count in ``evaluations``.
    ``width``: configs proposed per batch before any is measured (module docstring; both models).
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise SearchError(f"simulate width={width!r}: the compile pool's width must be a positive integer")
    space, illegal = replay_space(landscape)
    if isinstance(strategy, str):
        search = get(strategy, space, seed=seed, illegal=illegal)
    else:
        search = strategy(space, seed=seed, illegal=illegal)
    evaluator = ReplayEvaluator(landscape, noise=noise, seed=seed)
    if final is not None:
        return _simulate_tuner(landscape, search, evaluator, budget, seed=seed, noise=noise, share=confirm,
                               final=final, width=width, rounds=rounds)  # fmt: skip
    finalists = finals_reserve(budget.evaluations, confirm) if noise > 0 else 0
    if finalists and budget.evaluations is not None:
        budget = Budget(evaluations=budget.evaluations - finalists, seconds=budget.seconds)
    result = run_search(search, evaluator, budget, batch=width)
    history = list(result.history)
    best = result.best
    confirmed = 0
    if finalists and best is not None and isinstance(search, Strategy):
        best, confirmed = _race_finalists(search, evaluator, finalists, history)
    elif finalists and best is not None:
        ranked = sorted((o for o in history if o.ok and o.time_ms), key=lambda o: o.time_ms or 0.0)
        means = []
        for obs in ranked[:finalists]:
            again = evaluator(obs.config)[1]
            confirmed += 1
            assert obs.time_ms is not None and again is not None
            means.append(((math.log(obs.time_ms) + math.log(again)) / 2, obs.config.id, obs))
        best = min(means)[2] if means else best
    return _judged(landscape, seed, None if best is None else best.config, history, len(history) + confirmed)


def _true_ratio(landscape: Landscape, config: Config) -> float:
    """The recorded (noise-free) time of ``config`` over the landscape's best: the judge."""
    point = landscape.lookup(config)
    assert point is not None and point.time_ms is not None
    return point.time_ms / (landscape.best.time_ms or 0.0)


def _judged(landscape: Landscape, seed: int, pick: Config | None, history: Sequence[Observation], evaluations: int,
            final: tuple[str, ...] | None = None) -> SimulatedRun:  # fmt: skip
    """The run's record: the pick judged on its true time, and when the fastest seen first got within 2%."""
    evals_to: int | None = None
    running: float | None = None
    for n, obs in enumerate(history, start=1):
        if obs.ok and obs.time_ms is not None and (running is None or obs.time_ms < running):
            running = obs.time_ms
            if evals_to is None and _true_ratio(landscape, obs.config) <= WITHIN:
                evals_to = n
    return SimulatedRun(
        seed=seed,
        best_ratio=None if pick is None else _true_ratio(landscape, pick),
        evaluations=evaluations,
        evals_to_2pct=evals_to,
        best_config=None if pick is None else pick.id,
        final=final,
    )


class _Told:
    """A replayed evaluation as the driver reads a Measurement: its median and interval."""

    def __init__(self, time_ms: float, ci: tuple[float, float]) -> None:
        self.median_ms, (self.ci_low_ms, self.ci_high_ms) = time_ms, ci


def _simulate_tuner(landscape: Landscape, search: SearchStrategy, evaluator: ReplayEvaluator, budget: Budget, *,
                    seed: int, noise: float, share: float, final: FinalRace,
                    width: int = 1, rounds: int | None = None) -> SimulatedRun:  # fmt: skip
    """The tuner model (module docstring): tuning's driver, then the tuner's final race picks.

    Batches of ``width``: the whole batch is proposed (``next_batch``) before any config of it is measured,
    as tuning compiles and races a batch before it records the outcomes."""
    if isinstance(search, Strategy):
        driver = SearchDriver(search, budget, finals=share, width=width, rounds=rounds)
        while not driver.done:
            batch = driver.next_batch()
            if not batch:
                break
            for config in batch:
                status, t, ci = evaluator(config)
                if status is not Status.MEASURED or t is None:
                    driver.record(config, status)
                else:
                    driver.record(config, (status, t) if ci is None else _Told(t, ci))
        history = list(driver.history)
    else:  # a bare SearchStrategy: tuning needs a Strategy; its whole budget is searched, then the race
        history = list(run_search(search, evaluator, budget, batch=width).history)
    observed = [(o.config, o.time_ms) for o in history if o.ok and o.time_ms is not None]
    pick, raced = final(landscape, observed, noise=noise, seed=seed)
    return _judged(landscape, seed, pick, history, len(history), tuple(c.id for c in raced))


def _race_finalists(
    search: Strategy, evaluator: ReplayEvaluator, reserve: int, history: list[Observation]
) -> tuple[Observation | None, int]:
    """Spend ``reserve`` evaluations deciding between the best and its ties, as tuning's race does.

    Only contenders (configs whose interval overlaps the best's, :meth:`Strategy.contenders`) are
    re-measured; each round re-measures every contender once and pools the draws, so intervals narrow
    and configs that separate drop out. Evaluations no tie needs go to the search (appended to
    ``history``). Returns the strategy's pick on the pooled times and how many re-measurements it made.
    """
    left = reserve
    remeasured = 0
    probes = min(left, max(0, search.finals(left)))
    if probes > 0 and not search.done():
        # The strategy's own use of part of the reserve (a probe of untried neighbours of the ties,
        # :class:`~tritune.search.surrogate.SurrogateSearch` ``probe=``), before any tie is re-measured.
        more = run_search(search, evaluator, Budget(evaluations=probes))
        history.extend(more.history)
        left -= more.evaluations
    spare = left - len(search.contenders(left))
    while left > 0:
        if spare > 0 and not search.done():
            more = run_search(search, evaluator, Budget(evaluations=spare))
            history.extend(more.history)
            left -= more.evaluations
            spare = 0
            if more.evaluations == 0:
                break
            continue
        contenders = search.contenders(left)
        if len(contenders) < 2:
            if search.done():
                break
            spare = left
            continue
        for config in contenders:
            status, again, ci = evaluator(config)
            if status is not Status.MEASURED or again is None:
                raise SearchError(f"{config.id}: measured once, then replayed as {status.value}")
            search.retell(config, again, ci=ci)
            left -= 1
            remeasured += 1
    return search.best(), remeasured


def simulate(
    landscape: Landscape,
    strategy: str | StrategyFactory,
    budget: float,
    seeds: int | Sequence[int],
    *,
    noise: float = 0.0,
    name: str | None = None,
    on_run: Callable[[Any], None] | None = None,
    final: FinalRace | None = None,
    width: int = 1,
    rounds: int | None = None,
) -> Simulation:
    """Run ``strategy`` once per seed with ``budget`` as a fraction (0, 1] of the legal configs.

    ``on_run`` is called with each seed's run as it finishes (progress reporting). ``final``: the tuner's
    final race (the tuner model, module docstring); None for the reserve model. ``width``: the batch width
    (module docstring)."""
    space, illegal = replay_space(landscape)
    legal = len(space.configs()) - len(set(illegal))
    evals = Budget.fraction(budget, legal)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise SearchError("simulate needs at least one seed")
    done = []
    for s in seed_list:
        done.append(simulate_one(landscape, strategy, evals, seed=s, noise=noise, final=final, width=width,
                                 rounds=rounds))
        if on_run is not None:
            on_run(done[-1])
    runs = tuple(done)
    label = name or (strategy if isinstance(strategy, str) else str(getattr(strategy, "__name__", "custom")))
    return Simulation(label, budget, evals.evaluations or 0, landscape.kernel, legal, noise, runs,
                      "reserve" if final is None else "tuner", width, None if final is None else rounds)

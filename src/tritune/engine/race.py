"""Racing: time every candidate briefly, drop the clearly slower ones, re-time the rest until one wins.

Round 0 times every candidate for ``brief_budget_s``. Each later round first drops every survivor whose
median interval (at ``elimination_confidence``, stricter than the 95% of reports, because a race makes
many comparisons) lies wholly above the smallest upper bound among the survivors; then it re-times the
survivors one after another, round-robin, so drift in clocks or temperature hits all of them alike.
Samples accumulate across rounds. The race stops when

* ``decided``: one survivor is left (it is the best with confidence);
* ``tied``: no other survivor can be more than ``rel_tol`` faster than the leader, with confidence
  (:func:`~tritune.bench.stats.within`: ``leader.ci_high <= other.ci_low + rel_tol * other.median`` for
  every other survivor). Whichever of them is truly best, the leader is within ``rel_tol`` of it.
  After either, the winner is timed on until its own 95% interval is within ``rel_tol`` of its median
  (or its budget is spent), so its reported time is good;
* ``budget``: rounds, the total budget or every survivor's own budget ran out first. The total budget is
  ``total_budget_s`` if given, else ``budget_per_candidate_s`` times the number of candidates: a race
  never spends more device time than that, however many near-ties it meets (``triton.autotune`` spends
  about 125 ms per candidate).

**Near ties.** Before stopping as ``decided`` or ``tied``, every config whose median is within ``rel_tol``
of the leader's, eliminated or not, gets at least ``confirm_looks`` looks (measure calls), one each per
pass, round-robin; an eliminated one comes back for them, and the race then decides again on the merged
samples. One look's interval only says how that look's samples spread; a short kernel's look as a whole
can be off by more (clocks, a slow phase of the device: on the H200 a 6 us softmax config read 3% slow in
one look and was dropped from first place), and that only shows between looks. The cost is a few looks
of the few configs near the top.

**Drift.** A heavy kernel drifts the GPU it runs on: on an H100 at its power limit, a 0.65 ms matmul's looks read
7-13% faster in the first ~250 ms of load than later, and all configs move together by 3-8% from one round to the
next. Round-robin keeps the survivors comparable with each other, but a config dropped in an early round keeps that
moment's reading (on that H100, four transfers' openings put a config other than the neighbours' winner first by
its median, and each check race, all timed together, put the winner first). So at the end of the race each dropped
config's time is rescaled by the drift the survivors saw (``drift``, on by default): the GPU's level at each of its
looks is the median, over the survivors' looks nearest to it in time, of each look over that survivor's final
median, and its time is divided by that level (``extra["drift_factor"]``: 1 over the level; 1.0, and nothing
changed, when no survivor was timed). Replayed on 20 runs of recorded H100 looks (half the configs dropped after
their first look, the others seen for 5-8 rounds), it cut the error of the dropped configs' times against the
others' from 2.7-3.2% to 1.4-1.6% (RMS over config pairs) and the regret of the fastest-looking config from
0.8-0.9% to 0.5-0.6%. In whole races on recorded landscapes with a SYNTHETIC drift of that size (200 seeds, fields
of 8 and 16 configs), the config with the smallest reported time, what a search and a transfer's confirmation take
as the best, was as good or better in all 12 rows (share more than 1% off its field's best: 0.21 -> 0.18 at worst);
with no drift it costs the dropped configs' times 0.03-0.15 points of error and changes no pick.

The winner is the survivor with the smallest median; ``ties`` are the other survivors, the configs the
race could not tell apart from it (within ``rel_tol`` when ``tied``). The race knows no GPU: it calls a
:class:`~tritune.bench.timer.ConfigMeasure`, a replay timer on CPU or a GPU timer in a session.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Literal

from tritune.bench.stats import Measurement, median_ci, within
from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config, as_config
from tritune.errors import ConfigError, TimingUnavailableError
from tritune.outcome import Status

RaceStop = Literal["decided", "tied", "budget", "none_measured"]


@dataclass(frozen=True)
class RaceOptions:
    """How long to look at each candidate, and when to stop. Times are device seconds as measured."""

    brief_budget_s: float = 0.005
    round_budget_s: float = 0.005
    rel_tol: float = 0.01
    max_rounds: int = 40
    total_budget_s: float | None = None
    budget_per_candidate_s: float | None = 0.025
    candidate_budget_s: float = 0.5
    elimination_confidence: float = 0.99
    polish: bool = True
    #: Looks (separate measure calls) every config within ``rel_tol`` of the leader gets before the race
    #: stops; 1 turns the check off. See "Near ties" in the module docstring.
    confirm_looks: int = 3
    #: Rescale a dropped config's time by the GPU's drift since its looks, as the survivors saw it. See "Drift".
    drift: bool = True

    def __post_init__(self) -> None:
        if min(self.brief_budget_s, self.round_budget_s, self.candidate_budget_s, self.rel_tol) <= 0:
            raise ValueError("race budgets and rel_tol must be positive")
        if (self.total_budget_s is not None and self.total_budget_s <= 0) or (
            self.budget_per_candidate_s is not None and self.budget_per_candidate_s <= 0
        ):
            raise ValueError("total_budget_s and budget_per_candidate_s must be positive (or None)")
        if self.confirm_looks < 1:
            raise ValueError("confirm_looks must be >= 1 (1: no confirmation looks)")
        if self.max_rounds < 0 or not 0.5 < self.elimination_confidence < 1:
            raise ValueError("max_rounds must be >= 0 and elimination_confidence in (0.5, 1)")

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CandidateOutcome:
    """One candidate after the race: ``measured`` with its accumulated Measurement, or a failure status.

    ``eliminated_round`` is the round whose check dropped it as clearly slower (None if it survived);
    ``timings`` counts the measure calls it got; ``full`` says it was measured to completion (its 95%
    interval met ``rel_tol``, or it spent ``candidate_budget_s``).
    """

    config: Config
    status: Status
    measurement: Measurement | None = None
    reason: str | None = None
    eliminated_round: int | None = None
    timings: int = 0
    full: bool = False
    spent_s: float = 0.0
    #: What loading its binary told (registers, spilled_bytes, shared), when it was loaded.
    facts: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "config": self.config.to_json(),
            "status": self.status.value,
            "reason": self.reason,
        }
        if self.measurement is not None:
            d["measurement"] = self.measurement.to_json()
        d.update(eliminated_round=self.eliminated_round, timings=self.timings, full=self.full)
        if self.facts:
            d["facts"] = dict(self.facts)
        return d


@dataclass(frozen=True)
class RaceResult:
    """The race's answer: winner (None when nothing could be measured), ties, and every candidate's outcome."""

    winner: Config | None
    ties: tuple[Config, ...]
    outcomes: tuple[CandidateOutcome, ...]
    stop: RaceStop
    rounds: int
    measurements: int
    full_measurements: int
    device_s: float
    options: RaceOptions = field(default_factory=RaceOptions)
    #: When a later race over some of the outcomes decided (the final race of a search, the distributed
    #: race's re-timed finalists): its configs, the only ones whose measurements were taken with the
    #: winner's and can be compared with it (ties among them only). Empty: one race measured every outcome.
    decided_by: tuple[Config, ...] = ()

    def outcome(self, config: Any) -> CandidateOutcome:
        c = as_config(config)
        for o in self.outcomes:
            if o.config == c:
                return o
        raise KeyError(f"{c.id} was not a candidate of this race")

    @property
    def winner_measurement(self) -> Measurement | None:
        return None if self.winner is None else self.outcome(self.winner).measurement

    def to_json(self) -> dict[str, Any]:
        return {
            "winner": None if self.winner is None else self.winner.to_json(),
            "ties": [c.to_json() for c in self.ties],
            "stop": self.stop,
            "rounds": self.rounds,
            "measurements": self.measurements,
            "full_measurements": self.full_measurements,
            "device_s": self.device_s,
            "options": self.options.to_json(),
            "candidates": [o.to_json() for o in self.outcomes],
            **({"decided_by": [c.to_json() for c in self.decided_by]} if self.decided_by else {}),
        }


class _Race:
    """The mutable state of one race; ``race()`` is the public entry."""

    def __init__(self, candidates: list[Config], measure: ConfigMeasure, opts: RaceOptions,
                 prior: RaceResult | None = None) -> None:  # fmt: skip
        self.candidates = candidates
        self.measure = measure
        self.opts = opts
        self.meas: dict[Config, Measurement] = {}
        self.failed: dict[Config, Failure] = {}
        self.eliminated: dict[Config, int] = {}
        self.timings: dict[Config, int] = dict.fromkeys(candidates, 0)
        self.spent: dict[Config, float] = dict.fromkeys(candidates, 0.0)
        self.calls = 0
        #: Each config's looks in the order they ran: (the look's number among all of this race's, median ms).
        self.looks: dict[Config, list[tuple[int, float]]] = {}
        self.prior = prior
        self.carried_s = 0.0
        if prior is not None:  # the survivors of an earlier race go on with the samples they have
            for o in prior.outcomes:
                if o.config in self.timings and o.measurement is not None:
                    self.meas[o.config] = o.measurement
                    self.timings[o.config] = o.timings
                    self.spent[o.config] = o.spent_s
                    self.carried_s += o.spent_s

    def time(self, c: Config, budget_s: float) -> None:
        self.calls += 1
        self.timings[c] += 1
        try:
            r = self.measure(c, budget_s)
        except TimingUnavailableError:
            raise
        except Exception as e:
            r = Failure(Status.LAUNCH_FAILED, f"{c.id}: {type(e).__name__}: {e}")
        if isinstance(r, Failure):
            self.failed[c] = r
            self.meas.pop(c, None)
            return
        if not isinstance(r, Measurement):
            raise TypeError(f"measure({c.id}) returned {type(r).__name__}; expected Measurement or Failure")
        self.spent[c] += r.elapsed_s
        self.meas[c] = r if c not in self.meas else self.meas[c].merged(r)
        self.looks.setdefault(c, []).append((self.calls, r.median_ms))

    @property
    def device_s(self) -> float:
        return sum(self.spent.values())

    def survivors(self) -> list[Config]:
        return [c for c in self.candidates if c in self.meas and c not in self.eliminated]

    def eliminate(self, round_: int) -> None:
        alive = self.survivors()
        if len(alive) < 2:
            return
        ci = {c: median_ci(self.meas[c].samples, self.opts.elimination_confidence) for c in alive}
        bound = min(hi for _, hi in ci.values())
        for c in alive:
            if ci[c][0] > bound:
                self.eliminated[c] = round_

    def leader(self, alive: list[Config]) -> Config:
        return min(alive, key=lambda c: (self.meas[c].median_ms, self.candidates.index(c)))

    def full(self, c: Config) -> bool:
        m = self.meas.get(c)
        if m is None:
            return False
        return m.converged(self.opts.rel_tol) or self.spent[c] >= self.opts.candidate_budget_s

    @property
    def total_budget_s(self) -> float | None:
        if self.opts.total_budget_s is not None:
            return self.opts.total_budget_s
        per = self.opts.budget_per_candidate_s
        if per is None:
            return None
        n = len(self.candidates)
        if self.prior is not None:  # a continuation: the whole field, minus what the first race spent
            n = len({*self.candidates, *(o.config for o in self.prior.outcomes)})
            return per * n - self.prior.device_s + self.carried_s
        return per * n

    def out_of_budget(self) -> bool:
        total = self.total_budget_s
        return total is not None and self.device_s >= total

    def run(self) -> tuple[RaceStop, int]:
        for c in self.candidates:
            if c not in self.meas:
                self.time(c, self.opts.brief_budget_s)
        rounds = 0
        while True:
            self.eliminate(rounds)
            alive = self.survivors()
            if not alive:
                return "none_measured", rounds
            lead = self.leader(alive)
            others = [c for c in alive if c != lead]
            if not others:
                if self.confirm(lead):
                    continue
                self.polish(lead)
                return "decided", rounds
            if all(within(self.meas[lead], self.meas[c], self.opts.rel_tol) for c in others):
                # The leader is within rel_tol of whichever survivor is truly best; the others could not
                # be told apart from it at the elimination confidence: they are its ties.
                if self.confirm(lead):
                    continue
                self.polish(lead)
                return "tied", rounds
            active = [c for c in alive if self.spent[c] < self.opts.candidate_budget_s]
            if rounds >= self.opts.max_rounds or self.out_of_budget() or not active:
                return "budget", rounds
            rounds += 1
            for c in active:
                self.time(c, self.opts.round_budget_s)

    def confirm(self, lead: Config) -> bool:
        """One more look at each config within ``rel_tol`` of ``lead`` that has fewer than ``confirm_looks``;
        False when none needs one (or the budget is spent): the race may stop."""
        k = self.opts.confirm_looks
        if k <= 1 or self.out_of_budget():
            return False
        bound = self.meas[lead].median_ms * (1 + self.opts.rel_tol)
        near = [
            c for c in self.candidates
            if c in self.meas and self.meas[c].median_ms <= bound and self.timings[c] < k
            and self.spent[c] < self.opts.candidate_budget_s
        ]  # fmt: skip
        if not near:
            return False
        for c in near:
            self.eliminated.pop(c, None)
            self.time(c, self.opts.round_budget_s)
        return True

    def polish(self, c: Config) -> None:
        if not self.opts.polish:
            return
        while c in self.meas and not self.full(c) and not self.out_of_budget():
            self.time(c, self.opts.round_budget_s)

    def drift(self, c: Config, at: list[int], level: list[float], width: int) -> float:
        """The factor that puts a dropped config's time on the survivors' footing (module docstring, "Drift").
        ``at``/``level``: every survivor look, in order, as its number and its median over that survivor's final
        median; ``width``: how many survivors. For each look of ``c``, the GPU's level then is the median over the
        ``width`` survivor looks nearest to it in time; the factor is 1 over the median of those levels (1.0 without
        any)."""
        levels = []
        for k, _ in self.looks.get(c, ()):
            lo = hi = bisect_left(at, k)  # take the ``width`` survivor looks nearest to look ``k``, either side
            while hi - lo < width and (lo > 0 or hi < len(at)):
                if hi >= len(at) or (lo > 0 and k - at[lo - 1] <= at[hi] - k):
                    lo -= 1
                else:
                    hi += 1
            if hi > lo:
                levels.append(median(level[lo:hi]))
        return 1.0 / median(levels) if levels else 1.0

    def result(self, stop: RaceStop, rounds: int) -> RaceResult:
        alive = self.survivors()
        winner = self.leader(alive) if alive else None
        if self.opts.drift and self.eliminated:
            around = sorted((k, m / self.meas[s].median_ms) for s in alive for k, m in self.looks.get(s, ()))
            at, level = [k for k, _ in around], [v for _, v in around]  # once for every dropped config
            for c in self.eliminated:
                if c not in self.meas:  # failed after it was dropped: nothing to rescale
                    continue
                k = self.drift(c, at, level, max(1, len(alive)))
                if k != 1.0:
                    self.meas[c] = self.meas[c].scaled(k, drift_factor=round(k, 6))
        if winner is None:
            stop = "none_measured"
        outcomes = []
        for c in self.candidates:
            if c in self.failed:
                f = self.failed[c]
                outcomes.append(CandidateOutcome(c, f.status, None, f.reason, None, self.timings[c], False,
                                                 self.spent[c]))  # fmt: skip
            else:
                outcomes.append(
                    CandidateOutcome(
                        c,
                        Status.MEASURED,
                        self.meas[c],
                        None,
                        self.eliminated.get(c),
                        self.timings[c],
                        self.full(c),
                        self.spent[c],
                    )
                )
        return RaceResult(
            winner=winner,
            ties=tuple(c for c in alive if c != winner),
            outcomes=tuple(outcomes),
            stop=stop,
            rounds=rounds,
            measurements=self.calls,
            full_measurements=sum(o.full for o in outcomes),
            device_s=self.device_s,
            options=self.opts,
        )


def _candidates(configs: Iterable[Any]) -> list[Config]:
    out: list[Config] = []
    seen: set[Config] = set()
    for obj in configs:
        c = as_config(obj)
        if c in seen:
            raise ConfigError(f"candidate {c.id} is listed twice; each config can race only once")
        seen.add(c)
        out.append(c)
    return out


def race(configs: Iterable[Any], measure: ConfigMeasure, options: RaceOptions | None = None, *,
         prior: RaceResult | None = None) -> RaceResult:  # fmt: skip
    """Race ``configs`` with ``measure(config, budget_s) -> Measurement | Failure`` (see the module docstring).

    A measure that raises is recorded as ``launch_failed`` with the exception as reason, except
    TimingUnavailableError, which means no candidate can be timed and propagates. Deterministic when
    ``measure`` is: the race itself draws no random numbers.

    ``prior``: an earlier race over other candidates (say, those compiled first, raced while the slowest
    compiles finished). Its survivors (winner and ties) join ``configs`` with the samples they have and
    skip the brief first look; its eliminated and failed candidates keep their outcome; the budget is
    that of the whole field, less what the earlier race spent. The result covers every candidate of both.
    """
    opts = options or RaceOptions()
    cands = _candidates(configs)
    if prior is None:
        state = _Race(cands, measure, opts)
        stop, rounds = state.run()
        return state.result(stop, rounds)
    carried = [c for c in (prior.winner, *prior.ties) if c is not None and c not in cands]
    state = _Race(carried + cands, measure, opts, prior)
    stop, rounds = state.run()
    return _merge(prior, state.result(stop, rounds), carried)


def _merge(first: RaceResult, second: RaceResult, carried: list[Config]) -> RaceResult:
    """One result from a race and its continuation: the continuation's outcome where it has one."""
    later = {o.config: o for o in second.outcomes}
    outcomes = [later.pop(o.config, o) for o in first.outcomes]
    outcomes += [o for c, o in later.items()]
    return RaceResult(
        winner=second.winner,
        ties=second.ties,
        outcomes=tuple(outcomes),
        stop=second.stop,
        rounds=first.rounds + second.rounds,
        measurements=first.measurements + second.measurements,  # the second counts its own calls only
        full_measurements=sum(o.full for o in outcomes),
        device_s=first.device_s + second.device_s - sum(o.spent_s for o in first.outcomes if o.config in carried),
        options=second.options,
    )


def sweep(configs: Iterable[Any], measure: ConfigMeasure, options: RaceOptions | None = None) -> RaceResult:
    """The baseline a race is compared to: every candidate timed to completion, one after another.

    Each candidate gets one measure call of ``candidate_budget_s`` (the timer stops early once its
    interval meets ``rel_tol``). The winner is the smallest median; ties are those whose 95% interval
    overlaps the winner's.
    """
    opts = options or RaceOptions()
    state = _Race(_candidates(configs), measure, opts)
    for c in state.candidates:
        state.time(c, opts.candidate_budget_s)
    res = state.result("decided", 0)
    if res.winner is None:
        return res
    best = state.meas[res.winner]
    ties = tuple(
        c for c in state.survivors()
        if c != res.winner and state.meas[c].ci_low_ms <= best.ci_high_ms
    )  # fmt: skip
    return RaceResult(res.winner, ties, res.outcomes, "decided", 0, res.measurements, res.full_measurements,
                      res.device_s, opts)  # fmt: skip


def outcomes_by_status(result: RaceResult) -> Mapping[Status, list[Config]]:
    """The candidates grouped by their final status."""
    out: dict[Status, list[Config]] = {}
    for o in result.outcomes:
        out.setdefault(o.status, []).append(o.config)
    return out

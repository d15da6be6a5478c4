"""The ranks of a tuning group as a field of the batch loop (:mod:`tritune.engine.loop`): one key's batches
shared by every rank.

There is one proposer, on rank 0 (a :class:`~tritune.search.SearchDriver`, or every candidate at once for a key
raced whole):

1. :meth:`RanksField.start`: the ranks agree on what they tune (label and candidates) and gather their compile
   pools' widths. A searched key's driver is built on rank 0 only, as wide as every pool together, from rank 0's
   store (resume, transfer) (:meth:`RanksField.start_driver`).
2. Each round rank 0 proposes a batch (indices into the candidate list every rank holds) and broadcasts it; every
   rank compiles, loads, checks and races its share (:func:`~tritune.ranks.split.split_by_width`) **with the
   survivors of its earlier shares**; every outcome is gathered to rank 0 and told to the strategy. A transfer's
   opening races on a share of the budget when rank 0 re-times the finalists, as in one process.
3. At the end the ranks' races are merged by the winner rule and rank 0 re-times the finalists
   (:func:`~tritune.ranks.race.finish_race`), so every rank adopts one winner.

An exception on any rank (its compile pool, its measure, rank 0's strategy) is exchanged at the next collective and
every rank raises :class:`~tritune.errors.DistributedError`; a rank that crashes or stops arriving fails the others'
monitored barrier within the group's timeout. Batches do not overlap: a proposal is a collective.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config, as_config
from tritune.engine.finals import opening_options
from tritune.engine.loop import Batch, Batches, Compiler, EveryConfig, Parts, run_batches, told_outcome
from tritune.engine.pipeline import Compiles, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult
from tritune.errors import ConfigError, DistributedError
from tritune.ranks.group import TuningGroup, check_agreement
from tritune.ranks.race import DistributedRaceResult, RankShare, finish_race, raise_errors, run_local
from tritune.ranks.split import split_by_width
from tritune.search import SearchDriver
from tritune.store.keys import TuningKey
from tritune.store.records import WinnerRecord

#: Rank 0 builds a searched key's driver: ``make(width) -> (driver, info)``, ``width`` the sum of the ranks' pools.
MakeDriver = Callable[[int], "tuple[SearchDriver, dict[str, Any]]"]


@dataclass
class DriverView:
    """What a rank other than 0 holds in place of the search driver: rank 0's driver summary, as sent at the start
    of the search and again at its end. It proposes nothing (rank 0 does)."""

    width: int
    resumed: int = 0
    final: dict[str, Any] = field(default_factory=dict)
    confirm: bool = False
    done: bool = False

    def summary(self) -> dict[str, Any]:
        """Rank 0's ``SearchDriver.summary()``, as last sent."""
        return dict(self.final)

    def next_batch(self) -> list[Config]:
        return []

    def record(self, config: Config, outcome: Any) -> None:
        return None

    def check_field(self, limit: int, within: float, confirming_within: float | None = None) -> list[Config]:
        return []

    def recheck(self, outcomes: Any) -> bool:
        return False


class RanksField:
    """One key's batches over the ranks of ``group`` (module docstring). Every method is collective."""

    overlap = False
    rechecks = False  # configs are timed on different GPUs: no check race; rank 0 re-times the finalists instead

    def __init__(self, group: TuningGroup, label: str, candidates: Sequence[Config], widths: Sequence[int], *,
                 retime_finalists: bool = True, max_finalists: int | None = 8,
                 timeout_s: float | None = None) -> None:  # fmt: skip
        self.group = group
        self.label = label
        self.candidates = tuple(candidates)
        self.widths = tuple(widths)
        self.retime_finalists = retime_finalists
        self.max_finalists = max_finalists
        self.timeout_s = timeout_s
        #: Every batch's configs as proposed by rank 0, in order (the same list on every rank).
        self.batches: list[list[Config]] = []
        self._index = {c: i for i, c in enumerate(self.candidates)}
        self._failed: str | None = None  # rank 0's strategy failed: sent to every rank with the next proposal
        self._t0 = time.perf_counter()

    @classmethod
    def start(cls, group: TuningGroup | Any | None, label: str, candidates: Sequence[Config], width: int, *,
              retime_finalists: bool = True, max_finalists: int | None = 8,
              timeout_s: float | None = None) -> RanksField:  # fmt: skip
        """Agree on ``label`` and ``candidates``, gather the compile pools' ``width``s. ``group``: a TuningGroup, a
        torch process group, or None for the whole job."""
        tg = check_agreement(label, [c.id for c in candidates], group, timeout_s=timeout_s)
        widths = tuple(int(w) for w in tg.all_gather(int(width), label, "gather the compile pools", timeout_s))
        return cls(tg, label, candidates, widths, retime_finalists=retime_finalists, max_finalists=max_finalists,
                   timeout_s=timeout_s)  # fmt: skip

    @property
    def rank(self) -> int:
        return self.group.rank

    @property
    def world_size(self) -> int:
        return self.group.world_size

    def _bcast(self, obj: Any, stage: str) -> Any:
        return self.group.broadcast(obj, self.label, stage, self.timeout_s)

    def start_driver(self, make: MakeDriver) -> tuple[SearchDriver | DriverView, dict[str, Any]]:
        """A searched key's driver on rank 0 (``make(sum of the widths)``), a :class:`DriverView` elsewhere; and its
        info (where the search starts from), the same on every rank."""
        total = sum(self.widths)
        driver: SearchDriver | None = None
        payload: tuple[dict[str, Any] | None, dict[str, Any], str | None] = (None, {}, None)
        if self.rank == 0:
            try:
                driver, info = make(total)
                payload = (dict(info), driver.summary(), None)
            except Exception as e:
                payload = (None, {}, f"starting the search failed on rank 0: {type(e).__name__}: {e}")
        info, first, error = self._bcast(payload, "start the search")
        if error is not None:
            raise DistributedError(f"{self.label}: {error}. Every rank stops tuning this together.")
        assert info is not None
        info = {**info, "ranks": self.world_size, "width_per_rank": list(self.widths)}
        if driver is not None:
            return driver, info
        return DriverView(total, int(info.get("resumed", 0)), dict(first)), info

    def stored_winner(self, winner: WinnerRecord | None, key: TuningKey) -> WinnerRecord | None:
        """Rank 0's stored winner of ``key`` on every rank (rank 0's store decides; the others pass theirs, or None).
        Sent as JSON: a stored record holds read-only mappings that do not pickle."""
        got = self._bcast(None if winner is None else winner.to_json(), "share rank 0's stored winner")
        if self.rank == 0 or got is None:
            return winner if self.rank == 0 else None
        by_id = {c.id: c for c in self.candidates}
        cfg = Config.from_json(got["config"])
        return WinnerRecord(key, by_id.get(cfg.id, cfg), got["time_ms"], tuple(Config.from_json(t) for t in got["ties"]),
                            got["provenance"] or {}, got["recorded_at"])  # fmt: skip

    def share_summary(self, driver: SearchDriver | DriverView) -> dict[str, Any]:
        """Rank 0's driver summary on every rank, at the end of the search."""
        final = self._bcast(driver.summary() if isinstance(driver, SearchDriver) else None, "share the search's summary")
        if isinstance(driver, DriverView):
            driver.final = dict(final)
        return dict(final)

    # -- the batch loop's field -------------------------------------------------------------------------------
    def propose(self, batches: Batches, extra: list[Config], first: bool, final: int) -> Batch:
        n = len(self.batches) + 1
        payload: tuple[list[int], int, str | None, bool] = ([], 0, None, False)
        if self.rank == 0 and self._failed is not None:
            payload = ([], 0, self._failed, False)
        elif self.rank == 0:
            try:
                batch = batches.next_batch()
                todo = batch + [c for c in extra if c in self._index and c not in batch]
                opening = first and batches.confirm and self.retime_finalists  # re-timed at the end
                payload = ([self._index[c] for c in todo], len(batch), None, opening)
            except Exception as e:
                payload = ([], 0, f"the strategy failed on rank 0: {type(e).__name__}: {e}", False)
        ids, n_told, error, opening = self._bcast(payload, f"propose batch {n}")
        if error is not None:
            raise DistributedError(f"{self.label}: {error}. Every rank stops tuning this together.")
        todo = [self.candidates[i] for i in ids]
        if todo:
            self.batches.append(todo)
        return Batch(todo, n_told, opening)

    def race(self, batch: Batch, prior: RaceResult | None, parts: Parts, stats: dict[str, Any],
             on_tail: Callable[[], Any] | None, compiling: Compiles | None = None,
             ) -> tuple[RaceResult | None, list[tuple[Config, Any]]]:  # fmt: skip
        n = len(self.batches)
        share = split_by_width(batch.configs, self.widths, self.rank)
        stats["here"] = len(share)
        opts = opening_options(parts.options) if batch.opening else parts.options

        def work() -> RaceResult | None:
            if not share:
                return prior
            started = parts.compiler(share) if parts.compiler is not None else None
            return compile_and_race(share, prepare=parts.prepare, measure=parts.measure, options=opts,
                                    compiling=started, method=parts.method, stats=stats, prior=prior)  # fmt: skip

        mine, err = run_local(work, self.rank, f"batch {n}: timing {len(share)} configs")
        told = [] if mine.result is None else [(self._index[c], told_outcome(mine.result, c)) for c in share]
        reports = self.group.all_gather((mine.error, told), self.label, f"gather batch {n}", self.timeout_s)
        raise_errors(self.label, [RankShare(r, None, 0.0, e) for r, (e, _) in enumerate(reports)], err)
        proposed = set(batch.configs[: batch.proposed])
        gathered = [(self.candidates[i], o) for _, outs in reports for i, o in outs
                    if self.candidates[i] in proposed] if self.rank == 0 else []  # fmt: skip
        return mine.result, gathered

    def tell(self, batches: Batches, told: Sequence[tuple[Config, Any]]) -> None:
        for c, outcome in told:
            try:
                batches.record(c, outcome)
            except Exception as e:  # sent with the next proposal: every rank raises there
                self._failed = self._failed or f"telling the strategy failed on rank 0: {type(e).__name__}: {e}"

    def finish(self, result: RaceResult | None, tried: Sequence[Config], parts: Parts, *, final: int,
               decided: bool, stats: dict[str, Any]) -> RaceResult | None:  # fmt: skip
        if not tried:
            return None
        mine = RankShare(self.rank, result, time.perf_counter() - self._t0)
        return finish_race(self.group, self.label, tried, mine, None, parts.measure, parts.options,
                           retime_finalists=self.retime_finalists, max_finalists=self.max_finalists,
                           timeout_s=self.timeout_s)  # fmt: skip


def distributed_race(
    configs: Iterable[Any],
    measure: ConfigMeasure,
    *,
    label: str = "",
    group: TuningGroup | Any | None = None,
    options: RaceOptions | None = None,
    timeout_s: float | None = None,
    retime_finalists: bool = False,
    max_finalists: int | None = 8,
    method: str = "race",
    prepare: Callable[[Config], Failure | None] | None = None,
    compiler: Compiler | None = None,
    width: int = 1,
) -> DistributedRaceResult:
    """Race ``configs`` over every rank of ``group``: the batch loop with every candidate in one batch on a
    :class:`RanksField` (collective; the winner rule is :mod:`tritune.ranks.race`'s).

    ``label`` names what is tuned (kernel and key) in checks and errors; every rank must pass the same. ``group``: a
    TuningGroup, a torch process group, or None for the whole job. ``timeout_s`` bounds every wait for the other
    ranks. ``method="sweep"`` times each config once to completion instead of racing. ``prepare(config)`` runs on the
    rank that owns the config, before any timing (load, verify): None for a config to time, or the Failure to
    record. ``compiler`` starts the share's compiles; ``width`` is this rank's compile pool (the split follows the
    ranks' widths). Raises DistributedError on every rank when the ranks disagree, a rank fails, crashes or does not
    arrive.
    """
    if method not in ("race", "sweep"):
        raise ConfigError(f"method must be 'race' or 'sweep', got {method!r}")
    cands = [as_config(c) for c in configs]
    if len(set(cands)) != len(cands):
        raise ConfigError(f"{label or 'distributed_race'}: a candidate is listed twice")
    label = label or "distributed tuning"
    ranks = RanksField.start(group, label, cands, width, retime_finalists=retime_finalists,
                             max_finalists=max_finalists, timeout_s=timeout_s)  # fmt: skip
    parts = Parts(prepare or (lambda c: None), measure, options or RaceOptions(), compiler, method)
    result = run_batches(EveryConfig(cands), parts, field=ranks, final=0)
    assert isinstance(result, DistributedRaceResult)
    return result

"""One search shared by the ranks of a tuning group (``distributed=True``, the ``torchrun`` farm).

Single-process search (:func:`tritune.engine.searched.search_and_race`) has one strategy proposing batches
as wide as its compile pool. Over ranks, there is still **one strategy**, on rank 0:

1. :meth:`SharedSearch.start`: the ranks agree on what they tune (label and legal configs) and gather
   their compile pools' widths; rank 0 builds the :class:`~tritune.search.SearchDriver` with their sum as
   its width, from its own store view (resume, transfer), and broadcasts what it starts from (``info``).
2. :meth:`SharedSearch.search_and_race`, each round: rank 0 proposes a batch (indices into the legal
   list, which every rank holds) and broadcasts it; every rank compiles, loads, checks and races its share
   (:func:`~tritune.dist.split.split_by_width`) **with the survivors of its earlier shares** (``prior=``);
   every measured config's outcome (its Measurement, or its failure) is gathered to rank 0 and told to the
   strategy. The budget counts every rank's evaluations: the driver records them all. A transfer's opening
   (the first batch of a ``confirm`` driver) races on a share of the budget, as in one process
   (:func:`tritune.engine.searched.opening_options`), when rank 0 re-times the finalists.
3. When rank 0's driver stops, the ranks' races are merged by the winner rule and rank 0 re-times the
   finalists (:func:`~tritune.dist.race.finish_race`, as :func:`~tritune.dist.race.distributed_race`), so
   every rank adopts one winner; rank 0's driver summary is broadcast so every rank reports the same search.

An exception on any rank (its compile pool, its measure, rank 0's strategy) is exchanged at the next
collective and every rank raises :class:`~tritune.errors.DistributedError`; a rank that crashes or stops
arriving fails the others' monitored barrier within the group's timeout. Batches do not overlap (the
single-process search proposes the next batch while the last compiles finish): a proposal is a collective.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.dist.group import TuningGroup, check_agreement, resolve_group
from tritune.dist.race import DistributedRaceResult, RankShare, _raise_errors, _run_local, finish_race
from tritune.dist.split import split_by_width
from tritune.engine.job import Compiler
from tritune.engine.pipeline import Prepared, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult
from tritune.engine.searched import opening_options
from tritune.engine.sticky import StickyGuard
from tritune.errors import DistributedError
from tritune.outcome import Status
from tritune.search import SearchDriver
from tritune.store.keys import TuningKey
from tritune.store.records import WinnerRecord

#: Rank 0 builds the driver: ``make(width) -> (driver, info)``, ``width`` the sum of the ranks' pools.
MakeDriver = Callable[[int], "tuple[SearchDriver, dict[str, Any]]"]


@dataclass
class DriverView:
    """What a rank other than 0 holds in place of the search driver: rank 0's driver summary, as sent at
    the start of the search (a store hit may end it there) and again at its end."""

    width: int
    resumed: int = 0
    final: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Rank 0's ``SearchDriver.summary()``, as last sent."""
        return dict(self.final)


@dataclass
class SharedSearch:
    """One key's search over the ranks of ``group`` (module docstring). Every method is collective."""

    group: TuningGroup
    label: str
    legal: tuple[Config, ...]
    retime_finalists: bool = True
    max_finalists: int | None = 8
    timeout_s: float | None = None
    widths: tuple[int, ...] = ()
    #: Every batch's configs as proposed by rank 0, in order (the same list on every rank).
    batches: list[list[Config]] = field(default_factory=list)

    @classmethod
    def create(cls, group: TuningGroup | Any | None, label: str, legal: Sequence[Config], *,
               retime_finalists: bool = True, timeout_s: float | None = None) -> SharedSearch:  # fmt: skip
        """Not a collective: resolves ``group`` (a TuningGroup, a torch group, None for the whole job)."""
        return cls(resolve_group(group, timeout_s), label, tuple(legal), retime_finalists, timeout_s=timeout_s)

    @property
    def rank(self) -> int:
        return self.group.rank

    @property
    def world_size(self) -> int:
        return self.group.world_size

    def _bcast(self, obj: Any, stage: str) -> Any:
        return self.group.broadcast(obj, self.label, stage, self.timeout_s)

    def stored_winner(self, winner: WinnerRecord | None, key: TuningKey) -> WinnerRecord | None:
        """Rank 0's stored winner of ``key`` on every rank (rank 0's store decides; the others pass theirs,
        or None). Sent as JSON: a stored record holds read-only mappings that do not pickle."""
        got = self._bcast(None if winner is None else winner.to_json(), "share rank 0's stored winner")
        if self.rank == 0 or got is None:
            return winner if self.rank == 0 else None
        by_id = {c.id: c for c in self.legal}
        cfg = Config.from_json(got["config"])
        return WinnerRecord(key, by_id.get(cfg.id, cfg), got["time_ms"], tuple(Config.from_json(t) for t in got["ties"]),
                            got["provenance"] or {}, got["recorded_at"])  # fmt: skip

    def start(self, make: MakeDriver, width: int) -> tuple[SearchDriver | DriverView, dict[str, Any]]:
        """Agree, gather the pools' ``width``s, build the driver on rank 0: ``(driver or view, info)``."""
        tg = check_agreement(self.label, [c.id for c in self.legal], self.group, timeout_s=self.timeout_s)
        self.widths = tuple(int(w) for w in tg.all_gather(int(width), self.label, "gather the compile pools",
                                                          self.timeout_s))  # fmt: skip
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

    def search_and_race(
        self,
        driver: SearchDriver | DriverView,
        *,
        prepare: Callable[[Config], Prepared],
        measure: ConfigMeasure,
        options: RaceOptions,
        compiler: Compiler | None = None,
        finalists: Sequence[Config] = (),
        stats: dict[str, Any] | None = None,
        recover: Callable[[], ConfigMeasure] | None = None,
        probe: Callable[[], str | None] | None = None,
    ) -> DistributedRaceResult | None:
        """:func:`tritune.engine.searched.search_and_race` over the ranks (module docstring), with the same
        arguments; ``finalists`` counts on rank 0 only. Returns the merged race over every config tried, the
        same on every rank (None if nothing was tried)."""
        if not self.widths:
            raise DistributedError(f"{self.label}: SharedSearch.start must run before search_and_race")
        guard = StickyGuard(prepare, measure, recover, probe)
        index = {c: i for i, c in enumerate(self.legal)}
        extra = [c for c in dict.fromkeys(finalists) if c in index]
        local: RaceResult | None = None
        tried: list[Config] = []
        rounds: list[dict[str, Any]] = []
        compiled = 0.0
        failed: str | None = None  # rank 0's strategy failed: sent to every rank with the next proposal
        t_all = time.perf_counter()
        while True:
            n = len(self.batches) + 1
            # (the batch's indices, how many of them the strategy proposed, rank 0's error, whether it is a
            # transfer's opening: raced on a share of the budget, as in one process)
            payload: tuple[list[int], int, str | None, bool] = ([], 0, None, False)
            if self.rank == 0 and failed is not None:
                payload = ([], 0, failed, False)
            elif self.rank == 0:
                try:
                    assert isinstance(driver, SearchDriver)
                    batch = driver.next_batch()
                    todo = batch + [c for c in extra if c not in batch]
                    opening = driver.confirm and n == 1 and self.retime_finalists  # re-timed at the end
                    payload = ([index[c] for c in todo], len(batch), None, opening)
                except Exception as e:
                    payload = ([], 0, f"the strategy failed on rank 0: {type(e).__name__}: {e}", False)
                extra = []
            ids, n_told, error, opening = self._bcast(payload, f"propose batch {n}")
            opts = opening_options(options) if opening else options
            if error is not None:
                raise DistributedError(f"{self.label}: {error}. Every rank stops tuning this together.")
            if not ids:
                break
            todo = [self.legal[i] for i in ids]
            self.batches.append(todo)
            share = split_by_width(todo, self.widths, self.rank)
            phase: dict[str, Any] = {}
            t0 = time.perf_counter()

            def work(share: list[Config] = share, phase: dict[str, Any] = phase,
                     prior: RaceResult | None = local, opts: RaceOptions = opts) -> RaceResult | None:  # fmt: skip
                if not share:
                    return prior
                compiling = compiler(share) if compiler is not None else None
                return compile_and_race(share, prepare=guard.prepare, measure=guard.measure, options=opts,
                                        compiling=compiling, stats=phase, prior=prior)  # fmt: skip

            mine, err = _run_local(work, self.rank, f"batch {n}: timing {len(share)} configs")  # type: ignore[arg-type]
            told = []
            if mine.result is not None:
                local = mine.result
                for c in share:
                    o = local.outcome(c)
                    ok = o.status is Status.MEASURED and o.measurement is not None
                    told.append((index[c], o.measurement if ok else (Status.LAUNCH_FAILED if o.status is
                                                                     Status.MEASURED else o.status)))  # fmt: skip
            reports = self.group.all_gather((mine.error, told), self.label, f"gather batch {n}", self.timeout_s)
            _raise_errors(self.label, [RankShare(r, None, 0.0, e) for r, (e, _) in enumerate(reports)], err)
            if self.rank == 0:
                assert isinstance(driver, SearchDriver)
                proposed = set(todo[:n_told])
                for _, outcomes in reports:
                    for i, outcome in outcomes:
                        if self.legal[i] in proposed:  # stored finalists were told already (resume)
                            try:
                                driver.record(self.legal[i], outcome)
                            except Exception as e:  # sent with the next proposal: every rank raises there
                                failed = failed or f"telling the strategy failed on rank 0: {type(e).__name__}: {e}"
            tried.extend(todo)
            compiled += float(phase.get("compiled_s", 0.0) or 0.0)
            rounds.append({"configs": len(todo), "here": len(share), "s": round(time.perf_counter() - t0, 3),
                           "compiled_s": phase.get("compiled_s"),
                           **({"budget_per_candidate_s": opts.budget_per_candidate_s} if opening else {})})  # fmt: skip
        if stats is not None:
            stats["batches"] = rounds
            stats["compiled_s"] = round(compiled, 3)
        result: DistributedRaceResult | None = None
        if tried:
            mine = RankShare(self.rank, local, time.perf_counter() - t_all)
            result = finish_race(self.group, self.label, tried, mine, None, guard.measure, options,
                                 retime_finalists=self.retime_finalists, max_finalists=self.max_finalists,
                                 timeout_s=self.timeout_s)  # fmt: skip
        final = driver.summary() if isinstance(driver, SearchDriver) else None
        final = self._bcast(final, "share the search's summary")
        if isinstance(driver, DriverView):
            driver.final = dict(final)
        return result


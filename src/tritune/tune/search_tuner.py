"""The decorator's tuning of one key by search (:class:`~tritune.tune.tuner.Tuner` with a search plan).

The store's records of the key resume the search and count against its budget, the kernel's other tuned
keys seed it (transfer), the stored winner and ties race again with the first batch, and every outcome is
recorded with the search's summary on the winner, so a later lookup knows what was searched.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.dist.search import SharedSearch
from tritune.engine.job import Compiler
from tritune.engine.pipeline import Prepared
from tritune.engine.precompile import default_jobs
from tritune.engine.searched import search_and_race
from tritune.errors import NoLegalConfigError
from tritune.outcome import Status
from tritune.space.legality import format_rejections
from tritune.store import CandidateRecord
from tritune.tune import searching
from tritune.tune.tuner import race_outcomes

if TYPE_CHECKING:
    from tritune.tune.autotune import Autotuned, Choice
    from tritune.tune.tuner import Tuner


def search_tune(tuner: Tuner, tuned: Autotuned, key: tuple[Any, ...], p: searching.SearchPlan, legal: list[Config],
                rejected: dict[Config, str], prepare: Callable[[Config], Prepared], measure: ConfigMeasure,
                compiler: Compiler | None, st: Any, tkey: Any, stats: dict[str, Any], clock: float,
                probe: Callable[[], str | None] | None = None, shared: SharedSearch | None = None,
                ) -> Choice:  # fmt: skip
    """Search ``legal`` for ``key`` (module docstring) and return the race's winner as a Choice; ``probe``
    asks whether a launch error lost the CUDA context (a sticky error then costs its config only).
    ``shared`` (``distributed=True``): the ranks share one search (:mod:`tritune.dist.search`); rank 0 passes
    its store as ``st``, the others None, so resume, transfer and the records are rank 0's."""
    from tritune.tune.autotune import Choice

    name = tuned.info.name
    driver, info = searching.start_driver(p, legal, store=st, tkey=tkey, key_values=tuned.key_spec.as_dict(key),
                                          where=name, width=tuner.jobs or default_jobs(), shared=shared)  # fmt: skip
    old = st.lookup_winner(tkey) if st is not None else None
    if shared is not None:  # every rank takes rank 0's stored winner: one decision, one winner
        old = shared.stored_winner(old, tkey)
    if info.get("nothing_left") and old is not None and old.config in set(legal):
        stats["search"] = searching.summary(driver, info, old.config)
        return Choice(old.config, "store", "stored winner (the budget was spent by earlier runs)", stats=stats)
    finalists = searching.stored_finalists(st, tkey, legal)
    phases: dict[str, Any] = {}
    run = search_and_race if shared is None else shared.search_and_race
    result = run(driver, prepare=prepare, measure=measure, options=tuner.race, compiler=compiler,
                 finalists=finalists, stats=phases, probe=probe)  # fmt: skip
    stats.update(phases)
    stats["total_s"] = round(time.perf_counter() - clock, 3)
    recs = [CandidateRecord(c, Status.ILLEGAL, None, r) for c, r in rejected.items()]
    raced, timings, winner, best_ms = race_outcomes(result, rejected, tuner.policy(tuned), stats)
    recs += raced
    summary = searching.summary(driver, info, winner)
    stats["search"] = summary
    if winner is None and old is not None and old.time_ms is not None and old.config in set(legal):
        winner, best_ms = old.config, old.time_ms  # nothing new could be timed: the stored winner stands
    if st is not None:
        tied = tuple(stats["tie"]["tied"]) if "tie" in stats else ()
        st.record(tkey, recs, winner, ties=[t for t in tied if Config.from_json(t) != winner],
                  provenance={"search": summary})  # fmt: skip
    if winner is None:
        raise NoLegalConfigError(
            f"{name}: no candidate could be timed for key {tuned.key_spec.as_dict(key)} "
            f"(searched {summary['evaluated']} of {len(legal)} legal configs with {summary['strategy']}):\n"
            + format_rejections(rejected)
        )
    source = "timed" if tuner.timer is None else "replayed"
    return Choice(winner, source, f"{best_ms:.4f} ms median; searched {summary['evaluated']} of {len(legal)} "
                  f"configs ({summary['strategy']}, stopped: {summary['stopped']})", stats=stats,
                  timings=timings)  # fmt: skip

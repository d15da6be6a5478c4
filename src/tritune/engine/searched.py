"""Search in the loop: a strategy picks batches, each is compiled and raced, and one race decides them all.

The decorator and ``tritune tune`` run :func:`search_and_race` instead of racing every legal config when
a space is searched (:mod:`tritune.tune.searching` decides when). Each round:

1. the :class:`~tritune.search.SearchDriver` proposes a batch as wide as the compile pool (never a config
   proposed before, never one the static checks rejected: those were left out of the strategy's space);
2. the batch compiles in the engine's workers and its binaries are loaded and checked (the binary screen:
   ``illegal`` for shared memory or registers the GPU refuses, ``compile_failed``, ``incorrect``), exactly
   as in :func:`~tritune.engine.pipeline.compile_and_race`;
3. it races **with the survivors of every earlier batch** (``race(..., prior=)``): they keep their samples,
   eliminated configs keep their outcome, and the winner comes from the race's statistics over the
   finalists of all batches, never from one noisy sample;
4. every outcome (a Measurement with its interval, or a failure) goes back to the strategy.

``finalists`` (the stored winner and ties of an earlier, smaller search of this key) join the first batch
so they race again against the new configs; they are not told to the strategy, which already knows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tritune.bench.timer import ConfigMeasure
from tritune.config import Config
from tritune.engine.job import Compiler
from tritune.engine.pipeline import Prepared, compile_and_race
from tritune.engine.race import RaceOptions, RaceResult
from tritune.engine.sticky import StickyGuard
from tritune.outcome import Status
from tritune.search import SearchDriver


def search_and_race(
    driver: SearchDriver,
    *,
    prepare: Callable[[Config], Prepared],
    measure: ConfigMeasure,
    options: RaceOptions,
    compiler: Compiler | None = None,
    finalists: Sequence[Config] = (),
    stats: dict[str, Any] | None = None,
    on_batch: Callable[[list[Config], RaceResult], Any] | None = None,
    recover: Callable[[], ConfigMeasure] | None = None,
    probe: Callable[[], str | None] | None = None,
    overlap: bool = True,
) -> RaceResult | None:
    """Drive ``driver`` until it stops; returns the race over every config tried (None if none was).

    ``compiler(configs)`` starts a batch's compiles (None: the JIT compiles each at its load). ``stats``
    receives ``batches`` (size and seconds of each) and ``compiled_s`` (the sum of the batches' compile
    phases). ``on_batch(batch, race_so_far)`` hears each finished batch (progress, tests). ``recover`` and
    ``probe``: as :class:`~tritune.engine.job.TuningJob`'s, a sticky CUDA error costs its config only.
    ``overlap``: once half the workers are idle on a batch's last compiles, the next batch is proposed (the
    strategy knows this one's configs as pending) and starts compiling while this one races; otherwise each
    batch waits for its slowest compile with half the pool idle.
    """
    guard = StickyGuard(prepare, measure, recover, probe)
    prepare, measure = guard.prepare, guard.measure
    result: RaceResult | None = None
    extra = list(dict.fromkeys(finalists))
    batches: list[dict[str, Any]] = []
    compiled = 0.0
    ahead: tuple[list[Config], Any] | None = None  # the next batch, its compiles already started

    def start_next() -> None:
        nonlocal ahead
        if overlap and ahead is None and not driver.done:
            nxt = driver.next_batch()
            if nxt:
                ahead = (nxt, compiler(nxt) if compiler is not None else None)

    try:
        while True:
            if ahead is not None:
                (batch, compiling), ahead = ahead, None
            else:
                batch, compiling = driver.next_batch(), None
            todo = batch + [c for c in extra if c not in batch]
            if not todo:
                break
            if compiling is None and compiler is not None:
                compiling = compiler(todo)
            extra = []
            t0 = time.perf_counter()
            phase: dict[str, Any] = {}
            result = compile_and_race(todo, prepare=prepare, measure=measure, options=options, compiling=compiling,
                                      stats=phase, prior=result, on_tail=start_next)  # fmt: skip
            for c in batch:
                o = result.outcome(c)
                ok = o.status is Status.MEASURED and o.measurement is not None
                driver.record(c, o.measurement if ok else (Status.LAUNCH_FAILED if o.status is Status.MEASURED
                                                           else o.status))  # fmt: skip
            compiled += float(phase.get("compiled_s", 0.0))
            batches.append({"configs": len(todo), "s": round(time.perf_counter() - t0, 3),
                            "compiled_s": phase.get("compiled_s"), "leader": None if result.winner is None
                            else result.winner.id})  # fmt: skip
            if on_batch is not None:
                on_batch(todo, result)
    finally:
        if ahead is not None and ahead[1] is not None:
            ahead[1].close()
    if stats is not None:
        stats["batches"] = batches
        stats["compiled_s"] = round(compiled, 3)
    return result

"""What ``@tritune.autotune`` does on a miss: look in the pretuned layer and the store, else race and record.

Lookups never time anything: a hit in a pretuned file (shipped by a kernel library) or in the store
(written by any earlier process) is used directly. Under the interpreter a pretuned entry made on any
device is used, since nothing can be timed here anyway. A miss on a GPU compiles and load-checks every
legal candidate, races those the store has no measurement for, records every outcome, and keeps the
faster of the new race winner and the stored winner: adding a config to the list measures only it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritune.bench import EventTimer, race_tie_report
from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config
from tritune.device import current_target, gpu_unavailable_reason
from tritune.dist.farm import Farm
from tritune.dist.group import rank_and_world
from tritune.dist.search import SharedSearch
from tritune.engine.job import TuningJob, timer_measure
from tritune.engine.pipeline import Prepared, load_binary
from tritune.engine.precompile import Precompiler
from tritune.engine.race import RaceOptions
from tritune.engine.sticky import cuda_context_error
from tritune.errors import NoLegalConfigError
from tritune.outcome import Status
from tritune.screen.specialize import cuda_target, frontend_rejection
from tritune.space.legality import format_rejections
from tritune.store import CandidateRecord

if TYPE_CHECKING:
    from tritune.tune.autotune import Autotuned, Choice


@dataclass
class Tuner:
    """Options of the decorator's tuning: ``store`` (path, Store, or False for none), ``pretuned`` (an export
    file used read-only), ``race`` options, and ``distributed`` (tune across the ranks of a process group)."""

    store: Any = None
    pretuned: str | Path | None = None
    race: RaceOptions = field(default_factory=RaceOptions)
    distributed: bool = False
    #: With ``distributed``: rank 0 re-times the finalists (each rank's winner and ties) on its own GPU and
    #: every rank adopts that answer. Even GPUs of one model differ: two H200s of one host ran the same
    #: matmul 5% apart (run 11), which decided a farmed winner on the slower GPU's medians.
    retime_finalists: bool = True
    precompile: bool = True
    jobs: int | None = None
    #: Seconds a worker may spend compiling one config before it is given up as ``compile_timeout``.
    compile_timeout: float | None = 60.0
    #: For tests of the tuning logic without a GPU: a replay timer (``tritune.bench.ReplayTimer``) whose
    #: ``measure_config`` replaces GPU timing. Choices it makes are labelled ``replayed``, never ``timed``.
    timer: Any = None
    #: The measurement policy (``"cold"``, ``"warm"``, ``"graph"``; :mod:`tritune.measure`); None: the
    #: run's ``$TRITUNE_MEASURE``, else cold. Part of the store key: a winner timed one way is not reused for another.
    measure: str | None = None
    #: Search instead of racing every legal config (:mod:`tritune.tune.searching`): None or ``"auto"`` searches
    #: spaces above its threshold (``$TRITUNE_SEARCH`` decides when set), ``"exhaustive"`` never, a strategy
    #: name always. With ``distributed`` the ranks share one search (:mod:`tritune.dist.search`).
    search: str | None = None
    #: The search's budget: a fraction of the legal configs (``"10%"``, ``0.1``), a count (``200``) or seconds
    #: (``"30s"``); None: the default of :mod:`tritune.tune.searching`.
    budget: Any = None
    _store: Any = field(default=None, init=False, repr=False)
    _pretuned: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from tritune.tune.searching import plan

        plan(self.search, self.budget, 0, where="tritune.autotune")  # a bad name or budget fails at decoration

    def _open_store(self) -> Any:
        if self.store is False:
            return None
        if self._store is None:
            from tritune.store import Store, open_store

            self._store = self.store if isinstance(self.store, Store) else open_store(self.store)
        return self._store

    def open_pretuned(self) -> Any:
        """The pretuned layer, read on first use; the decorator calls this at decoration, so that a missing
        or malformed file is an error there and not at the first call."""
        return self._open_pretuned()

    def check_pretuned(self, tuned: Autotuned) -> None:
        """At decoration: one warning when the pretuned file can serve this kernel no key at all (no entry under
        its name, or entries made from another version of its source), instead of silently tuning every key."""
        import warnings

        from tritune.tune.autotune import PretunedIgnoredWarning

        pre = self._open_pretuned()
        if pre is None:
            return
        name, mine = tuned.info.name, pre.entries(tuned.info.name)
        if not mine:
            others = sorted({e.key.kernel for e in pre.entries()})
            held = f"it holds entries for {', '.join(others[:8])}" if others else "it holds no entries"
            msg = f"the pretuned file {self.pretuned} holds no entries for this kernel ({held})"
        elif not any(e.key.source_hash == tuned.info.source_hash for e in mine):
            msg = (f"the pretuned file {self.pretuned} holds {len(mine)} entries for this kernel, all made from "
                   "another version of its source (it, or a function it calls, changed since)")
        else:
            return
        warnings.warn(f"{name}: {msg}: none can be served, and every key is tuned as if there were no file. "
                      "Regenerate the file with `tritune cache export`.", PretunedIgnoredWarning, stacklevel=3)

    def _unmatched_pretuned(self, pre: Any, tuned: Autotuned, tkey: Any, key: tuple[Any, ...]) -> None:
        """A miss in the pretuned file although it has entries for this source and key values: say which part of
        the key differs (dtypes, buckets, measure policy, GPU capability), once per kernel."""
        from tritune.tune.autotune import PretunedIgnoredWarning

        near = [e.key for e in pre.entries(tuned.info.name)
                if e.winner is not None and e.key.source_hash == tkey.source_hash and e.key.key == tkey.key]
        if not near:
            return
        fields = ["dtypes", "buckets", "measure"] + ([] if tkey.capability == "interpreter" else ["capability"])
        diff = [f"{f} {getattr(near[0], f)} (this call: {getattr(tkey, f)})" for f in fields
                if getattr(near[0], f) != getattr(tkey, f)]
        tuned.warn_once(
            "pretuned-unmatched-key",
            f"{tuned.info.name}: the pretuned file {self.pretuned} has {len(near)} entries for key "
            f"{tuned.key_spec.as_dict(key)}, made for other {', '.join(diff) or 'key fields'}; they are ignored "
            "and the key is tuned as if it had no entry.",
            PretunedIgnoredWarning,
        )

    def _open_pretuned(self) -> Any:
        if self.pretuned is None:
            return None
        if self._pretuned is None:
            from tritune.store import PretunedStore

            self._pretuned = PretunedStore(self.pretuned)
        return self._pretuned

    def tuning_key(self, tuned: Autotuned, key: tuple[Any, ...], *, interpreter: bool) -> Any:
        from tritune.store import INTERPRETER, make_key

        spec = tuned.key_spec
        names = spec.names
        values = dict(zip(names, key[: len(names)]))
        buckets = {n: getattr(b, "name", "exact") for n, b in zip(names, spec.buckets)}
        dev = (INTERPRETER, INTERPRETER) if interpreter else None
        dtypes = tuple(str(d) for d in key[len(names):])
        return make_key(tuned.info, values, buckets=buckets, dtypes=dtypes, device=dev, measure=self.policy(tuned))

    def policy(self, tuned: Autotuned) -> Any:
        from tritune.bench import resolve_policy

        return resolve_policy(kernel=self.measure, kernel_name=tuned.info.name)

    def lookup(self, tuned: Autotuned, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
               allowed: Sequence[Config] | None = None) -> Choice | None:  # fmt: skip
        """A pretuned or stored winner for ``key``, served only if it is among ``allowed`` (this call's pruned,
        legal candidates; default: every candidate). A pretuned winner outside them is ignored, with one warning."""
        from tritune.tune.autotune import Choice, PretunedIgnoredWarning

        interp = gpu_unavailable_reason() is not None
        tkey = self.tuning_key(tuned, key, interpreter=interp)
        legal = set(tuned.candidates if allowed is None else allowed)
        pre = self._open_pretuned()
        if pre is not None:
            hit = pre.resolve(tkey)  # exact key, else the same source/key/dtypes on a compatible device
            if hit is not None and hit.config in legal:
                return Choice(hit.config, "pretuned", f"{self.pretuned} ({hit.key.device})")
            if hit is None:
                self._unmatched_pretuned(pre, tuned, tkey, key)
            else:
                tuned.warn_once(
                    "pretuned-ignored",
                    f"{tuned.info.name}: the pretuned winner {hit.config.id} in {self.pretuned} for key "
                    f"{tuned.key_spec.as_dict(key)} is not among this call's candidates after pruning and the "
                    "checks made before launch; it is ignored and the key is tuned as if it had no entry. "
                    "Regenerate the pretuned file for the current configs.",
                    PretunedIgnoredWarning,
                )
        if interp and self.timer is None:
            return None
        st = self._open_store()
        found: Config | None = None
        if st is not None:
            hit = st.lookup_winner(tkey)
            if hit is not None and hit.config in legal and (
                not st.missing(tkey, tuned.candidates) or self._searched_enough(tuned, hit, st, tkey, legal)
            ):
                found = hit.config
        if self.distributed and rank_and_world()[1] > 1:
            from tritune.dist import agree_on_cached

            # One rank's hit is every rank's hit: no rank tunes alone while the others wait.
            found = agree_on_cached(_label(tuned, key), found)
        return Choice(found, "store", "stored winner") if found is not None else None

    def _searched_enough(self, tuned: Autotuned, hit: Any, st: Any, tkey: Any, legal: set[Config]) -> bool:
        """A stored winner of a search serves a lookup when this tuner would search too, within what was spent."""
        from tritune.tune.searching import plan, searched_enough

        p = plan(self.search, self.budget, len(legal), where=tuned.info.name)
        return p is not None and searched_enough(p, hit, len(st.candidates(tkey, legal)), len(legal))

    def tune(self, tuned: Autotuned, key: tuple[Any, ...], legal: list[Config], rejected: dict[Config, str],
             args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Choice:
        from tritune.tune.autotune import Choice
        from tritune.tune.searching import plan
        from tritune.tune.simple import candidate_call

        st = self._open_store()
        p = plan(self.search, self.budget, len(legal), where=tuned.info.name)
        gpu = gpu_unavailable_reason() is None
        tkey = self.tuning_key(tuned, key, interpreter=not gpu)
        clock = time.perf_counter()
        policy = self.policy(tuned)
        stats: dict[str, Any] = {"candidates": len(legal), "measure": policy.value}
        todo = list(legal) if self.distributed or st is None else st.missing(tkey, legal)
        asked = set(todo)  # every one of these gets a record, failures included
        if p is not None:  # searched: the front end's check (replay mode) runs on each proposed config only
            todo = []
        if not gpu:  # replay mode: the compiler front end stands in for the compile-and-load check
            for cfg in todo:
                why_not = frontend_rejection(tuned.fn, args, cfg, cuda_target(90),
                                             tuned.launch_kwargs(cfg, args, kwargs))
                if why_not is not None:
                    rejected[cfg] = why_not
            todo = [c for c in todo if c not in rejected]
        cleanups = []
        named = tuned._named(args, kwargs)
        saved = {n: named[n].clone() for n in tuned.restore_value if named.get(n) is not None}  # before any run

        def make_fn(cfg: Config) -> Callable[[], object]:
            call, cleanup = candidate_call(tuned, cfg, args, kwargs, grid, saved)
            cleanups.append(cleanup)
            return call

        def prepare(cfg: Config) -> Prepared:
            if not gpu:
                if p is None:
                    return None
                why = frontend_rejection(tuned.fn, args, cfg, cuda_target(90), tuned.launch_kwargs(cfg, args, kwargs))
                return None if why is None else Failure(Status.ILLEGAL, why)
            if cfg.pre_hook is not None:  # as Triton: it may set what the compile depends on (a descriptor's block)
                cfg.pre_hook({**named, **cfg.kwargs, **cfg.launch_options()})
            return load_binary(tuned._launcher(), tuned.info.name, cfg, args, kwargs, grid)

        if self.timer is None and tuned.do_bench is not None:
            measure: ConfigMeasure = _UserBench(tuned.do_bench, make_fn)
        else:
            lazy = timer_measure(self.timer, make_fn, self.race.rel_tol, lambda: EventTimer.for_policy(policy))
            if gpu and (todo or p is not None):
                lazy.start()  # the timer's flush buffer and the clocks' warm-up beside the compiles (as tune_key)
            measure = lazy
        compiler = None
        if gpu and self.precompile:  # in workers, slowest first (stacked heuristics' values computed here)
            jit, kwargs_for = tuned.compile_plan(args, kwargs)
            compiler = Precompiler(jit, args, kwargs, current_target(), self.jobs or None, self.compile_timeout,
                                   kwargs_for)  # fmt: skip
        if p is not None:
            from tritune.tune.search_tuner import search_tune

            shared = None
            if self.distributed and rank_and_world()[1] > 1:  # the ranks share one search, rank 0's store
                shared = SharedSearch.create(None, f"{_label(tuned, key)} (search: {p.strategy}, budget "
                                             f"{p.budget or 'default'})", legal,
                                             retime_finalists=self.retime_finalists)  # fmt: skip
                st = st if shared.rank == 0 else None
            try:
                return search_tune(self, tuned, key, p, legal, rejected, prepare, measure, compiler, st, tkey,
                                   stats, clock, cuda_context_error if gpu else None, shared)  # fmt: skip
            finally:
                for c in cleanups:
                    c()
        # Each rank compiles and races its own share; the shares' outcomes are merged on every rank.
        job = TuningJob(_label(tuned, key), tuple(todo), prepare, measure, self.race, compiler,
                        Farm() if self.distributed else None, retime_finalists=self.retime_finalists,
                        stats=stats, probe=cuda_context_error if gpu else None)  # fmt: skip
        stats["setup_s"] = round(time.perf_counter() - clock, 3)  # screen, store read, compiles submitted
        result = job.run()
        for c in cleanups:
            c()
        stats["total_s"] = round(time.perf_counter() - clock, 3)
        recs = [CandidateRecord(c, Status.ILLEGAL, None, r) for c, r in rejected.items() if c in asked]
        raced, timings, winner, best_ms = race_outcomes(result, rejected, policy, stats)
        recs += raced
        if st is not None and not self.distributed:
            old = st.lookup_winner(tkey)
            if old is not None and old.time_ms is not None and (best_ms is None or old.time_ms <= best_ms):
                winner, best_ms = old.config, old.time_ms
        if st is not None and (not self.distributed or rank_and_world()[0] == 0):
            tied = tuple(stats["tie"]["tied"]) if "tie" in stats else ()
            st.record(tkey, recs, winner, ties=[t for t in tied if Config.from_json(t) != winner])
        if winner is None:
            raise NoLegalConfigError(
                f"{tuned.info.name}: no candidate could be timed for key {tuned.key_spec.as_dict(key)}:\n"
                + format_rejections(rejected)
            )
        source = "timed" if self.timer is None else "replayed"
        return Choice(winner, source, f"{best_ms:.4f} ms median", stats=stats, timings=timings)


def race_outcomes(result: Any, rejected: dict[Config, str], policy: Any, stats: dict[str, Any],
                  ) -> tuple[list[CandidateRecord], dict[Config, list[float]], Config | None, float | None]:  # fmt: skip
    """What a race (None: nothing raced) gives a key's tuning: a store record per outcome, the measured
    configs' [median, q1, q3] ms, the winner (the tie rule's pick among equals; None when nothing was timed)
    and its median. Adds every failed outcome's reason to ``rejected`` and the race and tie to ``stats``."""
    recs: list[CandidateRecord] = []
    timings: dict[Config, list[float]] = {}
    winner, best_ms = None, None
    if result is None:
        return recs, timings, winner, best_ms
    stats["race"] = {"stop": result.stop, "rounds": result.rounds, "measurements": result.measurements,
                     "device_s": round(result.device_s, 3), "ties": [c.id for c in result.ties]}
    for o in result.outcomes:
        m = o.measurement
        ok = o.status is Status.MEASURED and m is not None
        if not ok:
            rejected[o.config] = o.reason or o.status.value
        recs.append(CandidateRecord(o.config, o.status, m.median_ms if ok and m is not None else None, o.reason,
                                    m.to_json() if ok and m is not None else None))
        if ok and m is not None:
            timings[o.config] = [m.median_ms, m.q1_ms, m.q3_ms]
    tie = race_tie_report(result, policy)
    if tie is not None:
        stats["tie"] = tie.to_json()
    if tie is not None and result.winner_measurement is not None:  # the tie rule's pick among equals
        winner = tie.picked
        picked = result.outcome(winner).measurement
        best_ms = picked.median_ms if picked is not None else None
    return recs, timings, winner, best_ms


@dataclass
class _UserBench:
    """The race's measure from a user's ``do_bench(fn) -> ms`` (triton.autotune's hook): one sample per call."""

    do_bench: Any
    make_fn: Any
    _fns: dict[Config, Any] = field(default_factory=dict)

    def __call__(self, config: Config, budget_s: float) -> Any:
        from tritune.bench import Failure, Measurement

        if config not in self._fns:
            self._fns[config] = self.make_fn(config)
        try:
            t = self.do_bench(self._fns[config])
        except Exception as e:
            return Failure(Status.LAUNCH_FAILED, f"{config.id}: {type(e).__name__}: {e}")
        ms = float(t[0] if isinstance(t, (list, tuple)) else t)
        return Measurement.from_samples([ms], stop="budget")


def _label(tuned: Autotuned, key: tuple[Any, ...]) -> str:
    return f"{tuned.info.name} {tuned.key_spec.as_dict(key)}"

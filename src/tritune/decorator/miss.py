"""What ``@tritune.autotune`` does on a miss: look in the pretuned layer and the store, else tune the key through
the engine's one key pipeline (:func:`tritune.engine.key.tune_key`).

Lookups never time anything: a hit in a pretuned file (shipped by a kernel library) or in the store (written by any
earlier process) is used directly. Under the interpreter a pretuned entry made on any device is used, since nothing
can be timed here anyway. A miss on a GPU compiles and load-checks every legal candidate, races those the store has
no measurement for, records every outcome, and keeps the faster of the new race winner and the stored winner: adding
a config to the list measures only it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritune.config import Config
from tritune.decorator.choice import Choice, PretunedIgnoredWarning
from tritune.decorator.timing import candidate_call, output_check
from tritune.decorator.tuned import TunedKernel
from tritune.decorator.untuned import front_end_rejection
from tritune.device import gpu_unavailable_reason
from tritune.errors import ConfigError, NoLegalConfigError

if TYPE_CHECKING:
    from tritune.engine.options import TuneOptions


class KeyTuner:
    """The decorator's tuning of its keys: ``options`` (how a key is tuned; None: the defaults), ``store`` (a path, a
    Store, or False for none; None: the default store), ``pretuned`` (an export file used read-only),
    ``distributed`` (tune across the ranks of a process group) and ``timer`` (for tests of the tuning logic without a
    GPU: a replay timer whose ``measure_config`` replaces GPU timing; its choices are labelled ``replayed``, never
    ``timed``). ``served``: the kernel tunes while serving, so a winner its serving mode promoted in an earlier
    process (a ``served`` key: timed on real calls) is looked up first."""

    def __init__(self, options: TuneOptions | None = None, store: Any = None, pretuned: str | Path | None = None,
                 distributed: bool = False, timer: Any = None, served: bool = False, pinned: bool | None = None,
                 sensitivity: int | None = None) -> None:  # fmt: skip
        self._options = options
        self.store = store
        self.pretuned = pretuned
        self.distributed = distributed
        self.timer = timer
        self.served = served
        #: Pinned: no timing at all. The pretuned table decides; a key it does not hold runs the first legal config
        #: (the stated rule), never a timed choice. None: ``$TRITUNE_PINNED``.
        self.pinned = pinned
        #: Sensitivity: a key missing from the pretuned table runs a legal config drawn reproducibly from this seed,
        #: the rank, the kernel and the key, among those whose outputs agree with the first legal config's; nothing
        #: is timed. None: ``$TRITUNE_SENSITIVITY`` (an integer seed), else off.
        self.sensitivity = sensitivity
        self._store: Any = None
        self._pretuned: Any = None
        self._check_modes()

    @property
    def options(self) -> TuneOptions:
        """How a key is tuned. The defaults are made at the first read, not at decoration: importing the engine's
        options costs more than the rest of a decoration, and a library under the switch decorates hundreds of
        kernels at import."""
        if self._options is None:
            from tritune.engine.options import TuneOptions

            self._options = TuneOptions()
        return self._options

    def _check_modes(self) -> None:
        """``pinned`` and ``sensitivity`` from the environment where not given, and refused together."""
        import os

        if self.pinned is None:
            self.pinned = os.environ.get("TRITUNE_PINNED", "").strip().lower() in ("1", "true", "yes", "on")
        if self.pretuned is None and os.environ.get("TRITUNE_PRETUNED", "").strip():
            self.pretuned = os.environ["TRITUNE_PRETUNED"].strip()  # the switch's way to a pinned table
        if self.sensitivity is None and os.environ.get("TRITUNE_SENSITIVITY", "").strip():
            text = os.environ["TRITUNE_SENSITIVITY"].strip()
            try:
                self.sensitivity = int(text)
            except ValueError:
                raise ConfigError(f"$TRITUNE_SENSITIVITY={text!r} must be an integer seed") from None
        if self.pinned and self.sensitivity is not None:
            raise ConfigError("pinned and sensitivity exclude each other: a pinned run computes the table's choices")

    def open_store(self) -> Any:
        """The kernel's store, opened at its first use; fail-safe: a store that is damaged, locked by another
        process, on a full disk or refused never makes a kernel call fail (one warning; results stay in memory)."""
        if self.store is False:
            return None
        if self._store is None:
            from tritune.store import FailSafeStore, Store, open_store

            self._store = (FailSafeStore(self.store) if isinstance(self.store, Store)
                           else open_store(self.store, tolerant=True))  # fmt: skip
        return self._store

    def open_pretuned(self) -> Any:
        """The pretuned layer, read on first use; the decorator calls this at decoration, so that a missing
        or malformed file is an error there and not at the first call."""
        if self.pretuned is None:
            return None
        if self._pretuned is None:
            self._pretuned = _read_pretuned(Path(self.pretuned))
        return self._pretuned

    def check_pretuned(self, tuned: TunedKernel) -> None:
        """At decoration: one warning when the pretuned file can serve this kernel no key at all (no entry under
        its name, or entries made from another version of its source), instead of silently tuning every key."""
        pre = self.open_pretuned()
        if pre is None:
            return
        mine = pre.entries(tuned.info.name)
        if not mine:
            others = sorted({e.key.kernel for e in pre.entries()})
            held = f"it holds entries for {', '.join(others[:8])}" if others else "it holds no entries"
            msg = f"the pretuned file {self.pretuned} holds no entries for this kernel ({held})"
        elif not any(e.key.source_hash == tuned.info.source_hash for e in mine):
            msg = (f"the pretuned file {self.pretuned} holds {len(mine)} entries for this kernel, all made from "
                   "another version of its source (it, or a function it calls, changed since)")
        else:
            return
        warnings.warn(f"{tuned.info.name}: {msg}: none can be served, and every key is tuned as if there were no "
                      "file. Regenerate the file with `tritune cache export`.", PretunedIgnoredWarning,
                      stacklevel=3)  # fmt: skip

    def _unmatched_pretuned(self, pre: Any, tuned: TunedKernel, tkey: Any, key: tuple[Any, ...]) -> None:
        """A miss in the pretuned file although it has entries for this source and key values: say which part of
        the key differs (dtypes, buckets, measure policy, GPU capability), once per kernel."""
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

    def tuning_key(self, tuned: TunedKernel, key: tuple[Any, ...], *, interpreter: bool, measure: Any = None) -> Any:
        """The store key of ``key``: its bucketed values (of the names the call passed), dtypes, device and the
        measurement policy in force (or ``measure``)."""
        from tritune.store import INTERPRETER, make_key

        spec = tuned.key_spec
        names = spec.names
        values = spec.as_dict(key)
        buckets = {n: getattr(b, "name", "exact") for n, b in zip(names, spec.buckets) if n in values}
        dev = (INTERPRETER, INTERPRETER) if interpreter else None
        dtypes = tuple(str(d) for d in key[len(names):])
        return make_key(tuned.info, values, buckets=buckets, dtypes=dtypes, device=dev,
                        measure=measure if measure is not None else self.options.policy(tuned.info.name),
                        numerics=self.options.numerics or "any")  # fmt: skip

    def lookup(self, tuned: TunedKernel, key: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
               allowed: Sequence[Config] | None = None) -> Choice | None:  # fmt: skip
        """A pretuned or stored winner for ``key``, served only if it is among ``allowed`` (this call's pruned,
        legal candidates; default: every candidate). A pretuned winner outside them is ignored, with one warning."""
        interp = gpu_unavailable_reason() is not None
        tkey = self.tuning_key(tuned, key, interpreter=interp)
        legal = set(tuned.candidates if allowed is None else allowed)
        pre = self.open_pretuned()
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
        if self.pinned:  # the table decided nothing for this key: the stated rule, never a timed choice
            ordered = list(tuned.candidates if allowed is None else allowed)
            if not ordered:
                return None
            return Choice(ordered[0], "pinned", "no entry in the pinned table: the first legal config")
        if self.sensitivity is not None:
            return None  # never the store's timed winner: the caller draws (sensitive_pick)
        if interp and self.timer is None:
            return None
        st = self.open_store()
        found: Config | None = None
        if st is not None and self.served:
            from tritune.measure import MeasurePolicy

            hit = st.lookup_winner(self.tuning_key(tuned, key, interpreter=interp, measure=MeasurePolicy.SERVED))
            found = hit.config if hit is not None and hit.config in legal else None
        if st is not None and found is None:
            hit = st.lookup_winner(tkey)
            if hit is not None and hit.config in legal and (
                not st.missing(tkey, tuned.candidates) or self._searched_enough(tuned, hit, st, tkey, legal)
            ):
                found = hit.config
        if self.distributed:
            from tritune.ranks import agree_on_cached, rank_and_world

            if rank_and_world()[1] > 1:  # one rank's hit is every rank's hit: no rank tunes alone
                found = agree_on_cached(_label(tuned, key), found)
        return Choice(found, "store", "stored winner") if found is not None else None

    def pretuned_disagrees(self, tuned: TunedKernel, key: tuple[Any, ...], cfg: Config, legal: Sequence[Config],
                           args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any, then: str) -> bool:  # fmt: skip
        """Whether a pretuned winner must not serve this key: its outputs on this call differ from those of the first
        legal config beyond the output dtype's tolerance (a file made for another version of the kernel, or written
        by someone else); then one warning says so, and ``then`` what happens instead. Both run on fresh copies of
        the call's arguments, once per key and process (the key's choice is kept)."""
        from tritune.decorator.timing import checked_call
        from tritune.verify.reference import ReferenceRun

        if not legal or cfg == legal[0]:
            return False
        run = ReferenceRun(*checked_call(tuned, args, kwargs, grid))
        run.set_reference(legal[0])
        got = run.check(cfg)
        if got.close:
            return False
        tuned.warn_once(f"pretuned-wrong-{cfg.id}",
                        f"{tuned.info.name}: the pretuned winner {cfg.id} for key {tuned.key_spec.as_dict(key)} "
                        f"computes other results than {legal[0].id} on this call ({got.reason}); it is ignored and "
                        f"{then}. Check who wrote the pretuned file, or regenerate it (`tritune cache export`, or "
                        "`tritune pin merge` for a pinned table).", PretunedIgnoredWarning)  # fmt: skip
        return True

    def sensitive_pick(self, tuned: TunedKernel, key: tuple[Any, ...], legal: Sequence[Config], args: Sequence[Any],
                       kwargs: Mapping[str, Any], grid: Any) -> Choice:  # fmt: skip
        """Sensitivity mode's choice (:attr:`sensitivity`): configs in an order drawn from the seed, the rank, the
        kernel and the key; the first whose outputs agree with the first legal config's within the output's tolerance
        (a correct config; each checked on copies of the call's arguments) runs. Reproducible, untimed."""
        import hashlib

        from tritune.decorator.timing import checked_call
        from tritune.ranks.group import rank_and_world
        from tritune.verify.reference import ReferenceRun

        if not legal:
            raise NoLegalConfigError(f"{tuned.info.name}: no legal config for key {tuned.key_spec.as_dict(key)}")
        rank = rank_and_world()[0]
        text = f"{self.sensitivity}|{rank}|{tuned.info.name}|{tuned.key_spec.public(key)!r}"
        start = int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(legal)
        order = [*legal[start:], *legal[:start]]
        run = ReferenceRun(*checked_call(tuned, args, kwargs, grid))
        run.set_reference(legal[0])
        for cfg in order:
            if run.check(cfg).close:
                return Choice(cfg, "sensitivity", f"seed {self.sensitivity}, rank {rank}: drawn among the configs "
                                                  f"that agree with {legal[0].id}")  # fmt: skip
        return Choice(legal[0], "sensitivity", f"seed {self.sensitivity}: no other config agrees; the first legal")

    def _searched_enough(self, tuned: TunedKernel, hit: Any, st: Any, tkey: Any, legal: set[Config]) -> bool:
        """A stored winner of a search serves a lookup when this tuner would search too, within what was spent."""
        from tritune.engine.plan import searched_enough

        p = self.options.plan(len(legal), where=tuned.info.name, widened=bool(_origins(tuned, legal)))
        return p is not None and searched_enough(p, hit, len(st.candidates(tkey, legal)), len(legal))

    def tune(self, tuned: TunedKernel, key: tuple[Any, ...], legal: list[Config], rejected: dict[Config, str],
             args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Choice:
        """Tune ``key`` through the engine (module docstring): this call's arguments, its legal candidates and how
        one config is loaded and timed, handed to :func:`~tritune.engine.key.tune_key`."""
        from tritune.bench import EventTimer, Failure
        from tritune.device import current_target
        from tritune.engine.aside import Later
        from tritune.engine.key import KeyJob, tune_key
        from tritune.engine.pipeline import Prepared, after_compiles, load_binary
        from tritune.engine.precompile import Precompiler
        from tritune.engine.sticky import cuda_context_error
        from tritune.engine.timing import timer_measure
        from tritune.outcome import Status

        gpu = gpu_unavailable_reason() is None
        tkey = self.tuning_key(tuned, key, interpreter=not gpu)
        cleanups: list[Callable[[], None]] = []
        named = tuned.named_args(args, kwargs)
        saved = {n: named[n].clone() for n in tuned.restore_value if named.get(n) is not None}  # before any run

        def make_fn(cfg: Config) -> Callable[[], object]:
            call, cleanup = candidate_call(tuned, cfg, args, kwargs, grid, saved)
            cleanups.append(cleanup)
            return call

        exact = self.options.numerics == "exact"
        generated = tuned.generated
        numerics = output_check(tuned, legal, args, kwargs, grid, exact=exact)

        def prepare(cfg: Config) -> Prepared:
            got: Prepared
            if not gpu:  # replay mode: the compiler front end (after the config's pre_hook) stands in for the compile
                why = front_end_rejection(tuned, cfg, args, kwargs)
                got = None if why is None else Failure(Status.ILLEGAL, why)
            else:
                if cfg.pre_hook is not None:  # as Triton: it may set what the compile depends on (a descriptor's block)
                    cfg.pre_hook({**named, **cfg.kwargs, **cfg.launch_options()})
                got = load_binary(tuned.launcher(), tuned.info.name, cfg, args, kwargs, grid)
            if numerics is not None and not isinstance(got, Failure):
                bad = numerics.check(cfg)
                return Failure(*bad) if bad is not None else got
            return got

        opts = self.options
        policy = tkey.measure
        measure = timer_measure(self.timer, make_fn, opts.race.rel_tol, lambda: EventTimer.for_policy(policy))
        compiler: Callable[[Sequence[Config]], Any] | None = None
        if gpu and opts.precompile:  # in workers, slowest first (stacked heuristics' values computed here)
            jit, kwargs_for = tuned.compile_plan(args, kwargs)
            compiler = Precompiler(jit, args, kwargs, current_target(), opts.jobs, opts.compile_timeout, kwargs_for)
        # the check's perturbed inputs and its comparison's device code, on a helper thread (OutputCheck.prepare)
        prep = Later(numerics.prepare, name="tritune-check-prep") if numerics is not None else None
        if gpu and legal:  # the timer's flush buffer and the clocks' warm-up, and the check's preparation, beside the
            compiler = after_compiles(compiler, measure.start, *([prep.start] if prep else []))  # compiles
        farm = None
        if self.distributed:
            from tritune.ranks import Farm, rank_and_world

            farm = Farm() if rank_and_world()[1] > 1 else None
        written = tuple(c for c in legal if c not in generated) if generated else ()
        # a generated winner is timed again with the L2 warm against the best written config (tritune.engine.warm):
        # on a GPU with a second, unflushed timer; a FAKE or replay timer may bring its own (``measure_config_warm``)
        measure_warm = None
        if written and policy.flush_l2 and (gpu or self.timer is not None):
            measure_warm = (getattr(self.timer, "measure_config_warm", None) if self.timer is not None else
                            timer_measure(None, make_fn, opts.race.rel_tol, lambda: EventTimer.for_policy("warm")))
        job = KeyJob(_label(tuned, key), tkey, tuple(legal), prepare, measure, compiler, rejected,
                     probe=cuda_context_error if gpu else None, include=written, measure_warm=measure_warm,
                     origins=_origins(tuned, legal))  # fmt: skip
        stats: dict[str, Any] = {"candidates": len(legal), "measure": tkey.measure.value}
        try:
            got = tune_key(job, opts, store=self.open_store(), farm=farm, reuse=True, stats=stats)
        finally:
            for c in cleanups:
                c()
            if prep is not None:  # (what fails there is the check's to say: OutputCheck.broken)
                prep.join()
        rejected.update(got.failures)
        if numerics is not None:
            stats["numerics" if exact else "checked"] = numerics.summary()
        if tuned.space_report is not None and got.timings:
            stats["space"] = space_summary(tuned.space_report, legal, generated, got.timings, got.winner)
        if got.winner is None:
            searched = (f" (searched {got.search['evaluated']} of {len(legal)} legal configs with "
                        f"{got.search['strategy']})") if got.search else ""  # fmt: skip
            from tritune.space.legality import format_rejections

            raise NoLegalConfigError(f"{tuned.info.name}: no candidate could be timed for key "
                                     f"{tuned.key_spec.as_dict(key)}{searched}:\n" + format_rejections(rejected))  # fmt: skip
        if got.source == "store" and got.race is None:
            why = "the budget was spent by earlier runs" if got.search is not None else "nothing left to time"
            return Choice(got.winner, "store", f"stored winner ({why})", stats=stats)
        source = "timed" if self.timer is None else "replayed"
        detail = f"{got.best_ms:.4f} ms median" if got.best_ms is not None else "stored winner"
        if got.search is not None:
            detail += (f"; searched {got.search['evaluated']} of {len(legal)} configs ({got.search['strategy']}, "
                       f"stopped: {got.search['stopped']})")  # fmt: skip
        return Choice(got.winner, source, detail, stats=stats, timings=_quantiles(got))


def _quantiles(got: Any) -> dict[Config, list[float]]:
    """Each measured config's ``[median, 20th, 80th percentile]`` ms (Triton's quantiles), from the race's samples."""
    from tritune.outcome import Status

    if got.race is None:
        return dict(got.timings)
    return {o.config: o.measurement.triton_quantiles() for o in got.race.outcomes
            if o.status is Status.MEASURED and o.measurement is not None}  # fmt: skip


def _origins(tuned: TunedKernel, legal: Collection[Config]) -> dict[Config, tuple[Config, ...]]:
    """A widened list's legal generated configs, each with the configs one step nearer the list (empty for a list as
    written, or a derived space): what the key's search goes outward by (:mod:`tritune.search.rings`)."""
    near = tuned.generated_origins
    return {c: near[c] for c in legal if c in near} if near else {}


def _label(tuned: TunedKernel, key: tuple[Any, ...]) -> str:
    return f"{tuned.info.name} {tuned.key_spec.as_dict(key)}"


def space_summary(report: Mapping[str, Any], legal: Sequence[Config], generated: Mapping[Config, str],
                  timings: Mapping[Config, list[float]], winner: Config | None) -> dict[str, Any]:
    """How the space was made and what it bought: the generated configs timed, the winner against the best config of
    the list anyone wrote (or, for a derived space, the reference), both measured in the same race."""
    out = {k: v for k, v in report.items()}
    out["legal"] = len(legal)
    out["generated_legal"] = sum(1 for c in legal if c in generated)
    out["generated_timed"] = sum(1 for c in timings if c in generated)  # (a widened list's: only near the best)
    written = [c for c in legal if c not in generated and c in timings] or ([legal[0]] if legal[0] in timings else [])
    if written and winner is not None and winner in timings:
        best = min(written, key=lambda c: timings[c][0])
        out["best_written"] = {"config": best.id, "ms": timings[best][0]}
        out["winner_generated"] = winner in generated
        out["winner_over_best_written"] = timings[winner][0] / timings[best][0]
    return out


def _read_pretuned(path: Path) -> Any:
    """The :class:`~tritune.store.PretunedStore` of ``path``, read once per version of the file for every kernel
    of the process (under the switch, one ``$TRITUNE_PRETUNED`` table serves a library's hundreds of kernels)."""
    try:
        st = path.stat()
        version: tuple[Any, ...] = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:  # a missing file: PretunedStore says so
        version = (str(path),)
    return _pretuned_cached(version, path)


@functools.lru_cache(maxsize=8)
def _pretuned_cached(version: tuple[Any, ...], path: Path) -> Any:
    from tritune.store import PretunedStore

    return PretunedStore(path)

"""What one timing run of a decorated kernel does: the timed call.

``candidate_call`` builds the zero-argument function a timer runs for one config with the order of
``triton.autotune``'s benchmark run: the config's ``pre_hook``, the kernel's ``pre_hook`` (by default the
one that zeroes ``reset_to_zero`` and snapshots ``restore_value``), the launch, then the kernel's
``post_hook`` (by default the restore), so in-place kernels are not corrupted by timing runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tritune.config import Config
from tritune.decorator.choice import Choice
from tritune.decorator.tuned import TunedKernel


def candidate_call(
    tuned: TunedKernel,
    cfg: Config,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    grid: Any,
    saved: Mapping[str, Any] | None = None,
) -> tuple[Callable[[], None], Callable[[], None]]:
    """(call, cleanup): ``call`` runs one timed launch with the hooks; ``cleanup`` restores saved values.

    ``saved`` holds the ``restore_value`` arguments as they were before ANY candidate ran; ``cleanup`` puts
    them back once the race is over, whatever the hooks did (a user ``post_hook`` replaces the restore).
    """
    named = tuned.named_args(args, kwargs)
    if saved is None:
        saved = {n: named[n].clone() for n in tuned.restore_value if named.get(n) is not None}
    jit = tuned.launcher()
    opts = cfg.launch_options()
    full = {**named, **cfg.kwargs, **opts}

    def call() -> None:
        if cfg.pre_hook is not None:
            cfg.pre_hook(full)
        tuned.pre_hook(full)
        try:
            jit.run(*args, grid=grid, warmup=False, **kwargs, **cfg.kwargs, **opts)
        except Exception as e:
            try:
                tuned.post_hook(full, exception=e)
            finally:
                raise
        tuned.post_hook(full, exception=None)

    def cleanup() -> None:
        for n, v in saved.items():
            named[n].copy_(v)

    return call, cleanup


def run_once(tuned: TunedKernel, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> None:
    """Launch ``cfg`` once on ``args`` as a benchmark run starts: the config's ``pre_hook``, the kernel's
    ``pre_hook`` (by default: the ``reset_to_zero`` arguments zeroed), the launch. For runs on scratch copies of the
    call's arguments (a reference check), so the ``post_hook`` (by default: the ``restore_value`` arguments put back)
    does not run: it would undo what the run wrote."""
    named = tuned.named_args(args, kwargs)
    opts = cfg.launch_options()
    full = {**named, **cfg.kwargs, **opts}
    if cfg.pre_hook is not None:
        cfg.pre_hook(full)
    tuned.pre_hook(full)
    tuned.launcher().run(*args, grid=grid, warmup=False, **kwargs, **cfg.kwargs, **opts)


def checked_call(tuned: TunedKernel, args: Sequence[Any], kwargs: Mapping[str, Any],
                 grid: Any) -> tuple[Callable[[Config, list[Any]], None], list[Any], list[str]]:  # fmt: skip
    """A call as the output checks see it, in :class:`~tritune.verify.reference.ReferenceRun`'s order: a launch of a
    config on a list of arguments (:func:`run_once`) that passes each one back the way the call did, the call's list
    (its positional arguments, then the kernel's parameters given by keyword) and their names. A library that
    launches with every argument by keyword (fla: ``kernel[grid](x=x, y=y, ...)``) has its tensors copied and
    compared as a positional call's are."""
    names = list(tuned.info.arg_names)
    npos = len(args)
    by_kw = [n for n in names[npos:] if n in kwargs]
    rest = {k: v for k, v in kwargs.items() if k not in by_kw}

    def launch(cfg: Config, flat: list[Any]) -> None:
        run_once(tuned, cfg, flat[:npos], {**rest, **dict(zip(by_kw, flat[npos:]))}, grid)

    return launch, [*args, *(kwargs[n] for n in by_kw)], [*names[:npos], *by_kw]


def bench_config(tuned: TunedKernel, args: Sequence[Any], config: Any, meta: Mapping[str, Any]) -> Any:
    """``Autotuner._bench`` with tritune's checks and timer: the timing of ``config`` in milliseconds.

    For a loop over ``_bench`` (Triton's own, :func:`tritune.decorator.observed.bench_each`, or a subclass's, as
    FlagGems' ``LibTuner``): a config the static rules reject is never launched and gets ``inf``, as Triton gives a
    config that runs out of resources. With the kernel's ``do_bench``, it is called once, as Triton calls it
    (``do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))``), and what it returns is returned as it is; the errors
    Triton maps to ``inf`` (out of resources, a compile-time assertion, ptxas) are mapped so. Without one,
    tritune's event timer (L2 flush, confidence interval) gives ``[median, 20th, 80th percentile]``, raced across
    the loop's calls for one key (:func:`race_in_library_loop`); with no GPU it raises ``TimingUnavailableError``.
    """
    from tritune.decorator.triton_surface import from_triton
    from tritune.device import gpu_unavailable_reason
    from tritune.errors import TimingUnavailableError
    from tritune.space import check_static

    kwargs = dict(meta)
    grid = kwargs.pop("grid", None)
    kwargs.pop("warmup", None)
    conflicts = sorted(kwargs.keys() & set(config.kwargs))
    if conflicts:
        raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you don't re-define "
                         f"auto-tuned symbols. ({tuned.info.name})")  # fmt: skip
    cfg = from_triton(config)
    inf = [float("inf")] * 3
    key = tuned.key_spec.of(args, kwargs)
    library_loop_legal(tuned, key, kwargs)  # the keys a loop over _bench decided, for choices()
    if getattr(tuned.tuner, "pinned", False) or getattr(tuned.tuner, "sensitivity", None) is not None:
        pick = untimed_in_library_loop(tuned, args, kwargs, grid)  # the loop's min finds it; nothing is timed
        return [0.0] * 3 if pick is not None and cfg == pick.config else inf
    if check_static(cfg, tuned.info, kwargs.keys(), None) is not None:
        return inf
    if not admitted_in_library_loop(tuned, key, cfg):
        return inf  # a neighbour of no config near the best: not compiled, not timed
    if gpu_unavailable_reason() is None:
        check = library_loop_check(tuned, args, kwargs, grid)  # its preparation runs beside the compiles
        precompile_for_library_loop(tuned, args, kwargs, config=cfg, beside=None if check is None else check.prepare)
    if refused_in_library_loop(tuned, cfg, args, kwargs, grid) is not None:
        return inf  # other bits than the reference's, or a generated config that disagrees: as one Triton cannot run
    call, cleanup = candidate_call(tuned, cfg, args, kwargs, grid)
    try:
        if tuned.user_do_bench is not None:
            return _user_bench(tuned.user_do_bench, call)
        why = gpu_unavailable_reason()
        if why is not None:
            raise TimingUnavailableError(
                f"{tuned.info.name}: cannot time config {cfg.id}: {why}. Pass do_bench= to time with your own "
                "function, or run on a GPU."
            )
        import torch

        from tritune.bench.event import shared_timer
        from tritune.engine.timing import note_gpu_busy, warm_if_idle

        device = torch.cuda.current_device()

        def looks(flush_l2: bool) -> Callable[..., Any]:
            """This config's timed looks on the device's shared timer, with or without the L2 flush."""
            timer = shared_timer(device=device, flush_l2=flush_l2)

            def measure(**options: Any) -> Any:
                try:
                    return timer.measure(call, **options)
                finally:
                    note_gpu_busy()

            return measure

        measure = looks(True)
        warm_if_idle(shared_timer(device=device, flush_l2=True))  # clocks ramped unless tritune kept the GPU busy lately
        try:
            # a widened list: a generated config must also beat the list's best with the L2 warm
            m = race_in_library_loop(tuned, key, measure, generated=cfg.id if cfg in tuned.generated else None,
                                     measure_warm=looks(False) if tuned.generated else None, config=cfg)  # fmt: skip
        except Exception as e:
            if cannot_run_here(e):
                return inf
            raise
        return m.triton_quantiles()
    finally:
        cleanup()


def cannot_run_here(e: BaseException) -> bool:
    """Whether ``e`` says a config cannot run here, as Triton's ``_bench`` reads it (``inf`` for that config):
    out of resources (shared memory, registers; raised when the binary is loaded), a compile failure, a compile-time
    assertion, ptxas."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources, PTXASError

    return isinstance(e, (OutOfResources, CompilationError, PTXASError))


def _user_bench(do_bench: Callable[..., Any], call: Callable[[], None]) -> Any:
    """``do_bench(call, quantiles=(0.5, 0.2, 0.8))`` as Triton's ``_bench`` calls it: its value as it is, or ``inf``
    for the errors Triton gives ``inf`` (with Triton's line when it prints)."""
    from triton.compiler.errors import CompileTimeAssertionFailure
    from triton.runtime.errors import OutOfResources, PTXASError

    from tritune.decorator.observed import printing

    try:
        return do_bench(call, quantiles=(0.5, 0.2, 0.8))
    except (OutOfResources, CompileTimeAssertionFailure, PTXASError) as e:
        if printing():
            print(f"Autotuning failed with {e}")
        return [float("inf")] * 3


#: A library loop's first look at a config: short, so that the many clear losers cost little.
FIRST_LOOK = {"budget_s": 0.01, "min_samples": 5, "rel_tol": 0.05, "warmup_s": 0.002}
#: A config whose first look is clearly slower than the best so far AND this much slower is out of the race: its
#: first look is all the loop gets. (Which neighbours a widened list times is another margin: ``ADMIT_MARGIN``.)
LOSER_MARGIN = 0.05
#: The full measurement of a config still in the race (its first look just warmed it up).
FULL_LOOK = {"budget_s": 0.1, "warmup_s": 0.002, "rel_tol": 0.01}


def race_in_library_loop(tuned: TunedKernel, key: Any, measure: Callable[..., Any], *, generated: str | None = None,
                         measure_warm: Callable[..., Any] | None = None, config: Config | None = None) -> Any:  # fmt: skip
    """One config's timing inside a library's own loop over ``_bench`` (FlagGems' ``LibTuner`` times every
    pruned config, one after another): a race run one config at a time. Each config gets a short first
    look; one whose interval lies wholly above the best so far, and whose median is more than
    :data:`LOSER_MARGIN` slower (:func:`out_of_race`), is out, and its first look is what the loop gets (it loses
    the loop's ``min`` either way). The others are measured in full and may become the best. ``measure(**options)``
    times the config once (:meth:`tritune.bench.EventTimer.measure`). Returns the Measurement.

    With ``measure_warm`` (the same call timed without the L2 flush: a widened list), the best written config so far
    is timed warm too. A generated config (``generated``: its id) must beat it by more than the tie rule's band (half
    the resolution: :data:`tritune.bench.ties.PICK_SHARE`), as it must in a key's race, and then, timed warm, be
    within :data:`~tritune.engine.warm.WARM_MARGIN` of it there as well (:mod:`tritune.engine.warm`); one that is
    not gets the written config's measurement, scaled by ``1 + WARM_MARGIN``, so the loop's ``min`` keeps the
    written config. A widened list puts its written configs first, so the loop meets them before any generated one.
    The refusals are kept, per key, in ``_library_loop_refused`` (config id -> why, its medians and the written
    best's). With ``config``, its own measurement (its first look, or its full one) is kept, per key, in
    ``_library_loop_looks``: what :func:`admitted_in_library_loop` reads for a widened list's neighbours."""
    bests: dict[Any, Any] = tuned.__dict__.setdefault("_library_loop_best", {})
    best = bests.get(key)
    looks: dict[Config, Any] = tuned.__dict__.setdefault("_library_loop_looks", {}).setdefault(key, {})
    first = measure(**FIRST_LOOK)
    if out_of_race(first, best):
        if config is not None:
            looks[config] = first
        return first
    full = first.merged(measure(**FULL_LOOK))
    if config is not None:
        looks[config] = full
    if measure_warm is not None:
        full = _generated_guard(tuned, key, full, generated, measure_warm)
    if best is None or full.median_ms < best.median_ms:
        bests[key] = full
    return full


def out_of_race(m: Any, best: Any, margin: float = LOSER_MARGIN) -> bool:
    """Whether a config measured ``m`` is out of a library loop's race against the best so far: its interval lies
    wholly above the best's and its median is more than ``margin`` slower (the rule of
    :func:`tritune.search.rings.out_of_race`, by which a key's search admits a widened list's neighbours)."""
    from tritune.search.rings import out_of_race as behind

    return best is not None and behind(m.median_ms, (m.ci_low_ms, m.ci_high_ms), best.median_ms,
                                       (best.ci_low_ms, best.ci_high_ms), margin)  # fmt: skip


def admitted_in_library_loop(tuned: TunedKernel, key: Any, cfg: Config) -> bool:
    """Whether a library's own loop times ``cfg``, a neighbour of a widened list: only where a config one step nearer
    the list (:attr:`~tritune.space.Widened.origins`) was timed within :data:`tritune.search.rings.ADMIT_MARGIN` of the
    best so far (:func:`out_of_race` with that margin), the rule of a key's ``rings`` search. The loop meets the
    written configs first and each ring of neighbours after the ring before it, so this is a local search from the
    configs that are near the best: a loop that times every config it is given (FlagGems' ``LibTuner``) no longer
    compiles and times every neighbour of every written config. Decided once a config and key; one not admitted gets
    ``inf`` (as a config Triton cannot run; the key's choice lists it, with why, as ``generated_untimed``). A kernel
    timed by its own ``do_bench`` times every config (its looks are its own)."""
    decided: dict[Config, bool] = tuned.__dict__.setdefault("_library_loop_admitted", {}).setdefault(key, {})
    if cfg not in decided:
        decided[cfg] = not _searched(tuned, cfg) or _near_best(tuned, key, cfg)
    return decided[cfg]


def untimed_neighbours(tuned: TunedKernel, key: Any) -> dict[str, str]:
    """The neighbours a library's own loop did not time for ``key`` (:func:`admitted_in_library_loop`), by config id,
    each with why (:func:`tritune.search.rings.why_untimed`)."""
    from tritune.search.rings import why_untimed

    decided = (tuned.__dict__.get("_library_loop_admitted") or {}).get(key, {})
    return {c.id: why_untimed(tuned.generated_origins[c]) for c, ok in decided.items() if not ok}


def _searched(tuned: TunedKernel, cfg: Config) -> bool:
    """Whether a library loop times ``cfg`` only if :func:`_near_best` admits it: a widened list's neighbour, timed by
    tritune (a kernel's own ``do_bench`` times every config)."""
    return tuned.user_do_bench is None and cfg in tuned.generated_origins


def _near_best(tuned: TunedKernel, key: Any, cfg: Config) -> bool:
    """Whether a config one step from ``cfg`` nearer the list was timed for ``key`` within the admission margin."""
    from tritune.search.rings import ADMIT_MARGIN

    looks = tuned.__dict__.get("_library_loop_looks", {}).get(key, {})
    best = tuned.__dict__.get("_library_loop_best", {}).get(key)
    near = tuned.generated_origins.get(cfg, ())
    return any(o in looks and not out_of_race(looks[o], best, ADMIT_MARGIN) for o in near)


def _generated_guard(tuned: TunedKernel, key: Any, full: Any, generated: str | None,
                     measure_warm: Callable[..., Any]) -> Any:  # fmt: skip
    """The measurement the loop gets for this config in a widened list (:func:`race_in_library_loop`): a written one
    keeps its own, tracked as the written best; a generated one keeps its own only if it beats the written best
    beyond the tie band and with the L2 warm too."""
    written: dict[Any, Any] = tuned.__dict__.setdefault("_library_loop_written", {})
    ref = written.get(key)  # (flushed, warm) measurements of the fastest written config so far
    if generated is None:
        if ref is None or full.median_ms < ref[0].median_ms:
            written[key] = (full, measure_warm(**FULL_LOOK))
        return full
    if ref is None or full.median_ms >= ref[0].median_ms:
        return full
    from tritune.bench.ties import pick_band
    from tritune.engine.warm import WARM_MARGIN, warm_refuses

    why: dict[str, Any] = {"flushed_ms": full.median_ms, "written_flushed_ms": ref[0].median_ms}
    if full.median_ms > ref[0].median_ms * (1 - pick_band(FULL_LOOK["rel_tol"])):
        # tied with the written best: the tie rule's first step (tritune.bench.ties) serves the written config
        why["why"] = "tied with the written best"
    else:
        warm = measure_warm(**FULL_LOOK)
        if not warm_refuses(warm.median_ms, ref[1].median_ms):
            return full
        why.update(why="slower with the L2 warm", warm_ms=warm.median_ms, written_warm_ms=ref[1].median_ms)
    tuned.__dict__.setdefault("_library_loop_refused", {}).setdefault(key, {})[generated] = why
    return ref[0].scaled(1 + WARM_MARGIN)


def library_loop_configs(tuned: TunedKernel, kwargs: Mapping[str, Any], *, legal: bool) -> list[Config]:
    """The distinct configs a library's own loop times for this call: what ``prune_configs`` returned last (else the
    kernel's configs), in order; with ``legal``, only those that pass the static rules for the call's keywords."""
    from tritune.decorator.triton_surface import from_triton
    from tritune.space import check_static

    configs = list(dict.fromkeys(from_triton(c) for c in (tuned.__dict__.get("_last_pruned") or tuned.configs)))
    return [c for c in configs if check_static(c, tuned.info, kwargs.keys(), None) is None] if legal else configs


def library_loop_legal(tuned: TunedKernel, key: Any, kwargs: Mapping[str, Any]) -> list[Config]:
    """The configs a library's own loop may time for ``key`` (:func:`library_loop_configs`, the legal ones), once a
    key. The keys are those a loop over ``_bench`` decided, which ``choices()`` reports (a subclass's own loop records
    no Choice of its own)."""
    loop_keys: dict[Any, list[Config]] = tuned.__dict__.setdefault("_library_loop_keys", {})
    if key not in loop_keys:
        loop_keys[key] = library_loop_configs(tuned, kwargs, legal=True)
    return loop_keys[key]


def untimed_in_library_loop(tuned: TunedKernel, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
    """In a pinned or sensitivity run, the :class:`Choice` a library's own loop over ``_bench`` must end with for
    this call's key, among the configs the loop times: the pretuned table's config, else the pinned run's stated rule
    (the first legal config) or the sensitivity run's draw. :func:`bench_config` gives it 0 and every other config
    ``inf``, so the loop's ``min`` picks it and nothing is timed. A table entry whose outputs differ from the first
    legal config's is ignored, as on the decorator's own path. Once per key; None when no config is legal."""
    key = tuned.key_spec.of(args, kwargs)
    picks: dict[Any, Any] = tuned.__dict__.setdefault("_library_loop_pins", {})
    if key not in picks:
        legal = library_loop_legal(tuned, key, kwargs)
        tuner = tuned.tuner
        pick = tuner.lookup(tuned, key, args, kwargs, allowed=legal)
        if pick is not None and pick.source == "pretuned" and tuner.pretuned_disagrees(  # as the decorator's own path
                tuned, key, pick.config, legal, args, kwargs, grid,
                "the seed's draw serves" if tuner.sensitivity is not None else "the first legal config serves"):
            pick = None
        if pick is None and legal:
            if tuner.sensitivity is not None:
                pick = tuner.sensitive_pick(tuned, key, legal, args, kwargs, grid)
            else:  # pinned: the stated rule
                pick = Choice(legal[0], "pinned", "no usable entry in the pinned table: the first legal config")
        picks[key] = pick
    return picks[key]


def refused_in_library_loop(tuned: TunedKernel, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any],
                            grid: Any) -> str | None:  # fmt: skip
    """The decorator's output check inside a library's own loop over ``_bench`` (FlagGems' ``LibTuner`` picks the
    winner itself), one per key (:func:`output_check`). Under ``numerics="exact"``, ``cfg`` must compute the bits of
    the reference (the first of the pruned configs that runs); a generated config (a widened list's neighbour) must
    agree with the first written one. None when ``cfg`` passes or is not checked, else why not; the loop then gets
    ``inf`` for it, so its pick stays among the configs that may serve."""
    if tuned.tuner.options.numerics != "exact" and cfg not in tuned.generated:
        return None
    check = library_loop_check(tuned, args, kwargs, grid)
    try:
        bad = check.check(cfg) if check is not None else None
    except Exception as e:  # the check's launch is the config's first here: one that cannot run is refused
        if not cannot_run_here(e):
            raise
        return f"{tuned.info.name} {cfg.id} cannot run here: {type(e).__name__}: {e}"
    return None if bad is None else bad[1]


def library_loop_check(tuned: TunedKernel, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any) -> Any:
    """The key's output check in a library's own loop (:func:`output_check`), made once a key, at the first call that
    asks (on a GPU, the loop's first config for the key, before any config has run on the call's arguments); None
    when nothing is checked."""
    key = tuned.key_spec.of(args, kwargs)
    checks: dict[Any, Any] = tuned.__dict__.setdefault("_library_loop_checks", {})
    if key not in checks:
        checks[key] = output_check(tuned, library_loop_configs(tuned, kwargs, legal=False), args, kwargs, grid,
                                   exact=tuned.tuner.options.numerics == "exact")  # fmt: skip
    return checks[key]


def precompile_for_library_loop(tuned: TunedKernel, args: Sequence[Any], kwargs: Mapping[str, Any],
                                compile_all: Callable[..., Any] | None = None, config: Config | None = None,
                                beside: Callable[[], object] | None = None) -> list[Config] | None:  # fmt: skip
    """Before a library's own loop times its first config for a key, compile every config it will time.

    A subclass such as FlagGems' ``LibTuner`` calls ``prune_configs`` and then ``_bench`` once per config,
    and each would otherwise compile in this process, one after another (mm: 41 s under tritune against
    Triton's 32 s in the first H200 run). The pruned configs (``prune_configs`` remembers them) that pass
    the static rules compile in the engine's worker processes, slowest first, all at once; each ``_bench``
    then only loads its binary. Once per key. A config with a ``pre_hook`` is compiled for the arguments as
    its hook leaves them (FlagGems' Hopper mm sets descriptor block shapes there); with stacked heuristics
    (FlagGems' bmm, baddbmm) each config compiles with the heuristics' values for it
    (:meth:`~tritune.decorator.autotuned.Autotuned.compile_plan`). Returns the configs sent to the workers (None when none).

    A widened list's neighbours compile only once the loop may time them (:func:`admitted_in_library_loop`): the
    first call sends the configs someone wrote; the call for ``config``, a neighbour the loop is about to time, sends
    every neighbour that a config one step nearer the list, timed since, now admits. ``beside`` (the output check's
    preparation: its perturbed inputs and its comparison's device code) starts on a helper thread as the first batch
    goes to the workers, as a key's check is prepared beside its compiles in tritune's own race.
    """
    if not tuned.tuner.options.precompile:
        return None
    key = tuned.key_spec.of(args, kwargs)
    waiting: dict[Any, dict[Config, None]] = tuned.__dict__.setdefault("_library_loop_precompiled", {})
    if key not in waiting:  # the key's first: the configs the loop times whatever it measures
        legal = library_loop_legal(tuned, key, kwargs)
        waiting[key] = dict.fromkeys(c for c in legal if _searched(tuned, c))  # neighbours, in the loop's order
        configs = [c for c in legal if not _searched(tuned, c)]
        if len(configs) < 2:
            return None
        if beside is not None:
            from tritune.engine.aside import Later

            Later(beside, name="tritune-check-prep").start()
    elif config is not None and config in waiting[key] and _near_best(tuned, key, config):
        configs = [c for c in waiting[key] if _near_best(tuned, key, c)]  # each admitted so far, in one batch
        for c in configs:
            del waiting[key][c]
    else:
        return None
    if compile_all is None:
        from tritune.device import current_target
        from tritune.engine.precompile import precompile

        jit, kwargs_for = tuned.compile_plan(args, kwargs)

        def compile_all(cfgs: list[Config]) -> Any:
            return precompile(jit, cfgs, args, kwargs, current_target(), tuned.tuner.options.jobs,
                              tuned.tuner.options.compile_timeout, kwargs_for)  # fmt: skip

    compile_all(configs)  # failures are left to the loop: its own compile raises and the config gets inf
    return configs


def output_check(tuned: TunedKernel, legal: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
                 grid: Any, *, exact: bool) -> Any:  # fmt: skip
    """The decorator's :class:`~tritune.verify.reference.OutputCheck` for this call (its runs launch through the
    kernel's hooks, on copies of the call's arguments, and at the edges of a bucketed key's sizes): under ``exact``
    every config against the first legal one; otherwise the generated configs (derived, or a widened list's
    neighbours), against the first config someone wrote. None when there is nothing to check (no generated config
    and not ``exact``, or fewer than two legal configs)."""
    from tritune.bucket import Bucket
    from tritune.verify.reference import OutputCheck, bucket_edge_inputs

    generated = tuned.generated
    if len(legal) < 2 or not (exact or any(c in generated for c in legal)):
        return None
    # A widened list's generated configs are checked against a config someone wrote, never against one of their own.
    references = [c for c in legal if c not in generated] if tuned.space_source == "widened" else list(legal)
    only = None if exact else [c for c in legal if c in generated]
    launch, flat, names = checked_call(tuned, args, kwargs, grid)
    at = {n: i for i, n in enumerate(names)}
    spans = {}  # a bucketed integer key argument (by its place in ``flat``): its bucket's smallest value, this call's
    for pos, b in zip(tuned.key_spec.positions, tuned.key_spec.buckets):
        i = at.get(tuned.info.arg_names[pos]) if pos < len(tuned.info.arg_names) else None
        v = flat[i] if i is not None else None
        if i is not None and isinstance(v, int) and not isinstance(v, bool) and isinstance(b, Bucket):
            lo = b.span(b(v))[0]
            if isinstance(lo, int) and lo < v:
                spans[i] = (lo, v)
    return OutputCheck(tuned.info.name, launch, flat, names, exact=exact, references=references, only=only,
                       edges=bucket_edge_inputs(flat, spans, names))

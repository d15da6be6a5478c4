"""tritune's front door: the ``@tritune.autotune`` decorator and the switch that puts Triton's autotuner names on
tritune's engine.

:func:`autotune` lists every keyword it takes: Triton's, then tritune's (where results are kept, how a key is tuned,
tuning while serving). Its object is an :class:`~tritune.decorator.autotuned.Autotuned`, a
``triton.runtime.Autotuner`` to every caller.

The switch: ``tritune.patch_triton()`` rebinds ``triton.autotune``, ``triton.runtime.autotune``,
``triton.runtime.autotuner.autotune``, ``triton.runtime.Autotuner`` and ``triton.runtime.autotuner.Autotuner`` to
:func:`triton_autotune` and :class:`TritonAutotuner`. Code that looks these names up after the call (a library
imported afterwards, a subclass defined afterwards) gets tritune's engine; objects made before keep Triton's.
``unpatch_triton()`` puts Triton's back; ``patched_triton()`` is the context-manager form;
``TRITUNE_PATCH_TRITON=1`` patches at ``import tritune``; ``python -m tritune run script.py`` runs a script with
the switch on. :class:`TritonAutotuner` takes ``triton.runtime.Autotuner``'s constructor (triton 3.6 through 3.9),
so a library's subclass of Triton's Autotuner (FlagGems' ``LibTuner``) gets tritune's engine; while it stands in,
``isinstance(obj, triton.runtime.Autotuner)`` holds for tuners made by either engine.

Tuning while serving (``incremental=``) is chosen here, at decoration: the decorator knows it only as a
:class:`~tritune.decorator.autotuned.Serving` mode, and ``tritune.serving`` is imported only when it is asked for.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritune.adapters.kernel import unwrap_jit
from tritune.decorator.autotuned import DERIVED, Autotuned, Serving
from tritune.decorator.miss import KeyTuner
from tritune.decorator.triton_surface import ORIGINAL_AUTOTUNER

if TYPE_CHECKING:
    from tritune.engine.race import RaceOptions
    from tritune.serving.state import IncrementalOptions
    from tritune.space import Space

__all__ = ["TritonAutotuner", "autotune", "is_patched", "patch_triton", "patched_triton", "triton_autotune",
           "unpatch_triton"]  # fmt: skip


def autotune(
    configs: Sequence[Any] | Space | None = None,
    key: Any = (),
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Iterable[str] | None = None,
    restore_value: Iterable[str] | None = None,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: Any = None,
    rep: Any = None,
    use_cuda_graph: bool = False,
    do_bench: Callable[..., Any] | None = None,
    cache_results: bool = False,
    *,
    on_no_gpu: str | None = None,
    store: str | Path | Any | bool | None = None,
    pretuned: str | Path | None = None,
    distributed: bool = False,
    search: str | None = None,
    budget: str | float | int | None = None,
    measure: str | None = None,
    jobs: int | None = None,
    compile_timeout: float | None = 60.0,
    race: RaceOptions | None = None,
    retime_finalists: bool = True,
    precompile: bool = True,
    numerics: str | None = None,
    pinned: bool | None = None,
    sensitivity: int | None = None,
    widen: bool | int | str | None = None,
    incremental: bool | IncrementalOptions | Any | None = None,
    outputs: Iterable[str] | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    on_promote: Callable[..., None] | None = None,
    timer: Any = None,
) -> Callable[[Any], Autotuned]:
    """Decorate a ``@triton.jit`` kernel: ``@tritune.autotune(configs=[...], key=["n"])``.

    Triton's arguments, positionally or by name, with Triton's meaning: ``configs`` (``triton.Config``\\ s, tritune
    ``Config``\\ s, or a :class:`tritune.Space`), ``key`` (argument names; or a dict of names to buckets, e.g.
    ``{"n": tritune.bucket.pow2}``), ``prune_configs_by``, ``reset_to_zero``, ``restore_value``, ``pre_hook``,
    ``post_hook``, ``do_bench``. ``warmup``, ``rep``, ``use_cuda_graph`` and ``cache_results`` are accepted for
    compatibility: tritune's timer decides repetitions by confidence interval, and its store keeps results across
    processes.

    Where results are kept:

    * ``store``: the SQLite store's path (default ``$TRITUNE_STORE`` or the user cache dir), a Store, or False.
    * ``pretuned``: an exported JSON file consulted first, read-only (read, and its errors raised, here); a hit
      needs no timing and is served only if this call's pruned, legal candidates include it.
    * ``on_no_gpu``: ``"warn"`` (default; ``$TRITUNE_ON_NO_GPU``) runs the first legal config, labelled untuned,
      where nothing can be timed; ``"error"`` raises ``TimingUnavailableError``.
    * ``distributed``: in a torch.distributed job, the ranks tune a miss together (every rank must reach it).

    How a key is tuned (:class:`tritune.TuneOptions`, one meaning each): ``search`` (None: spaces above 512 legal
    configs are searched; ``"exhaustive"``; a strategy name), ``budget`` (``"5%"``, ``200``, ``"90s"``),
    ``measure`` (``"cold"``, ``"warm"``, ``"graph"``), ``jobs`` (compile workers), ``compile_timeout`` (seconds
    per config), ``race`` (a :class:`tritune.RaceOptions`), ``retime_finalists`` (over ranks, rank 0 re-times the
    finalists), ``precompile`` (compile in worker processes ahead of the first load), ``numerics`` (``"exact"``: only
    configs that compute the first legal config's bits may win, so tuning never changes a result; ``"any"``; default
    ``$TRITUNE_NUMERICS``, else ``"any"``).

    Spaces nobody wrote: ``configs=None`` derives the candidates from the kernel's source at each call's sizes (its
    free ``tl.constexpr`` block sizes over powers of 2, ``num_warps``, ``num_stages``: :func:`tritune.space.derive_space`),
    and ``widen=True`` (``$TRITUNE_WIDEN=1``) adds each given config's neighbours (:func:`tritune.space.widen`;
    ``widen=2``: up to two steps from a given config, so a block doubled with its warps halved too;
    ``widen="derived"``: the list and the space derived from the kernel's source); the
    screen removes what cannot compile or fit, large spaces are searched, and a generated config serves only after its
    outputs agree with the first legal config's on the call's arguments and two perturbed copies. ``choices()`` says
    how the space was made and how the winner compares with the best written config, measured in the same race.

    Reproducible runs: ``pinned=True`` (``$TRITUNE_PINNED=1``) times nothing: the ``pretuned`` table (``tritune pin
    merge`` makes one from the ranks' recorded choices) decides, and a key it does not hold runs the first legal
    config. ``sensitivity=SEED`` (``$TRITUNE_SENSITIVITY``) draws, reproducibly from the seed, the rank, the kernel and
    the key, a legal config whose outputs agree with the first legal config's: runs with different seeds show how
    much a model's numbers depend on tuning.

    Tuning while serving: ``incremental`` (True, an ``IncrementalOptions``, or ``$TRITUNE_INCREMENTAL=1``) runs a new
    key at once on a provisional config and tunes it on the real calls; ``outputs``, ``atol``, ``rtol`` set its check
    of candidates and ``on_promote(key, choice)`` hears each promotion (``docs/serving.md``).

    ``timer``: for tests of the tuning logic without a GPU, a replay timer (``tritune.bench.ReplayTimer``) whose
    recorded timings replace GPU timing; choices it makes are labelled ``replayed``, never ``timed``.
    """
    from tritune.engine.options import TuneOptions
    from tritune.engine.race import RaceOptions
    from tritune.errors import TrituneError
    from tritune.measure import resolve_policy

    def decorator(fn: Any) -> Autotuned:
        name = unwrap_jit(fn).fn.__name__
        if measure is not None:
            resolve_policy(kernel=measure, kernel_name=name)  # the error names the kernel and the argument
        try:
            options = TuneOptions(search=search, budget=budget, measure=measure, jobs=jobs,
                                  compile_timeout=compile_timeout, race=race if race is not None else RaceOptions(),
                                  retime_finalists=retime_finalists, precompile=precompile,
                                  numerics=numerics)  # fmt: skip
            radius = _widen(widen)
        except TrituneError as e:
            raise type(e)(f"{name}: {e}") from None
        serving = serving_mode(incremental, outputs=outputs, atol=atol, rtol=rtol, on_promote=on_promote,
                               distributed=distributed)  # fmt: skip
        try:
            tuner = KeyTuner(options, store=store, pretuned=pretuned, distributed=distributed, timer=timer,
                             served=serving is not None, pinned=pinned, sensitivity=sensitivity)  # fmt: skip
        except TrituneError as e:
            raise type(e)(f"{name}: {e}") from None
        tuner.open_pretuned()  # a broken pretuned file fails here, at decoration, not at the first call
        tuned = Autotuned(fn, configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                          restore_value=restore_value, pre_hook=pre_hook, post_hook=post_hook, do_bench=do_bench,
                          on_no_gpu=on_no_gpu, tuner=tuner, warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph,
                          cache_results=cache_results, serving=serving, widen=radius)  # fmt: skip
        tuner.check_pretuned(tuned)  # a file that can serve this kernel nothing is said here, once
        return tuned

    return decorator


def serving_mode(value: Any, *, outputs: Iterable[str] | None = None, atol: float | None = None,
                 rtol: float | None = None, on_promote: Callable[..., None] | None = None,
                 distributed: bool = False) -> Serving | None:  # fmt: skip
    """The serving mode ``incremental=`` asks for (True, an ``IncrementalOptions``, an ``Incremental``; None:
    ``$TRITUNE_INCREMENTAL``), or None for tuning on a miss. ``tritune.serving`` is imported only when asked for."""
    if value is None:
        value = os.environ.get("TRITUNE_INCREMENTAL", "").strip().lower() in ("1", "true", "yes", "on")
    if value is False:
        return None
    from tritune.serving.incremental import make_incremental

    return make_incremental(value, outputs=outputs, atol=atol, rtol=rtol, on_promote=on_promote,
                            distributed=distributed)  # fmt: skip


# -- Triton's names over tritune's engine -------------------------------------------------------------------------
class _StandIn(type):
    """Metaclass of the stand-in: every Triton autotuner (original or tritune's) is an instance of it."""

    def __instancecheck__(cls, obj: object) -> bool:
        if cls is TritonAutotuner:
            return isinstance(obj, ORIGINAL_AUTOTUNER)
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        if cls is TritonAutotuner:
            return issubclass(sub, ORIGINAL_AUTOTUNER)
        return type.__subclasscheck__(cls, sub)


class TritonAutotuner(Autotuned, metaclass=_StandIn):
    """``triton.runtime.Autotuner``'s constructor over tritune's engine (store, screen, race, fast dispatch). How keys
    are tuned follows the environment (``$TRITUNE_STORE``, ``$TRITUNE_SEARCH``, ``$TRITUNE_MEASURE``,
    ``$TRITUNE_INCREMENTAL``, ``$TRITUNE_ON_NO_GPU``), since a library's code passes Triton's arguments only."""

    def __init__(
        self,
        fn: Any,
        arg_names: Sequence[str],
        configs: Sequence[Any],
        key: Sequence[str],
        reset_to_zero: Iterable[str] | None = None,
        restore_value: Iterable[str] | None = None,
        pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None,
        prune_configs_by: Mapping[str, Any] | None = None,
        warmup: Any = None,
        rep: Any = None,
        use_cuda_graph: bool = False,
        do_bench: Callable[..., Any] | None = None,
        cache_results: bool = False,
    ) -> None:
        names = _known_names(fn, list(arg_names), {"key": list(key), "reset_to_zero": list(reset_to_zero or ()),
                                                    "restore_value": list(restore_value or ())})  # fmt: skip
        serving = serving_mode(None)
        super().__init__(fn, configs, names["key"], prune_configs_by=prune_configs_by,
                         reset_to_zero=names["reset_to_zero"], restore_value=names["restore_value"], pre_hook=pre_hook,
                         post_hook=post_hook, do_bench=do_bench, tuner=KeyTuner(served=serving is not None),
                         warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph, cache_results=cache_results,
                         serving=serving, widen=_widen(None) if configs else 0)  # fmt: skip


#: What Triton 3.6, which takes names that are no kernel argument, does with them.
_UNKNOWN_NAMES = {
    "key": "are left out of the tuning key (fix the key to tune per value)",
    "reset_to_zero": "are not reset between benchmark runs",
    "restore_value": "are not restored after benchmark runs",
}


def _known_names(fn: Any, arg_names: list[str], lists: dict[str, list[str]]) -> dict[str, list[str]]:
    """``key``, ``reset_to_zero`` and ``restore_value`` as the installed Triton treats them. Triton >= 3.7 refuses a
    name that is no kernel argument (its own ValueError, raised here); 3.6 takes it, and so does this, leaving it
    out with a warning, since code that runs under Triton must run under its stand-in."""
    unknown = {what: [n for n in names if n not in arg_names] for what, names in lists.items()}
    if not any(unknown.values()):
        return lists
    try:
        ORIGINAL_AUTOTUNER(fn, arg_names, [], lists["key"], lists["reset_to_zero"], lists["restore_value"])
    except ValueError as e:
        raise ValueError(f"{getattr(fn, '__name__', fn)}: {e}") from None
    for what, names in unknown.items():
        if names:
            warnings.warn(f"{getattr(fn, '__name__', fn)}: {what} names {names} are not kernel arguments; as this "
                          f"Triton does, they {_UNKNOWN_NAMES[what]}", UserWarning, stacklevel=4)  # fmt: skip
    return {what: [n for n in names if n in arg_names] for what, names in lists.items()}


def triton_autotune(
    configs: Sequence[Any],
    key: Sequence[str],
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Iterable[str] | None = None,
    restore_value: Iterable[str] | None = None,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: Any = None,
    rep: Any = None,
    use_cuda_graph: bool = False,
    do_bench: Callable[..., Any] | None = None,
    cache_results: bool = False,
) -> Callable[[Any], TritonAutotuner]:
    """``triton.autotune`` with tritune's engine: what :func:`patch_triton` installs."""

    def decorator(fn: Any) -> TritonAutotuner:
        return TritonAutotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                               post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                               use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)  # fmt: skip

    return decorator


def _widen(value: bool | int | str | None) -> int | str:
    """How far widening reaches: a number of steps from a given config (0: none), or ``"derived"``: to the space
    derived from the kernel's source. ``widen=`` (True: 1), else ``$TRITUNE_WIDEN`` (what :func:`patch_triton`
    sets with ``widen=``): ``1``, ``true``, ``yes``, ``on``, a number of steps, or ``derived``."""
    from tritune.errors import ConfigError

    where, v = ("widen", value) if value is not None else ("$TRITUNE_WIDEN", os.environ.get("TRITUNE_WIDEN", ""))
    if isinstance(v, str):
        word = v.strip().lower()
        if word in ("true", "yes", "on", "false", "no", "off", ""):
            return int(word in ("true", "yes", "on"))
        if word == DERIVED:
            return DERIVED
        if not word.isdigit():
            raise ConfigError(f"{where}={word!r}: use 1 (or true) to widen each config by one step, a number of "
                              f"steps, {DERIVED!r} for the space derived from the kernel, or 0 (false)")  # fmt: skip
        return int(word)
    if not isinstance(v, int) or v < 0:  # (a bool is an int: True is one step)
        raise ConfigError(f"{where}={v!r}: use True (one step from each given config), a number of steps, "
                          f"{DERIVED!r}, or False")  # fmt: skip
    return int(v)


#: (module name, attribute, which replacement) for every place Triton exposes its autotuner.
_SITES = (
    ("triton", "autotune", "autotune"),
    ("triton.runtime", "autotune", "autotune"),
    ("triton.runtime.autotuner", "autotune", "autotune"),
    ("triton.runtime", "Autotuner", "Autotuner"),
    ("triton.runtime.autotuner", "Autotuner", "Autotuner"),
)
_saved: dict[tuple[str, str], Any] = {}


def is_patched() -> bool:
    """Whether :func:`patch_triton` is in force."""
    return bool(_saved)


def patch_triton(*, widen: bool | int | str | None = None) -> None:
    """Make Triton's autotuner names use tritune's engine, for code that looks them up from now on.

    Idempotent. Every kernel tuned through them gets the store, the screen before launch, the race and the
    fast dispatch; ``triton.Config`` and ``triton.heuristics`` stay Triton's own. ``widen=True`` (or
    ``$TRITUNE_WIDEN=1``) explores around each kernel's own configs: their neighbouring block sizes, warps and
    stages, screened, searched and checked against the kernel's first config, the library's configs always included;
    ``widen=2`` (``$TRITUNE_WIDEN=2``) reaches two steps from each, and ``widen="derived"``
    (``$TRITUNE_WIDEN=derived``) adds the space derived from each kernel's source at each call's sizes (searched
    where large; a kernel without one, or whose derived space is too large for a library's own loop, is widened one
    step, and ``choices()`` says why).
    """
    if widen is not None:
        os.environ["TRITUNE_WIDEN"] = str(_widen(widen))
    if _saved:
        return
    new = {"autotune": triton_autotune, "Autotuner": TritonAutotuner}
    for mod, attr, which in _SITES:
        m = importlib.import_module(mod)
        if hasattr(m, attr):
            _saved[(mod, attr)] = getattr(m, attr)
            setattr(m, attr, new[which])


def unpatch_triton() -> None:
    """Put Triton's own autotuner back (objects made while patched keep tritune's engine). Idempotent."""
    for (mod, attr), value in list(_saved.items()):
        setattr(importlib.import_module(mod), attr, value)
    _saved.clear()


@contextmanager
def patched_triton() -> Iterator[None]:
    """``with tritune.patched_triton(): import some_library`` — patched inside, as before afterwards."""
    was = is_patched()
    patch_triton()
    try:
        yield
    finally:
        if not was:
            unpatch_triton()


def patch_from_environment() -> None:
    """``TRITUNE_PATCH_TRITON=1`` (or true/yes/on) patches at ``import tritune``."""
    if os.environ.get("TRITUNE_PATCH_TRITON", "").strip().lower() in ("1", "true", "yes", "on"):
        patch_triton()

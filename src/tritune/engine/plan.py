"""When tuning searches a space instead of racing all of it, with what budget, and what it starts from.

**The rule.** ``search=None`` (or ``"auto"``, or ``$TRITUNE_SEARCH`` unset) races every legal config of a
space of at most :data:`SEARCH_THRESHOLD` = 512 legal configs and searches a larger one with
the default strategy and the default budget (:func:`default_evaluations`). ``search="exhaustive"`` (or ``TRITUNE_SEARCH=exhaustive``)
always races everything; a strategy name always searches; a ``budget`` given alone searches too. A widened list
(each generated config's origins known) is searched by :data:`RINGS` under ``auto`` with no budget given, whatever
its size: outward from the written configs, only near the best (:mod:`tritune.search.rings`).

Why 512, measured: a cold key costs about ``N x (compile + race)`` per legal config. Compiling a matmul
config for sm_90 (``triton.compile``, ``GPUTarget("cuda", 90, 32)``, no GPU) took 0.69-3.05 s on this
project's loaded 2-core machine (4 fitting configs of ``examples/matmul.py``, 1 job) and 0.63 s on the
H200 host (137.1 s for 216 configs, 1 job; 15.6 s with 16 jobs: 0.072 s per config of wall). The recorded
races of matmul 4096^3 (168 legal configs, one H200 of a 2xH200 host) spent 3.06 s of device time, 0.018 s
per config; on the H200 host ``matmul_tma`` (138 configs, 16 jobs) compiled in 7.9 s (0.057 s per config)
and raced in 1.5 s. So exhaustive tuning costs ~0.075 s per legal config on a 16-core H200 host:
216 configs ~16 s, 512 ~38 s, 1,500 ~2 minutes, 5,536 ~7 minutes per key. Below ~500 configs the whole
race stays under ~40 s, and searching would trade a sure winner for seconds; above it, minutes.

**Budget.** A fraction of the legal space, a count or seconds (:meth:`Budget.parse`); it counts what the
store already holds for the key, so a later run with a larger budget measures only the difference. The
default is 5% of the legal space, at least 64 and at most 256 configs, rounded down to whole batches of the
compile pool: each batch waits for its slowest compile, so a search costs about twice its share of an
exhaustive compile, and 5% keeps a 2,000-config space near the 0.2x wall-time target (10% would not).
With tuned neighbouring keys (transfer) the default is a quarter of that, at least one batch: the search
starts from their winners and their landscape. Its first batch is small (:func:`first_batch_size`: the
neighbours' winners and the configs they measured fastest, whose binaries a machine that tuned them has in
Triton's cache), and with the default budget the search stops there when that batch's race confirms a
neighbour's winner (``stopped: confirmed``, :meth:`tritune.search.TransferSearch.confirmed`); a budget
given explicitly is spent in full.

**Batch width.** Batches are as wide as the compile pool, except that a budget given explicitly which allows
fewer than :data:`tritune.search.driver.ROUNDS` = 16 rounds of the pool is asked in batches of
``ceil(budget / 16)`` (``--budget 25%`` of a 168-config space with 16 workers: 14 rounds of 3 instead of 3 of
16), which keeps the model adaptive (:data:`tritune.search.driver.ROUNDS`: the measurement). The default
budget keeps whole batches of the pool.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.errors import SearchError
from tritune.outcome import Status
from tritune.search import Budget, KeyResults, SearchDriver, get, names
from tritune.search.driver import ROUNDS
from tritune.search.registry import DEFAULT, parse_spec
from tritune.space import Space

#: Spaces of more legal configs than this are searched by default (module docstring: the measurement).
SEARCH_THRESHOLD = 512
#: The default budget: this share of the legal configs, within ``DEFAULT_MIN`` and ``DEFAULT_MAX`` configs.
DEFAULT_SHARE, DEFAULT_MIN, DEFAULT_MAX = 0.05, 64, 256
#: With tuned neighbouring keys, the default budget is this fraction of the cold default.
TRANSFER_FRACTION = 0.25
#: A transfer's first batch: this many configs per tuned neighbouring key, plus :data:`TRANSFER_EXTRA` ...
TRANSFER_PER_KEY, TRANSFER_EXTRA = 2, 2
#: ``exhaustive``, ``auto`` or a strategy name: the process-wide choice when ``search`` is not given.
ENV_VAR = "TRITUNE_SEARCH"
#: The strategy of a widened list (:mod:`tritune.search.rings`): it stops on its own rule, with no budget.
RINGS = "rings"


@dataclass(frozen=True)
class SearchPlan:
    """A decision to search: the strategy's name, the budget (unresolved; None for the default), and why."""

    strategy: str
    budget: Budget | None
    why: str


def plan(search: str | None, budget: Any, n_legal: int, *, where: str = "", widened: bool = False,
         ) -> SearchPlan | None:  # fmt: skip
    """``None`` to race every legal config, else how to search them (module docstring: the rule).

    ``where`` names the kernel or workload in error messages. ``widened``: the configs are a written list and its
    neighbours (each generated config's origins known), searched outward from the list (:data:`RINGS`) unless a
    search or a budget is named.
    """
    who = f"{where}: " if where else ""
    mode = search if search is not None else (os.environ.get(ENV_VAR) or "auto")
    if not isinstance(mode, str):
        raise SearchError(f"{who}search={search!r} must be a strategy name, 'auto' or 'exhaustive'")
    mode = mode.strip().lower()
    if mode == "transfer":  # needs tuned keys: the default strategy transfers on its own when the store has them
        mode = "auto"
    parsed = None if budget is None else parse_budget(budget, where=where)
    if mode == "exhaustive":
        if budget is not None and search is not None:
            raise SearchError(f"{who}search='exhaustive' races every legal config; drop budget={budget!r} "
                              "or name a strategy")  # fmt: skip
        return None
    if mode == "auto":
        if parsed is not None:
            return SearchPlan(DEFAULT, parsed, f"budget {budget} given")
        if widened:
            return SearchPlan(RINGS, None, "a widened list: its configs, then neighbours of those near the best")
        if n_legal > SEARCH_THRESHOLD:
            return SearchPlan(DEFAULT, None, f"{n_legal} legal configs > {SEARCH_THRESHOLD} (search threshold)")
        return None
    if mode.partition(":")[0] not in names():
        raise SearchError(f"{who}unknown search strategy {mode!r}; use 'auto', 'exhaustive' or one of: "
                          f"{', '.join(names())} (search= or ${ENV_VAR})")  # fmt: skip
    try:
        parse_spec(mode)  # "surrogate:probe=1": a strategy with options
    except SearchError as e:
        raise SearchError(f"{who}{e} (search= or ${ENV_VAR})") from None
    return SearchPlan(mode, parsed, "strategy named")


def parse_budget(budget: Any, *, where: str = "") -> Budget:
    """:meth:`Budget.parse` with the kernel or workload named in its error."""
    try:
        return Budget.parse(budget)
    except SearchError as e:
        raise SearchError(f"{where}: {e}" if where else str(e)) from None


def neighbours(store: Any, key: Any, legal: Sequence[Config]) -> list[KeyResults]:
    """The other tuned keys of ``key``'s kernel in ``store`` (same source, device and measure policy), as
    :class:`KeyResults` over the configs of ``legal`` with their stored winners; keys with nothing measured
    are left out.

    Only the records of ``legal`` configs are read, and only for the keys that qualify: a key searched before
    the store write left out the statically rejected configs (``session.record``) holds mostly those (4,912 of
    4,947 per key of the search benchmark's matmul), and parsing all of them (``store.snapshot``) took 0.85 s of
    a transfer's start on the H200."""
    if store is None:
        return []
    wanted = set(legal)
    out = []
    same = ("source_hash", "triton_version", "device", "capability", "env_hash", "measure", "dtypes")
    for e in store.entries(key.kernel):
        k = e.key
        if k == key or e.n_measured == 0 or any(getattr(k, f) != getattr(key, f) for f in same):
            continue
        times = store.times(k, legal)  # what candidates() says, without decoding the records' JSON (SQLite)
        win = e.winner
        best = getattr(win, "config", None)  # the race's and tie rule's pick, not the smallest stored median
        if any(t is not None for t in times.values()):
            out.append(KeyResults(dict(k.key), times, best if best in wanted else None))
    return out


def known_outcomes(records: Sequence[Any]) -> list[tuple[Config, Any]]:
    """Stored candidate records as the driver's ``known`` outcomes: a Measurement-like with its interval, a
    time, or a failure status."""
    from tritune.bench import Measurement

    out: list[tuple[Config, Any]] = []
    for r in records:
        if r.status is Status.MEASURED and r.time_ms is not None:
            m = r.measurement
            try:
                outcome: Any = Measurement.from_json(m) if m else r.time_ms
            except Exception:  # an older or partial record: its median still teaches the strategy
                outcome = r.time_ms
            out.append((r.config, outcome))
        elif r.status is not Status.MEASURED:
            out.append((r.config, r.status))
    return out


def make_driver(p: SearchPlan, legal: Sequence[Config], *, width: int, key_values: Mapping[str, Any],
                stored: Sequence[Any] = (), near: Sequence[KeyResults] = (), seed: int = 0,
                where: str = "", opening: int | None = None, origins: Mapping[Config, Sequence[Config]] | None = None,
                ) -> tuple[SearchDriver, dict[str, Any]]:  # fmt: skip
    """The driver of one key's search and what it starts from (``info``: resumed, transfer, budget).

    ``stored``: this key's candidate records (resume: they teach the strategy and count against the
    budget); ``near``: tuned neighbouring keys (transfer: their winners go first and, for the default
    strategy, their landscape is the model's prior). ``opening``: the transfer's first batch size instead of
    :func:`first_batch_size`'s, to compare such rules with each other. ``origins``: a widened list's generated
    configs and the configs one step nearer the list (:data:`RINGS`: no transfer, no budget; it stops on its own).
    """
    if opening is not None and (isinstance(opening, bool) or not isinstance(opening, int) or opening < 1):
        raise SearchError(f"{where}: opening={opening!r} must be a positive number of configs (a transfer's "
                          "first batch)")  # fmt: skip
    space = Space.from_configs(legal)
    info: dict[str, Any] = {"strategy": p.strategy, "why": p.why, "space": len(legal)}
    base, spec_options = parse_spec(p.strategy)  # "surrogate:probe=1": the options go to the strategy
    if base == RINGS:
        near = ()  # the list is the start: its configs go first, whatever other keys won
        spec_options = {**spec_options, "origins": dict(origins or {})}
    transfer = bool(near) and base == DEFAULT
    name = "transfer" if transfer else base
    # Transfer: the whole first batch comes from the tuned keys (their winners, then their fastest configs by
    # the prior), not from random draws while this key has no measurement yet.
    first = (first_batch_size(len(near), width) if opening is None else opening) if transfer else None
    options: dict[str, Any] = ({"key": dict(key_values), "neighbours": list(near),
                                "warm": max(width, 2 * len(near)), "first": first} if transfer else {})  # fmt: skip
    try:
        strategy = get(name, space, seed=seed, **{**spec_options, **options})
    except TypeError as e:  # an option the strategy does not take
        raise SearchError(f"{where}: strategy {p.strategy!r}: {e}; see the strategy's docstring for its "
                          "options") from None  # fmt: skip
    except SearchError as e:
        if not spec_options:
            raise
        raise type(e)(f"{where}: strategy {p.strategy!r}: {e}") from None
    if p.budget is not None:
        resolved = p.budget.resolve(len(legal))
        info["budget"] = str(p.budget)
    elif base == RINGS:
        resolved = Budget(evaluations=len(legal))
        info["budget"] = "none: until no neighbour is near the best"
    else:
        resolved = Budget(evaluations=default_evaluations(len(legal), width, transfer=bool(near)))
        info["budget"] = f"default: {resolved.evaluations} evaluations" + (" (transfer)" if near else "")
    legal_set = set(legal)
    known = known_outcomes([r for r in stored if r.config in legal_set])
    left = resolved
    if resolved.evaluations is not None:  # what the store holds counts: a larger budget measures the difference
        n = resolved.evaluations - len(known)
        if n < 1:
            info["nothing_left"] = True  # the stored finalists may race again; nothing new is proposed
            left = Budget(seconds=1e-9)  # a driver that is done before its first batch
        else:
            left = Budget(evaluations=n, seconds=resolved.seconds)
    from tritune.search import Strategy

    if not isinstance(strategy, Strategy):
        raise SearchError(f"{where}: strategy {name!r} is not a tritune.search.Strategy; the tuning loop "
                          "needs preload() for stored results")  # fmt: skip
    warm = [w for nb in sorted(near, key=lambda nb: _distance(key_values, nb)) if (w := nb.winner()) is not None]
    # A budget given explicitly keeps ~ROUNDS rounds of adaptivity when it is small (SearchDriver: adaptive
    # width); the default budget is sized in whole batches of the pool for wall time and keeps them.
    rounds = ROUNDS if p.budget is not None else None
    driver = SearchDriver(strategy, left, width=width, known=known, warm=warm, first=first,
                          confirm=transfer and p.budget is None, rounds=rounds)  # fmt: skip
    info["evaluations_allowed"] = resolved.evaluations
    info["resumed"] = driver.resumed
    if near:
        info["transfer"] = {"keys": [dict(nb.key) for nb in near], "warm": [c.id for c in warm], "first": first,
                            "confirm": driver.confirm}  # fmt: skip
    return driver, info


def start_driver(p: SearchPlan, legal: Sequence[Config], *, store: Any, tkey: Any, key_values: Mapping[str, Any],
                 where: str, width: int, shared: Any = None,
                 origins: Mapping[Config, Sequence[Config]] | None = None) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """The search driver of one key and its ``make_driver`` info: resumed from the store's records of ``tkey``,
    seeded by the kernel's other tuned keys. With ``shared`` (a :class:`tritune.ranks.RanksField`) rank 0
    builds it, as wide as every rank's pool, and the other ranks get a view of it (the same ``summary()``)."""
    stored = store.candidates(tkey, legal) if store is not None else []  # make_driver reads the legal ones only
    near = neighbours(store, tkey, legal)

    def make(w: int) -> tuple[Any, dict[str, Any]]:
        return make_driver(p, legal, width=w, key_values=key_values, stored=stored, near=near, where=where,
                           origins=origins)  # fmt: skip

    return make(width) if shared is None else shared.start(make, width)


def first_batch_size(n_near: int, width: int) -> int:
    """A transfer's first batch: :data:`TRANSFER_PER_KEY` configs per tuned key plus :data:`TRANSFER_EXTRA`,
    at most the pool's width (3 tuned keys, 16 workers: 8).

    Per tuned key, not per distinct winner: when the tuned keys agree on one winner, a batch of 4 (the winner
    and the 3 configs they measured fastest) let a neighbour's winner be confirmed where the new key's best lay
    elsewhere. Replayed on SYNTHETIC fitted families (``benchmarks/landscapes/fitted.py``, 30 families x 4 new
    keys x 5 seeds, 1% noise): runs whose 3 tuned keys shared one winner picked a config > 1.02x the true best
    in 32% of runs with 2 per distinct winner + 2, against 12% with this rule; over all 600 runs 23% against
    18%, for 9.6 configs measured instead of 11.1."""
    return max(1, min(width, TRANSFER_PER_KEY * n_near + TRANSFER_EXTRA))


def default_evaluations(n_legal: int, width: int, *, transfer: bool = False) -> int:
    """The default budget of a search of ``n_legal`` configs with a pool of ``width`` (module docstring)."""
    n = min(DEFAULT_MAX, max(DEFAULT_MIN, math.ceil(DEFAULT_SHARE * n_legal)))
    if transfer:
        n = math.ceil(n * TRANSFER_FRACTION)
    n = max(width, n // width * width)  # whole batches: a partial one waits for its slowest compile all the same
    return max(1, min(n, n_legal))


def _distance(key: Mapping[str, Any], nb: KeyResults) -> float:
    from tritune.search.transfer import key_distance

    return key_distance(key, nb.key)


def stored_finalists(store: Any, key: Any, legal: Sequence[Config], limit: int = 3) -> list[Config]:
    """The stored winner of ``key`` and its ties (at most ``limit``), to race again against new configs."""
    if store is None:
        return []
    win = store.lookup_winner(key)
    if win is None:
        return []
    legal_set = set(legal)
    return [c for c in (win.config, *win.ties) if c in legal_set][:limit]


def summary(driver: SearchDriver, info: Mapping[str, Any], winner: Config | None) -> dict[str, Any]:
    """What was searched, measured and why it stopped, for ``choices()``, the JSON result and the report."""
    s = driver.summary()
    out = {**info, "evaluated": s["evaluated"], "measured": s["measured"], "failed": s["failed"],
           "stopped": "store" if info.get("nothing_left") else s["stopped"], "width": s["width"],
           "winner": None if winner is None else winner.id}  # fmt: skip
    out["measured_total"] = out["measured"] + int(info.get("resumed", 0))
    if s.get("batch", s["width"]) != s["width"]:  # a small budget given, in narrower batches (adaptive width)
        out["batch"] = s["batch"]
    if s.get("finals") is not None:  # the strategy's finalist probes: counted in evaluated/measured above
        out["finals"] = dict(s["finals"])
    if s.get("checked"):  # the check race after an unconfirmed opening (SearchDriver.check_field): its field
        out["checked"] = list(s["checked"])
    untimed = getattr(getattr(driver, "strategy", None), "untimed", None)
    if callable(untimed):  # a widened list's neighbours of configs far from the best (tritune.search.rings)
        out["untimed"] = len(untimed())
    out.pop("nothing_left", None)
    return out


def searched_enough(p: SearchPlan, winner: Any, n_recorded: int, n_legal: int) -> bool:
    """Whether a stored winner (a WinnerRecord) of a search already answers plan ``p``: it came from a search,
    and ``p``'s budget (default: any search) asks for no more configs than the key has records of."""
    prov = getattr(winner, "provenance", None) or {}
    if "search" not in prov:
        return False
    if p.budget is None:
        return True
    resolved = p.budget.resolve(max(1, n_legal))
    return resolved.evaluations is None or resolved.evaluations <= n_recorded

"""The state of one key while it tunes on real calls (``incremental=True``): pure logic, no GPU, no threads.

A key's candidates move through phases::

    compiling -> ready (compiled, unchecked) -> racing (checked: serves real calls) -> promoted
                      \\-> disagreed (its scratch run differed from the provisional output: never used again)
    compiling -> failed (did not compile or load)          racing -> eliminated (slower with confidence)

The provisional config races from the start (it is the reference of the checks). Candidates are checked
in ``check_order`` (by default the declared order; the decorator puts first the configs that were fastest
at the nearest tuned key), and a check's scratch run of the candidate is its first timing sample. Every
real call while the key tunes goes to one racing candidate, in turn (the one with the fewest samples, ties in declared
order), so drift in clocks or load hits all of them alike. Decisions use the race's statistics
(:mod:`tritune.bench.stats`): a candidate is eliminated when its median's interval at
``elimination_confidence`` lies wholly above the smallest upper bound among the racers; once nothing is
compiling or waiting for a check, the key is promoted when one racer is left (``decided``), when no other
racer can be more than ``rel_tol`` faster than the leader with confidence (``tied``: ties are ties, the
leader is kept and the others are reported as its ties), or when every racer has ``max_samples``
(``budget``: the smallest median wins).

Decisions are made from *observations* (:class:`Observations`, fed by the background resolver) and take
effect through :meth:`KeyState.apply` of a :class:`Proposal`. One process applies its own proposal; ranks
of a distributed job apply the merge of every rank's proposal at an agreement step (:func:`merge`), so every
rank dispatches the same config for the same call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from statistics import NormalDist
from typing import Any

from tritune.bench.stats import Measurement, median_ci_ranks, within
from tritune.config import Config

#: The share of ``gpu_fraction`` that the keys' buckets and the kernel's pool earn: checks are scheduled against
#: 97% of the bound, and the rest absorbs checks that measure dearer than their estimate (corrected only when
#: their events resolve, so the debt they leave at a stream's end is never repaid). The H200's 60,000-call
#: RMSNorm stream ended at 10.1% of a 10% bound with every key scheduling against the whole bound.
CHECK_SHARE = 0.97

#: ``IncrementalOptions.decision``'s values: ``"intervals"``, each racer's own interval of its median (the race's
#: rule, :mod:`tritune.bench.stats`); ``"difference"``, an interval on the difference of two racers' medians;
#: ``"indifference"``, that and a racer dropped once it cannot be ``rel_tol`` faster than the leader.
DECISIONS = ("intervals", "difference", "indifference")

#: The smallest relative spread (a sigma, as a share of the median) the difference rule assumes of a racer's
#: samples: event times come in steps (a window of equal samples has no spread), and no span is that exact.
SPREAD_FLOOR = 0.01


@dataclass(frozen=True)
class IncrementalOptions:
    """How a key tunes on real calls.

    ``gpu_fraction``: extra device time (a check: the scratch copies, the candidate's scratch run and the
    comparison, all timed) allowed per call, as a fraction of the measured device time of the key's real
    calls (one token bucket per key, so rare keys never spend what the frequent ones earned;
    ``burst_calls`` calls' worth of earnings, or one check's estimate, may be saved up; a key with at least
    an even share of the calls may also spend what the others earned and left unspent, any key with
    ``burst_calls`` calls what promoted keys left and the buckets could not hold, and all checks together stay
    within the fraction of all calls). ``min_samples``/``max_samples``: samples per racer
    before any elimination / kept (the latest).
    ``rel_tol`` and ``elimination_confidence`` as in :class:`~tritune.engine.race.RaceOptions` (ties within
    ``rel_tol`` are ties). ``sync_every``: calls of a key between agreement steps with ``distributed=True``.
    ``prune_ratio``: a candidate whose median at the nearest tuned key was more than this many times that
    key's best (raised for a neighbour farther than :data:`PRUNE_NEAR`: :func:`prune_threshold`) is neither
    compiled nor checked nor raced (a check costs several calls' worth of the budget;
    on a 5 us kernel, checking every candidate took ~100 calls each); 0 turns pruning off. Candidates the
    neighbour did not time are kept. ``prune_distance``: only a neighbour this near prunes (the sum over
    numeric key parts of ``|log2(a) - log2(b)|``: 1.0 is a factor of 2 in one part). On the H200 a GEMM's
    best config at M = 96 was 3.3x slower at M = 320 (tile quantization): a far neighbour pruned the winner.
    ``stall_ms``: an event span whose launches took the caller's thread longer than this (a launch takes
    5-30 us of host time) was *stretched*: another thread (the compile thread loading binaries and building
    launchers, ~1 ms of Python each) held the interpreter's lock when the launch gave it up, and the event
    pair, on an idle device, measured that wait. A stretched span is no sample, and a check with one is
    charged its estimate, not the wait (see :class:`~tritune.serving.incremental.Incremental`).
    ``spin_idle`` (default on): queue a short GPU spin before a span's start event when the device is idle, so
    a short kernel's span holds the kernel and not the launch's host time (:class:`~tritune.serving.runtime.
    CudaClock`). On the H200's serving stream it converged 5 of 6 hot RMSNorm buckets to within 2% of the best
    (without: 1 of 6, the others promoted to configs 1.07-1.28x the best, their spans mostly host time) and 6
    of 6 GEMM buckets (without: 5), within the same extra-GPU bound. ``spin_idle=False`` turns it off (a
    server whose stream is never idle gains nothing from it; it costs one more launch per racing call when idle).
    ``lone_every``: while the provisional config races alone (its candidates compile or wait for their checks,
    often a few hundred calls: the checks wait for the budget) and already has ``max_samples`` samples, one call
    in ``lone_every`` is timed (its window stays fresh); the others run untimed, through the same fast launcher,
    and earn the budget at its recent median (no event pair, no resolver work: a timed call cost the H200's
    caller ~50 us of host time more than a cached one). The same while several racers wait for another
    candidate's check with every window full (:meth:`KeyState.waiting_leader`): the untimed calls go to the
    leader (``wait_leader=False``: round-robin timed calls). 1 times every call.
    ``drop_late`` (default off): a span whose start event had already
    passed when its launch returned (:meth:`~tritune.serving.runtime.CudaClock.late`: the device waited for
    the launch, so the span holds host time) is no sample; the call still earns the budget, at the config's
    recent median (nothing while it has none), not at the span's inflated time. On the H200's serving stream 8%
    of the spans were late; dropping them and earning nothing for them starved RMSNorm's checks (2 keys of 24
    promoted); the hottest RMSNorm bucket, which converged 1.081x and 1.149x off the best in the runs without
    the drop, converged to the best with it (one run). A CPU replay of the serving race (FAKE samples)
    converges fewer hot buckets with it (79.5% against 88.8% over 30 seeds), so it is off by default.
    ``resolve``: who resolves the event pairs. ``"inline"`` (the default): each tuning call of the kernel,
    after its launch, resolves the pairs the device has already passed (a driver query that keeps the
    interpreter's lock; never a wait) and runs their bookkeeping and decisions on its own thread, while the
    device runs the call's kernel; the resolver thread takes over only pairs the callers left (a key whose
    calls stopped: within ~55 ms). ``"thread"``: the resolver thread, woken by each pair, resolves them in
    batches of ``Resolver.batch_s``. Python has one interpreter lock: the thread's work is the
    caller's time either way, and a second thread adds a hand-over of the lock at the caller's releases (each
    launch, event record and synchronize). On the H200 (``benchmarks/serving.py --resolve``, the
    RMSNorm stream of 60,000 calls, two runs each) the incremental stream's excess over the pretuned one was
    457 / 686 ms inline against 808 / 1,157 ms with the thread; promoted keys' calls, which the thread's work
    slowed while other keys raced, ran as fast as the pretuned engine's (-53 / -105 ms against +91 / +311).
    ``round_samples``: the fewest samples of a key between two of its decisions (a decision round is
    ``max(round_samples, racers)`` samples). A decision (:meth:`KeyState.propose`, every racer's interval, and
    :meth:`KeyState.apply`) cost ~12 us of this project's CPU against ~3 us for a sample's bookkeeping, and with two
    to four racers a round of one sample per racer came every two to four samples: 1,948 decisions for 3,180
    samples in a CPU replay of the serving race on the H200's landscapes (60,000 calls), most of a racing
    call's resolution. At 4: 979 decisions, the racing calls' host time 66 against 82 ms in all
    (p50 13.6 against 19.5 us), convergence over 20 seeds 99.2% against 99.0%, racing calls 2,882 against 2,939,
    the median promotion 6 calls later; at 8, 97.9% and 2,943; at 16, 98.8% and 3,131. 1: a decision every round.
    On the H200 (three processes, nine repetitions each way) no difference beyond the runs' spread.
    ``gate`` (default off): the clock gates a racing call's span instead of spinning before it
    (:func:`~tritune.serving.runtime.cuda_clock`): the device waits on a host counter, opened once the
    span's stop event is queued, or by the device itself after 0.5 ms
    (:class:`~tritune.serving.runtime.GateWatch`); a span opened that way is no sample. On the H200
    (six RMSNorm and three GEMM repetitions beside the default) it never hung and paid nothing beyond
    the spread in a stream that synchronizes after every call; on a busy stream its spans hold no host time
    (late in 3 of 9,999 back-to-back spans against the default clock's 3,792 of 10,000).
    ``decision`` (default ``"intervals"``): how racers are compared. ``"intervals"``: each racer's own interval of
    its median (ranks, distribution-free), as the race does; a tie needs both intervals within ``rel_tol``, so
    at 2-3% noise two tied racers usually run to ``max_samples``. ``"difference"``: an interval on the difference
    of two medians (a normal approximation with a robust spread, the IQR, at least :data:`SPREAD_FLOOR`), about
    half as wide for two racers of equal noise; ``"indifference"``: also drops a racer that cannot be ``rel_tol``
    faster than the leader. The CPU replay (the H200's landscapes, 60,000 calls, 20 seeds): racing calls 2,882 /
    2,759 / 2,698, converged 99.2% / 98.8% / 98.8%. On the H200 (the RMSNorm stream, nine repetitions in three
    processes beside the default) the racing calls fell 10-20% but the stream's total did not (difference minus
    default +209, +61, -84 ms median by process; indifference +25, +115, +137), and with ``spin_idle=False`` both
    converged 67-79%: the default is ``"intervals"``.
    """

    gpu_fraction: float = 0.10
    burst_calls: int = 50
    min_samples: int = 8
    max_samples: int = 32
    rel_tol: float = 0.02
    elimination_confidence: float = 0.99
    sync_every: int = 16
    prune_ratio: float = 1.3
    prune_distance: float = 1.0
    stall_ms: float = 0.5
    spin_idle: bool = True
    lone_every: int = 4
    drop_late: bool = False
    wait_leader: bool = True
    resolve: str = "inline"
    round_samples: int = 4
    gate: bool = False
    decision: str = "intervals"

    @property
    def spend_fraction(self) -> float:
        """What checks are scheduled against: :data:`CHECK_SHARE` of ``gpu_fraction``."""
        return self.gpu_fraction * CHECK_SHARE

    def __post_init__(self) -> None:
        if not 0 < self.gpu_fraction <= 1:
            raise ValueError(f"gpu_fraction={self.gpu_fraction}: expected a fraction in (0, 1]")
        if self.min_samples < 3 or self.max_samples < self.min_samples:
            raise ValueError("min_samples must be >= 3 and max_samples >= min_samples")
        if self.rel_tol <= 0 or not 0.5 < self.elimination_confidence < 1 or self.sync_every < 1:
            raise ValueError("rel_tol must be > 0, elimination_confidence in (0.5, 1), sync_every >= 1")
        if self.prune_ratio != 0 and self.prune_ratio < 1:
            raise ValueError(f"prune_ratio={self.prune_ratio}: expected 0 (off) or a ratio >= 1")
        if self.prune_distance < 0:
            raise ValueError(f"prune_distance={self.prune_distance}: expected a distance >= 0")
        if self.stall_ms <= 0:
            raise ValueError(f"stall_ms={self.stall_ms}: expected milliseconds > 0")
        if self.lone_every < 1:
            raise ValueError(f"lone_every={self.lone_every}: expected 1 (time every call) or more")
        if self.round_samples < 1:
            raise ValueError(f"round_samples={self.round_samples}: expected 1 (a decision every round) or more")
        if self.resolve not in ("thread", "inline"):
            raise ValueError(f"resolve={self.resolve!r}: expected 'thread' or 'inline'")
        if self.decision not in DECISIONS:
            raise ValueError(f"decision={self.decision!r}: expected one of {', '.join(DECISIONS)}")


class GpuBudget:
    """A token bucket over measured device time: every real call earns ``fraction`` of its device time,
    every check spends its estimate at once and is corrected to its measured time when the events resolve.
    A check starts only when the bucket holds its whole estimate, so the bucket may save up one check's
    estimate even where that is more than ``burst_calls`` calls' earnings (a check of a short kernel costs
    a few calls: the rule "run a dearer check when the bucket is full" leaves each key in debt after its
    last check, and with it the H200's stream ended 11.5-12.7% over a 10% bound). Only an estimate
    below the measured cost (corrected at once) can leave a debt. Thread-safe."""

    def __init__(self, fraction: float, burst_calls: int, parent: GpuBudget | None = None,
                 spill: GpuBudget | None = None) -> None:  # fmt: skip
        self.fraction = fraction
        self.burst_calls = burst_calls
        self.parent = parent  # an account of every key's earnings and spending (reports only)
        self.spill = spill  # where earnings beyond the cap go (the kernel's pool), else they are dropped
        self.tokens_ms = 0.0
        self.cap_ms = 0.0  # what the bucket holds when full (burst_calls of the latest call's earnings)
        self.earned_from_ms = 0.0  # device time of the real calls seen
        self.spent_ms = 0.0  # device time of the checks
        self._lock = threading.Lock()

    def earn(self, call_ms: float, hold_ms: float = 0.0) -> None:
        """Earn ``fraction`` of ``call_ms``; the bucket holds up to ``burst_calls`` such earnings, or
        ``hold_ms`` (the next check's estimate) where that is more; what it cannot hold goes to ``spill``."""
        f = self.fraction
        with self._lock:  # (max and min spelled out: the same values, three builtin calls fewer per real call)
            self.earned_from_ms += call_ms
            x = f * call_ms * self.burst_calls
            cap = self.cap_ms = hold_ms if hold_ms > x else x  # max(x, hold_ms)
            tokens = self.tokens_ms
            full = tokens + f * call_ms
            kept = tokens if tokens > cap else cap  # max(cap, tokens)
            tokens = self.tokens_ms = full if full < kept else kept  # min(kept, full)
            over = full - tokens
        parent = self.parent
        while parent is not None:  # parent.account(call_ms), inlined (once per real call)
            with parent._lock:
                parent.earned_from_ms += call_ms
            parent = parent.parent
        spill = self.spill
        if over > 0 and spill is not None:
            with spill._lock:  # spill.receive(over), inlined
                spill.tokens_ms += over

    def account(self, call_ms: float) -> None:
        """Count ``call_ms`` as earned from (an account of every key's calls: its tokens are not used)."""
        with self._lock:
            self.earned_from_ms += call_ms
        if self.parent is not None:
            self.parent.account(call_ms)

    def try_spend(self, estimate_ms: float) -> bool:
        """Spend ``estimate_ms`` if the bucket holds all of it."""
        with self._lock:
            if self.tokens_ms < estimate_ms or self.tokens_ms <= 0:
                return False
            self.tokens_ms -= estimate_ms
            self.spent_ms += estimate_ms
        if self.parent is not None:
            self.parent.force_spend(estimate_ms)
        return True

    def force_spend(self, estimate_ms: float) -> None:
        """Spend whatever the tokens (an agreement step of all ranks scheduled it)."""
        with self._lock:
            self.tokens_ms -= estimate_ms
            self.spent_ms += estimate_ms
        if self.parent is not None:
            self.parent.force_spend(estimate_ms)

    def lend(self, want_ms: float) -> float:
        """Give up to ``want_ms`` of this bucket's tokens to another key's check (they leave this bucket: no
        token is spent twice); what was given."""
        with self._lock:
            given = min(want_ms, max(0.0, self.tokens_ms))
            self.tokens_ms -= given
        return given

    def receive(self, ms: float) -> None:
        """Tokens lent by other keys' buckets (see :meth:`lend`)."""
        with self._lock:
            self.tokens_ms += ms

    def correct(self, estimate_ms: float, actual_ms: float) -> None:
        with self._lock:
            self.tokens_ms += estimate_ms - actual_ms
            self.spent_ms += actual_ms - estimate_ms
        if self.parent is not None:
            self.parent.correct(estimate_ms, actual_ms)

    @property
    def extra_fraction(self) -> float:
        """Scratch device time spent over the device time of the real calls."""
        return self.spent_ms / self.earned_from_ms if self.earned_from_ms > 0 else 0.0

    @property
    def unspent_ms(self) -> float:
        """``fraction`` of the real calls' device time less what the checks spent (for an account of every key:
        the most that all keys together could still lend)."""
        return self.fraction * self.earned_from_ms - self.spent_ms


_COUNT = itemgetter(0)  # a turn cell's count (KeyState.next_racer)


def lower_median(xs: Iterable[float]) -> float:
    """The lower median of ``xs`` (non-empty): of two values, the smaller, so one outlier never sets it."""
    ys = sorted(xs)
    return ys[(len(ys) - 1) // 2]


@dataclass
class Observations:
    """What one process has seen of a key (written by the background threads, read under ``lock``)."""

    compiled: set[Config] = field(default_factory=set)
    failed: dict[Config, str] = field(default_factory=dict)
    checked: set[Config] = field(default_factory=set)
    disagreed: dict[Config, str] = field(default_factory=dict)
    samples: dict[Config, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _median_ci(ys: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """(median, interval's low, interval's high) of the sorted samples ``ys``: the numbers the decision rule
    reads, as :meth:`Measurement.from_samples` computes them (its median is ``_quantile(ys, 0.5)``: the same
    arithmetic is spelled out here, so the same float)."""
    n = len(ys)
    lo, hi, _ = median_ci_ranks(n, confidence)
    pos = 0.5 * (n - 1)
    m = math.floor(pos)
    t = pos - m
    return ys[m] * (1.0 - t) + ys[min(m + 1, n - 1)] * t, ys[lo], ys[hi]


@lru_cache(maxsize=16)
def _z(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (2.576 at 0.99)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _median_se(ys: Sequence[float], median: float) -> float:
    """The standard error of the median of the sorted samples ``ys``, from their interquartile range (a
    sigma of ``IQR / 1.349``, at least :data:`SPREAD_FLOOR` of the median; one outlier moves neither) and the
    median's efficiency of a normal sample (``1.2533 sigma / sqrt(n)``)."""
    n = len(ys)
    sigma = max((ys[(3 * (n - 1)) // 4] - ys[(n - 1) // 4]) / 1.349, SPREAD_FLOOR * median)
    return 1.2533 * sigma / math.sqrt(n)


@dataclass(frozen=True)
class Proposal:
    """A state the key may move to: candidates usable for checks (``ready``) and real calls (``racing``),
    the removed ones with why, and the promoted config (None while tuning)."""

    ready: frozenset[Config]
    racing: frozenset[Config]
    failed: Mapping[Config, str]
    disagreed: Mapping[Config, str]
    eliminated: frozenset[Config]
    promoted: Config | None = None
    stop: str = ""
    ties: tuple[Config, ...] = ()


#: Key distance (:func:`~tritune.serving.incremental.key_distance`; 0.5 is a factor of sqrt(2) in one part) up to
#: which a neighbour's timings prune at ``prune_ratio`` itself; farther, the ratio needed grows as
#: ``prune_ratio ** (distance / PRUNE_NEAR)`` (1.69x at a factor of 2 with the default 1.3).
PRUNE_NEAR = 0.5


def prune_threshold(ratio: float, distance: float) -> float:
    """The ratio to the neighbour's best beyond which a candidate is pruned, for a neighbour ``distance`` away.

    A landscape changes with the key: on the H200's serving stream (60,000 calls) the GEMM's best
    config at M = 64 ran 1.30x the best at M = 128 (tile quantization: BM = 16 against 32), and the best at
    M = 1152 ran 1.29x the best at M = 2048; a flat 1.3 pruned both winners, and 4 of 24 buckets were promoted
    to configs 1.09-1.27x the best. A far neighbour must rate a candidate worse before it is left out."""
    return ratio ** max(1.0, distance / PRUNE_NEAR)


def prune(timings: Mapping[Config, Sequence[float]] | None, legal: Sequence[Config], ratio: float,
          keep: Config, distance: float = 0.0, protect: frozenset[Config] = frozenset()) -> dict[Config, str]:  # fmt: skip
    """The candidates of ``legal`` (not ``keep``) whose median (``timings[c][0]``) at the nearest tuned key,
    ``distance`` away, exceeds :func:`prune_threshold` times the best median there, with why; none when
    ``ratio`` is 0 or nothing was timed. ``protect``: never pruned (the incremental mode passes every config
    that won at a tuned key of the kernel: the GEMM's winner at M = 1152 and 1280 on the H200 ran 1.56-1.69x
    the best at M = 1024, only 0.17 away, where tile and wave quantization differ; pruned, those buckets were
    promoted 1.09-1.11x off in every run. Replayed on the H200's landscapes at 60,000 calls: GEMM
    converged 100% of hot buckets with it against 91.7% without, RMSNorm 100% either way)."""
    if not timings or ratio == 0:
        return {}
    timed = {c: float(timings[c][0]) for c in legal if timings.get(c)}
    if not timed:
        return {}
    best = min(timed.values())
    limit = prune_threshold(ratio, distance)
    return {c: f"{t / best:.2f}x the best at the nearest tuned key, {distance:.2f} away (limit {limit:.2f}: "
               f"prune_ratio={ratio:g})"
            for c, t in timed.items() if c != keep and c not in protect and best > 0 and t > limit * best}  # fmt: skip


def merge(proposals: Sequence[Proposal], configs: Sequence[Config]) -> Proposal:
    """The agreement of every rank (the same answer on every rank, given the same list in rank order): a
    candidate is usable only where every rank has it; a failure or disagreement anywhere removes it;
    an elimination anywhere removes it; the promotion is rank 0's (timed on its GPU), and only of a config
    every rank still races."""
    first = proposals[0]
    failed: dict[Config, str] = {}
    disagreed: dict[Config, str] = {}
    for rank, p in enumerate(proposals):
        for c, why in p.failed.items():
            failed.setdefault(c, f"rank {rank}: {why}")
        for c, why in p.disagreed.items():
            disagreed.setdefault(c, f"rank {rank}: {why}")
    gone = set(failed) | set(disagreed)
    ready = frozenset(c for c in configs if all(c in p.ready for p in proposals) and c not in gone)
    racing = frozenset(c for c in configs if all(c in p.racing for p in proposals) and c not in gone)
    eliminated = frozenset(c for p in proposals for c in p.eliminated)
    racing = racing - eliminated
    promoted = first.promoted if first.promoted in racing else None
    return Proposal(ready, racing, failed, disagreed, eliminated, promoted,
                    first.stop if promoted else "", first.ties if promoted else ())  # fmt: skip


class KeyState:
    """One key's candidates, phases and samples, and the decision rule (see the module docstring)."""

    def __init__(self, configs: Sequence[Config], provisional: Config, options: IncrementalOptions,
                 check_order: Sequence[Config] | None = None, budget: GpuBudget | None = None,
                 pruned: Mapping[Config, str] | None = None) -> None:  # fmt: skip
        if provisional not in configs:
            configs = [provisional, *configs]
        # A config declared twice is one candidate (the decorator's legal_configs drops repeats already; the
        # decision rule's one pass over the configs counts each once).
        configs = list(dict.fromkeys(configs))
        #: Candidates left out by the nearest tuned key's timings (see ``prune_ratio``), with why.
        self.pruned = {c: why for c, why in (pruned or {}).items() if c != provisional}
        self.configs = [c for c in configs if c not in self.pruned]
        order = [c for c in (check_order or ()) if c in self.configs]
        self.check_order = order + [c for c in self.configs if c not in order]
        self.provisional = provisional
        self.options = options
        #: This key's token bucket: checks spend what the key's own real calls earned.
        self.budget = budget if budget is not None else GpuBudget(options.spend_fraction, options.burst_calls)
        self.check_cost: list[float] = []  # measured device ms of this key's checks (the next estimate)
        self.check_parts: list[tuple[float, float, float]] = []  # each check's copies, scratch run, comparison ms
        #: A first check's estimate in real calls of the provisional config: 3, or what the kernel's other
        #: keys' checks measured (set by the incremental mode), so a first check rarely leaves a debt.
        self.check_calls = 3.0
        self.obs = Observations(compiled={provisional}, checked={provisional})
        self.applied = Proposal(frozenset({provisional}), frozenset({provisional}), {}, {}, frozenset())
        self._to_check = [c for c in self.check_order if c != provisional]  # not racing, not removed
        self.calls = 0
        #: Each config's turn cell ``[count, config]`` (never replaced): the count is the real calls sent to it
        #: (the caller's thread counts) plus its head start. next_racer takes the racers' cells' minimum by
        #: count in C (``min`` with ``itemgetter(0)``) and hashes no config (a Python call each: 17 a call with
        #: 8 racers in a loop over a dict of counts).
        self._cells: dict[Config, list[Any]] = {}
        self._racers = [provisional]  # the racers in declared order
        self._turns = [self._cell(provisional)]  # the racers' cells, in declared order
        #: propose's last ready and racing members and their frozensets (reused while the members are the same).
        self._sets: list[tuple[list[Config], frozenset[Config]] | None] = [None, None]
        self._head_start: dict[Config, int] = {}  # set by apply for a joiner (may be negative): not calls
        self._since = 0  # samples since the last decision
        self._round = options.round_samples  # the fewest samples between decisions (see observe)
        self._leader: tuple[int, Config, float] | None = None  # waiting_leader's (call it was found at, cfg, ms)
        self.checking: set[Config] = set()  # scratch runs whose comparison has not resolved yet
        #: (the key's call count, what happened) for each compile, load failure and check as it resolved
        #: (background threads append; :meth:`diagnose` reports it: when a key's candidates became usable).
        self.timeline: list[tuple[int, str]] = []
        self.stretched = 0  # spans of this key's calls another thread stretched (not used as samples)
        self.borrow_after = 0  # a frequent key's next try to borrow tokens, in its calls (Incremental._afford)

    def prune_more(self, pruned: Mapping[Config, str]) -> list[Config]:
        """Leave out ``pruned`` candidates that are not racing yet (a nearer key was promoted since this one
        started); the ones left out. The lists are replaced, never changed in place (the caller's thread
        reads them)."""
        racing = self.applied.racing | set(self.checking) | {self.provisional}
        out = [c for c in pruned if c in self.configs and c not in racing]
        if out:
            self.pruned = {**self.pruned, **{c: pruned[c] for c in out}}
            self.configs = [c for c in self.configs if c not in self.pruned]
            self.check_order = [c for c in self.check_order if c not in self.pruned]
            self._to_check = [c for c in self._to_check if c not in self.pruned]
        return out

    # -- observations (background threads) ------------------------------------------------------------
    def compiled(self, cfg: Config, why_not: str | None = None) -> None:
        with self.obs.lock:
            if why_not is None:
                self.obs.compiled.add(cfg)
            else:
                self.obs.failed[cfg] = why_not
            self.timeline.append((self.calls, f"{'compiled' if why_not is None else 'failed'} {cfg.id}"))

    def checked(self, cfg: Config, why_not: str | None, ms: float | None = None) -> None:
        """A check resolved: ``why_not`` is None when the candidate agreed; ``ms``, its scratch run's
        time, is then its first sample (the same work on the same shapes as a real call)."""
        with self.obs.lock:
            self.checking.discard(cfg)
            if why_not is None:
                self.obs.checked.add(cfg)
                if ms is not None:
                    self.obs.samples.setdefault(cfg, []).append(ms)
            else:
                self.obs.disagreed[cfg] = why_not
            self.timeline.append((self.calls, f"{'checked' if why_not is None else 'disagreed'} {cfg.id}"))

    def check_estimate_ms(self) -> float | None:
        """What the next check will cost: the median of this key's measured checks, else ``check_calls`` (by
        default three) real calls of the provisional config (its scratch run, plus copies and a comparison that
        move the outputs' bytes twice: for a memory-bound kernel whose outputs are a third of its traffic, a
        call's worth each, rounded up so the first check rarely leaves a debt); None before anything was timed.
        The median, not the last: one check whose spans another thread stretched (the H200's stream: a check of
        ~0.1 ms measured at several ms) set the next estimate, and the key then saved up for a thousand calls.
        The kernel's estimate (``check_calls`` calls, learned from every key's checks) votes with the key's own
        checks: a key's one first check measured 0.49 ms on the H200 (60,000 calls) where the other
        keys' cost 0.03-0.07 ms, and the key saved up for it for 800 calls and was never promoted."""
        call = self.recent_ms(self.provisional)
        prior = None if call is None else self.check_calls * call
        if self.check_cost:
            # the lower median: of one check and the kernel's estimate, the smaller; of two, not the outlier
            return lower_median(self.check_cost if prior is None else [*self.check_cost, prior])
        return prior

    def sample(self, cfg: Config, ms: float) -> bool:
        """Record a timing; True once a round's worth of samples (one per racer, at least
        ``options.round_samples``) came in since the last True, the moment for a decision (deciding on every
        sample would cost the resolver ~10x more)."""
        return self.observe(cfg, ms, earn=False)

    def observe(self, cfg: Config, ms: float, earn: bool = True) -> bool:
        """A real call's timing: recorded as :meth:`sample` says, then earned (:meth:`earn`) unless ``earn`` is
        False, in one call (the resolver's work per event pair, which holds the interpreter's lock while a
        caller may wait for it); :meth:`sample`'s answer."""
        with self.obs.lock:
            xs = self.obs.samples.setdefault(cfg, [])
            xs.append(ms)
            if len(xs) > self.options.max_samples:  # a window of the latest: bounded memory and cost, and drift
                del xs[0]  # (a key can wait long for its compiles) ages out
            self._since += 1
            n = len(self.applied.racing)
            due = self._since >= (n if n > self._round else self._round)  # max(round_samples, n)
            if due:
                self._since = 0
        if earn:
            self.earn(ms)
        return due

    # -- dispatch (the caller's thread) ---------------------------------------------------------------
    @property
    def promoted(self) -> Config | None:
        return self.applied.promoted

    def next_racer(self) -> Config:
        """The racing candidate for this call: fewest calls dispatched first, declared order among equals
        (counted here, not from resolved samples, so ranks that agree on the state agree on the config).
        On every racing call: ``min`` over the racers' turn cells in declared order (kept by :meth:`apply`)."""
        cell = min(self._turns, key=_COUNT)  # the first of the fewest, as a loop in declared order finds it
        cell[0] += 1
        return cell[1]  # type: ignore[no-any-return]

    def _cell(self, cfg: Config) -> list[Any]:
        cell = self._cells.get(cfg)
        if cell is None:
            cell = self._cells.setdefault(cfg, [0, cfg])
        return cell

    @property
    def dispatched(self) -> dict[Config, int]:
        """Each config's turn count (a copy): the real calls sent to it while it raced plus its head start."""
        return {c: cell[0] for c, cell in list(self._cells.items())}

    def sent(self, cfg: Config) -> int:
        """The real calls sent to ``cfg`` while it raced (its turn count less the head start it joined with)."""
        cell = self._cells.get(cfg)
        return (cell[0] if cell is not None else 0) - self._head_start.get(cfg, 0)

    def lone_ms(self) -> float | None:
        """While one config races alone (the provisional, as a rule) with a full window (see
        ``IncrementalOptions.lone_every``): its recent median, what an untimed call earns; else None (timed)."""
        racers = self._racers
        if len(racers) != 1:
            return None
        xs = self.obs.samples.get(racers[0])
        if xs is None or len(xs) < self.options.max_samples:
            return None
        return self.recent_ms(racers[0])

    def leader(self) -> Config | None:
        """The racer with the smallest recent median among those with ``min_samples`` samples (None: none yet):
        what this key would serve if it were promoted now (read by other keys' pruning)."""
        best: tuple[float, Config] | None = None
        for c in self._racers:
            xs = self.obs.samples.get(c)
            if xs is None or len(xs) < self.options.min_samples:
                continue
            ms = self.recent_ms(c)
            if ms is not None and (best is None or ms < best[0]):
                best = (ms, c)
        return None if best is None else best[1]

    def waiting_leader(self) -> tuple[Config, float] | None:
        """While the key waits for a candidate's check (or compile) and every racer's window is full: the
        leader (the smallest window median) and its recent median, for an untimed call (see
        ``IncrementalOptions.lone_every``); else None. A timed call then adds nothing a decision can use
        before the checks are done (the windows only turn over), costs the caller an event pair and the
        resolver's work, and serves a config at random among the racers: on the H200's 60,000-call stream the
        keys waited ~200 calls each for their checks (the 10% budget), most of them racing calls at 0.10 ms
        against 0.02 ms promoted. Found again once per round of calls, not per call."""
        racers = self._racers
        if len(racers) < 2 or not self._to_check or not self.options.wait_leader:
            return None
        got = self._leader
        if got is not None and self.calls - got[0] < len(racers) and got[1] in racers:
            return got[1], got[2]
        samples, need = self.obs.samples, self.options.max_samples
        best: tuple[float, Config] | None = None
        for c in racers:
            xs = samples.get(c)
            if xs is None or len(xs) < need:
                self._leader = None
                return None
            m = lower_median(list(xs))
            if best is None or m < best[0]:
                best = (m, c)
        assert best is not None
        ms = self.recent_ms(best[1])
        if ms is None:
            return None
        self._leader = (self.calls, best[1], ms)
        return best[1], ms

    def earn(self, call_ms: float) -> None:
        """A real call of ``call_ms`` device time earns the key's budget, which may save up for the next check
        while a candidate waits for one (:meth:`GpuBudget.earn`)."""
        self.budget.earn(call_ms, (self.check_estimate_ms() or 0.0) if self._to_check else 0.0)  # needs_checks()

    def needs_checks(self) -> bool:
        """Whether a candidate still waits for its check (compiled or not): the bucket then saves up for one."""
        return bool(self._to_check)

    def next_check(self, distributed: bool = False) -> Config | None:
        """A compiled candidate that still needs its check (and, in one process, is not being checked: ranks
        resolve at their own pace, so there only the agreed state counts), or None."""
        a = self.applied
        busy = () if distributed else self.checking
        for c in self._to_check:
            if c in a.ready and c not in busy:
                return c
        return None

    # -- decisions ------------------------------------------------------------------------------------
    def recent_ms(self, cfg: Config) -> float | None:
        """A cheap estimate for the caller's path: the median of the last (up to) 5 samples of ``cfg``."""
        xs = self.obs.samples.get(cfg)
        if not xs:
            return None
        last = sorted(xs[-5:])
        return last[len(last) // 2]

    def measurement(self, cfg: Config) -> Measurement | None:
        with self.obs.lock:
            xs = list(self.obs.samples.get(cfg, ()))
        return Measurement.from_samples(xs, rel_tol=self.options.rel_tol) if xs else None

    def propose(self) -> Proposal:
        """The state this process's observations support (the decision rule of the module docstring).

        Runs on the resolver's thread once per decision round, which holds the interpreter's lock while a
        caller waits for it: one pass over the configs, each looked up once per set (a config's hash is a
        Python call; the set comprehensions took ~160 of them per round of 8 racers), the frozensets of the
        last round reused while their members are the same, and each racer's window sorted as it is copied."""
        o, opts = self.obs, self.options
        configs = self.configs
        min_n = opts.min_samples
        ready_l: list[Config] = []
        racing_l: list[Config] = []
        alive: list[Config] = []  # racing, not eliminated (declared order)
        windows: list[list[float] | None] = []  # alive's sorted windows (None: fewer than min_samples)
        settled = True  # every config failed, disagreed or racing
        with o.lock:
            compiled, checked, obs_failed, obs_disagreed, obs_samples = (o.compiled, o.checked, o.failed,
                                                                         o.disagreed, o.samples)  # fmt: skip
            eliminated = set(self.applied.eliminated)
            removed = bool(obs_failed or obs_disagreed)  # (an empty set's test still hashes the config)
            for c in configs:
                if removed and (c in obs_failed or c in obs_disagreed):
                    continue
                if c in compiled:
                    ready_l.append(c)
                    if c in checked:
                        racing_l.append(c)
                        if not eliminated or c not in eliminated:
                            alive.append(c)
                            # Only what the statistics will read: racers still in, with min_samples or more
                            # (copying every racer's whole window on every round was most of the resolver's work).
                            xs = obs_samples.get(c)
                            windows.append(sorted(xs) if xs is not None and len(xs) >= min_n else None)
                        continue
                settled = False
            failed, disagreed = dict(obs_failed), dict(obs_disagreed)
        ready = self._frozen(0, ready_l)
        racing = self._frozen(1, racing_l)
        if len(alive) < 2 and not settled:  # nothing to compare yet: skip the statistics
            return Proposal(ready, racing if len(alive) == len(racing_l) else frozenset(alive), failed, disagreed,
                            frozenset(eliminated))  # fmt: skip
        conf = opts.elimination_confidence
        # Each racer's (median, interval's low, interval's high) as a tuple (no object per racer per round), and
        # bench.stats.within spelled out below: the same comparisons of the same floats.
        stats = [None if w is None else _median_ci(w, conf) for w in windows]
        timed = [m for m in stats if m is not None]
        diff = opts.decision != "intervals"
        ses: list[float | None] = []
        if diff:
            ses = [None if m is None else _median_se(w, m[0]) for w, m in zip(windows, stats)]  # type: ignore[arg-type]
        if len(timed) >= 2:
            if diff:
                out = self._outpaced(stats, ses, opts.decision == "indifference")
            else:
                bound = min(m[2] for m in timed)
                out = [m is not None and m[1] > bound for m in stats]
            if any(out):
                eliminated.update(c for c, gone in zip(alive, out) if gone)
                stats = [m for m, gone in zip(stats, out) if not gone]
                windows = [w for w, gone in zip(windows, out) if not gone]
                alive = [c for c, gone in zip(alive, out) if not gone]
                if diff:
                    ses = [se for se, gone in zip(ses, out) if not gone]
        racing_alive = racing if len(alive) == len(racing_l) else frozenset(alive)
        promoted: Config | None = None
        stop = ""
        ties: tuple[Config, ...] = ()
        if settled and alive and all(m is not None for m in stats):
            ms: list[tuple[float, float, float]] = stats  # type: ignore[assignment]  # none is None (above)
            best = 0
            for i in range(1, len(ms)):  # min(alive, key=median): the first of the smallest
                if ms[i][0] < ms[best][0]:
                    best = i
            leader, lead_high = alive[best], ms[best][2]
            others = [i for i in range(len(alive)) if i != best]  # (configs are distinct: see __init__)
            tol = opts.rel_tol
            if not others:
                promoted, stop = leader, "decided"
            elif all(self._tied(ms[best][0], ses[best], ms[i][0], ses[i]) if diff  # type: ignore[arg-type]
                     else lead_high <= ms[i][1] + tol * ms[i][0] for i in others):  # within(leader, other, rel_tol)
                promoted, stop, ties = leader, "tied", tuple(alive[i] for i in others)
            elif all(len(w) >= opts.max_samples for w in windows):  # type: ignore[arg-type]  # (none is None)
                promoted, stop, ties = leader, "budget", tuple(alive[i] for i in others)
        return Proposal(ready, racing_alive, failed, disagreed, frozenset(eliminated), promoted, stop, ties)

    def _tied(self, lead_ms: float, lead_se: float, ms: float, se: float) -> bool:
        """Whether the leader is, with ``elimination_confidence``, at most ``rel_tol`` slower than a racer of
        median ``ms``: the upper bound of the difference of their medians is within ``rel_tol`` of it."""
        o = self.options
        return lead_ms - ms + _z(o.elimination_confidence) * math.sqrt(lead_se * lead_se + se * se) <= o.rel_tol * ms

    def _outpaced(self, stats: Sequence[tuple[float, float, float] | None], ses: Sequence[float | None],
                  tied_too: bool) -> list[bool]:  # fmt: skip
        """The difference rule's eliminations: each timed racer whose median is above the leader's (the smallest)
        by more than the difference's interval at ``elimination_confidence``; with ``tied_too`` also each one
        the leader is tied with (:meth:`_tied`: it cannot be ``rel_tol`` faster than the leader)."""
        lead = -1
        for i, m in enumerate(stats):
            if m is not None and (lead < 0 or m[0] < stats[lead][0]):  # type: ignore[index]
                lead = i
        lm, ls = stats[lead][0], ses[lead]  # type: ignore[index]
        assert ls is not None
        z = _z(self.options.elimination_confidence)
        out = []
        for i, m in enumerate(stats):
            se = ses[i]
            if m is None or i == lead or se is None:
                out.append(False)
                continue
            slower = m[0] - lm > z * math.sqrt(se * se + ls * ls)
            out.append(slower or (tied_too and self._tied(lm, ls, m[0], se)))
        return out

    def _frozen(self, slot: int, members: list[Config]) -> frozenset[Config]:
        """``frozenset(members)``, the last round's where ``members`` is the same list of configs (compared by
        identity first: no hash is computed); ``slot`` 0 is ``ready``, 1 ``racing``."""
        last = self._sets[slot]
        if last is not None and last[0] == members:
            return last[1]
        fs = frozenset(members)
        self._sets[slot] = (members, fs)
        return fs

    def apply(self, p: Proposal) -> None:
        """Take ``p`` as the key's state. A candidate that joins the race starts ``max_samples`` calls below
        the racers' *most* dispatched calls: it takes that many calls in a row (its samples for elimination or
        a tie come at once, not at one call in every round; the decision waits for them) and then turns.
        The most, not the fewest: the fewest is an earlier joiner's count while it catches up, so each joiner
        started ``max_samples`` below the one before, and the first waited for all later ones to climb to it
        (the H200's RMSNorm bucket: seven candidates checked over calls 265-307 left two racers with one sample
        each at the stream's end, 541 calls, and the key never promoted)."""
        prev = self.applied
        moved = p.racing is not prev.racing  # propose hands back the same frozenset while the racers stay
        if moved:
            joined = [c for c in p.racing if c not in prev.racing]
            if joined:
                level = max((self._cell(c)[0] for c in prev.racing if c in p.racing), default=0)
                for c in joined:
                    cell = self._cell(c)
                    had = cell[0]
                    start = max(had, level - self.options.max_samples)
                    cell[0] = start
                    self._head_start[c] = self._head_start.get(c, 0) + start - had
        self.applied = p
        if moved:  # (no racer is ever pruned: the racers' order in configs stays)
            racers = [c for c in self.configs if c in p.racing] or [self.provisional]
            self._turns = [self._cell(c) for c in racers]
            self._racers = racers
        if moved or p.eliminated != prev.eliminated or p.failed != prev.failed or p.disagreed != prev.disagreed:
            gone = p.racing | p.eliminated
            self._to_check = [c for c in self.check_order
                              if c not in gone and c not in p.failed and c not in p.disagreed]  # fmt: skip

    def diagnose(self) -> dict[str, Any]:
        """Why this key is not promoted yet, from what it has observed (read-only; for reports and benchmarks):
        each candidate's phase (``pruned``, ``compiling``, ``unchecked``: compiled, waiting for a check,
        ``checking``, ``racing``, ``eliminated``, ``failed``, ``disagreed``), its samples, median and interval,
        the bucket's tokens against the next check's estimate, and ``blocked``: the first rule of the module
        docstring that holds the promotion back (or what :meth:`propose` would do now)."""
        p = self.propose()
        o, opts = self.obs, self.options
        with o.lock:
            samples = {c: list(o.samples.get(c, ())) for c in self.configs}
            checking = set(self.checking)
            compiled, checked = set(o.compiled), set(o.checked)
        cands: dict[str, dict[str, Any]] = {}
        for c, why in self.pruned.items():
            cands[c.id] = {"phase": "pruned", "why": why}
        for c in self.configs:
            if c in p.failed:
                phase = "failed"
            elif c in p.disagreed:
                phase = "disagreed"
            elif c in p.eliminated:
                phase = "eliminated"
            elif c in p.racing:
                phase = "racing"
            elif c in checking:
                phase = "checking"
            elif c in compiled and c not in checked:
                phase = "unchecked"
            else:
                phase = "compiling"
            xs = samples[c]
            row: dict[str, Any] = {"phase": phase, "samples": len(xs), "dispatched": self.sent(c)}
            if len(xs) >= 3:
                m = Measurement.from_samples(xs, rel_tol=opts.rel_tol, confidence=opts.elimination_confidence)
                row.update(median_ms=round(m.median_ms, 5), ci_ms=[round(m.ci_low_ms, 5), round(m.ci_high_ms, 5)])
            elif xs:
                row["median_ms"] = round(sorted(xs)[len(xs) // 2], 5)
            cands[c.id] = row
        est = self.check_estimate_ms()
        phases = {c: cands[c.id]["phase"] for c in self.configs}
        waiting = [c.id for c, ph in phases.items() if ph in ("compiling", "unchecked", "checking")]
        if self.promoted is not None:
            blocked = f"promoted {self.promoted.id}"
        elif p.promoted is not None:
            blocked = f"none: the next decision promotes {p.promoted.id} ({p.stop})"
        elif any(ph == "compiling" for ph in phases.values()):
            n = sum(ph == "compiling" for ph in phases.values())
            blocked = f"{n} candidate(s) still compiling or loading (promotion waits for every candidate's check)"
        elif waiting:
            blocked = (f"{len(waiting)} candidate(s) waiting for a check; bucket {self.budget.tokens_ms:.4f} ms, "
                       f"next check's estimate {'-' if est is None else f'{est:.4f}'} ms")  # fmt: skip
        else:
            alive = [c for c, ph in phases.items() if ph == "racing"]
            short = [c.id for c in alive if len(samples[c]) < opts.min_samples]
            if short:
                blocked = f"racers with fewer than min_samples={opts.min_samples} samples: {short}"
            else:
                ms = {c: Measurement.from_samples(samples[c], rel_tol=opts.rel_tol,
                                                  confidence=opts.elimination_confidence) for c in alive}  # fmt: skip
                leader = min(alive, key=lambda c: ms[c].median_ms)
                open_ = [f"{c.id} ({ms[c].median_ms / ms[leader].median_ms:.3f}x, {len(samples[c])} samples)"
                         for c in alive if c != leader and not within(ms[leader], ms[c], opts.rel_tol)]  # fmt: skip
                blocked = (f"race open: leader {leader.id} ({ms[leader].median_ms:.4f} ms) neither eliminates nor "
                           f"ties {open_}; the budget rule needs {opts.max_samples} samples of every racer")  # fmt: skip
        return {"calls": self.calls, "provisional": self.provisional.id, "blocked": blocked,
                "tokens_ms": round(self.budget.tokens_ms, 5), "check_estimate_ms": est,
                "checks_ms": [round(x, 4) for x in self.check_cost], "waiting_for_check": waiting,
                "check_parts_ms": [tuple(round(x, 4) for x in p) for p in self.check_parts],
                "stretched_spans": self.stretched, "candidates": cands, "timeline": list(self.timeline)}  # fmt: skip

    def summary(self, names: Iterable[Config] | None = None, applied: Proposal | None = None) -> dict[str, object]:
        """Counts and removals, for ``choices()`` and the store (of ``applied``, default the applied state)."""
        a = applied if applied is not None else self.applied
        cfgs = [c for c in names if c not in self.pruned] if names is not None else self.configs
        compiling = [c for c in cfgs if c not in a.ready and c not in a.failed and c not in a.disagreed]
        return {
            "calls": self.calls,
            "compiling": len(compiling),
            "unchecked": len([c for c in a.ready if c not in a.racing and c not in a.eliminated]),
            "racing": sorted(c.id for c in a.racing),
            "eliminated": sorted(c.id for c in a.eliminated),
            "disagreed": {c.id: why for c, why in a.disagreed.items()},
            "failed": {c.id: why for c, why in a.failed.items()},
            "pruned": {c.id: why for c, why in self.pruned.items()},
        }

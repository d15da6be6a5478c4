"""Ties, reported honestly, and the stated rule that picks among them.

When the fastest configs of a key are within the measurement's resolution of each other, no timing
can say which is best: they are *tied*. The resolution is the race's ``rel_tol`` (1%), the agreement
aimed for between independent repeats, not the width of one run's interval: a config whose median is
within it of the fastest is tied with it even when one run's samples could separate the two. :class:`TieReport` says so in words and values (which configs,
at what resolution, under which policy, and which rule picked the winner), for ``choices()``, the
result JSON and the report.

The pick among tied configs follows :data:`TIE_RULE`, implemented by the pure function
:func:`break_tie`: among configs that cannot be told apart, prefer one someone wrote, then the one that uses
less of the GPU (it leaves room to co-running kernels and is less likely to fall off a cliff at a neighbouring
size), then the one that is best when timed the other ways, then the faster median:

0. a config of the list someone wrote before one nobody wrote (a widened list's neighbour): a generated config
   serves only where it is measurably faster than every written one, since a tie says nothing of how the two
   compare in another state (on an H200, FlagGems ``upsample_nearest1d``'s generated winner, picked from a tie by
   the registers rule over the fastest config, a written one 0.2% faster, ran 1.035x the list's winner with the L2
   warm: ``benchmarks/real_libraries.py --widen``); where no config was written (a derived space) or none was
   generated, it decides nothing;
1. fewest registers per block (registers per thread x threads per block: what occupancy is limited by;
   per-thread counts alone would favour more warps, which spread the same work over more threads)
   (unknown counts last);
2. least shared memory per block (unknown last);
3. smallest geometric mean of its time under the other policies, relative to the best there
   (unknown last);
4. smallest median under this policy;
5. the config's id (so the rule is total and deterministic).

Only tied configs within :data:`PICK_SHARE` of the resolution of the fastest (half: 0.5% at the race's
1%) are eligible. A tied config may be a full resolution slower than the fastest by this tuning's medians,
and the medians themselves are off by up to about half the resolution between repeats of a short kernel:
a pick at the edge of the tie set would cost more than the resolution the tie promises.
Configs between half and the whole resolution are still reported as tied.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritune.bench.stats import Measurement, within
from tritune.config import Config
from tritune.measure import DEFAULT_POLICY, MeasurePolicy

#: The share of the resolution within which a tied config may be picked over the fastest.
PICK_SHARE = 0.5

#: The tie-breaking rule in words (what reports and JSON print).
TIE_RULE = (
    "among tied configs within half the measurement's resolution of the fastest: a written config before a "
    "generated one, then fewest registers per block, then least shared memory per block, then best under the "
    "other measurement policies, then smallest median, then config id"
)
TIE_RULE_ID = "half-resolution,written,block-registers,shared,other-policies,median,id"


def pick_band(resolution: float) -> float:
    """How much slower than the fastest (relative) a tied config may be and still be picked: ``PICK_SHARE`` of
    the measurement's ``resolution`` (its relative tolerance). Every place that applies the tie rule uses this."""
    return resolution * PICK_SHARE


@dataclass(frozen=True)
class TieCandidate:
    """What the rule looks at for one tied config. ``other_ms`` maps another policy's name to the config's
    median under it (empty when only one policy was measured); ``written`` is False for a config nobody wrote
    (a widened list's neighbour)."""

    config: Config
    median_ms: float
    registers: int | None = None
    shared: int | None = None
    other_ms: Mapping[str, float] = field(default_factory=dict)
    written: bool = True


def _other_score(c: TieCandidate, best_other: Mapping[str, float]) -> float:
    """Geometric mean of ``c``'s time over the best tied time, under every other policy all of them have."""
    if not best_other:
        return math.inf
    logs = [math.log(c.other_ms[p] / best) for p, best in best_other.items() if best > 0]
    return math.exp(sum(logs) / len(logs)) if logs else math.inf


def _threads_per_block(config: Config) -> int:
    """32 threads per warp times the config's warps (Triton's default of 4 when it names none)."""
    return 32 * (config.num_warps if config.num_warps else 4)


def break_tie(candidates: Sequence[TieCandidate]) -> Config:
    """The config :data:`TIE_RULE` picks among ``candidates`` (all tied). Pure and deterministic."""
    if not candidates:
        raise ValueError("break_tie needs at least one candidate")
    shared_policies = set.intersection(*(set(c.other_ms) for c in candidates))
    best_other = {p: min(c.other_ms[p] for c in candidates) for p in sorted(shared_policies)}

    def rank(c: TieCandidate) -> tuple[int, float, float, float, float, str]:
        return (
            0 if c.written else 1,
            math.inf if c.registers is None else float(c.registers) * _threads_per_block(c.config),
            math.inf if c.shared is None else float(c.shared),
            _other_score(c, best_other),
            c.median_ms,
            c.config.id,
        )

    return min(candidates, key=rank).config


def tied_with(leader: Measurement, others: Mapping[Config, Measurement], rel_tol: float) -> list[Config]:
    """The configs of ``others`` that ``leader`` cannot be shown faster than by more than ``rel_tol``:
    those whose interval overlaps the leader's, or that are within ``rel_tol`` of it both ways."""
    out = []
    for c, m in others.items():
        if m.ci_low_ms <= leader.ci_high_ms or within(m, leader, rel_tol):
            out.append(c)
    return out


@dataclass(frozen=True)
class TieReport:
    """The configs a tuning could not tell apart, and how the pick among them was made.

    ``fastest`` is the config with the smallest median; ``tied`` every config within the resolution of
    it (``fastest`` included, fastest first); ``picked`` what :data:`TIE_RULE` chose among ``tied``.
    ``resolution`` is the relative difference the measurement could resolve (the race's ``rel_tol``).
    ``times_ms`` holds each tied config's median under ``measure``. ``pick_within`` is how much slower than
    ``fastest`` (relative) a config could be and still be picked (None in reports written before it existed:
    any tied config).
    """

    fastest: Config
    picked: Config
    tied: tuple[Config, ...]
    resolution: float
    measure: MeasurePolicy = DEFAULT_POLICY
    times_ms: tuple[float, ...] = ()
    rule: str = TIE_RULE_ID
    pick_within: float | None = None

    def __post_init__(self) -> None:
        if not self.tied or self.tied[0] != self.fastest or self.picked not in self.tied:
            raise ValueError("TieReport: tied must start with fastest and contain picked")
        if self.times_ms and len(self.times_ms) != len(self.tied):
            raise ValueError("TieReport: one time per tied config")

    @property
    def is_tie(self) -> bool:
        return len(self.tied) > 1

    @property
    def spread(self) -> float:
        """The slowest tied median over the fastest, minus one (0 without times or ties)."""
        if len(self.times_ms) < 2 or self.times_ms[0] <= 0:
            return 0.0
        return max(self.times_ms) / self.times_ms[0] - 1.0

    def describe(self) -> str:
        """One line for a report: what was tied, at what resolution, and what was picked by which rule."""
        if not self.is_tie:
            return f"{self.fastest.id} wins clearly ({self.measure.value}, resolution {self.resolution:.1%})"
        return (
            f"{len(self.tied)} configs tied within {self.resolution:.1%} ({self.measure.value}, spread "
            f"{self.spread:.1%}): {', '.join(c.id for c in self.tied)}; picked {self.picked.id} by the rule: "
            f"{TIE_RULE if self.rule == TIE_RULE_ID else self.rule}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure.value,
            "resolution": self.resolution,
            "fastest": self.fastest.to_json(),
            "picked": self.picked.to_json(),
            "tied": [c.to_json() for c in self.tied],
            "times_ms": list(self.times_ms),
            "rule": self.rule,
            "rule_text": TIE_RULE,
            "pick_within": self.pick_within,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TieReport:
        return cls(
            fastest=Config.from_json(d["fastest"]),
            picked=Config.from_json(d["picked"]),
            tied=tuple(Config.from_json(c) for c in d["tied"]),
            resolution=float(d["resolution"]),
            measure=MeasurePolicy.parse(d.get("measure", DEFAULT_POLICY.value)),
            times_ms=tuple(float(t) for t in d.get("times_ms", ())),
            rule=str(d.get("rule", TIE_RULE_ID)),
            pick_within=None if d.get("pick_within") is None else float(d["pick_within"]),
        )


def tie_report(
    measurements: Mapping[Config, Measurement],
    *,
    fastest: Config,
    tied: Sequence[Config],
    resolution: float,
    measure: MeasurePolicy | str = DEFAULT_POLICY,
    facts: Mapping[Config, Mapping[str, Any]] | None = None,
    other_ms: Mapping[Config, Mapping[str, float]] | None = None,
    written: Collection[Config] | None = None,
) -> TieReport:
    """A TieReport for ``fastest`` and the configs ``tied`` with it (a race's ``winner`` and ``ties``),
    with the pick made by :func:`break_tie` from the binaries' ``facts`` (``registers``, ``shared``) and
    any times under other policies (``other_ms``), among the tied configs within ``PICK_SHARE`` of the
    resolution of ``fastest``. ``written``: the configs someone wrote, where the others were generated (a
    widened list); None: every config counts as written."""
    group = [fastest, *sorted((c for c in tied if c != fastest), key=lambda c: measurements[c].median_ms)]
    facts = facts or {}
    other_ms = other_ms or {}
    pick_within = pick_band(resolution)
    limit = measurements[fastest].median_ms * (1 + pick_within)
    cands = [
        TieCandidate(
            c,
            measurements[c].median_ms,
            _int_or_none((facts.get(c) or {}).get("registers")),
            _int_or_none((facts.get(c) or {}).get("shared")),
            dict(other_ms.get(c, {})),
            written is None or c in written,
        )
        for c in group
        if c == fastest or measurements[c].median_ms <= limit
    ]
    return TieReport(
        fastest=fastest,
        picked=break_tie(cands),
        tied=tuple(group),
        resolution=resolution,
        measure=MeasurePolicy.parse(measure),
        times_ms=tuple(measurements[c].median_ms for c in group),
        pick_within=pick_within,
    )


def race_tie_report(result: Any, measure: MeasurePolicy | str = DEFAULT_POLICY,
                    written: Collection[Config] | None = None) -> TieReport | None:  # fmt: skip
    """The TieReport of a race's result (:class:`tritune.engine.race.RaceResult`: its ``winner``, ``ties``,
    ``outcomes`` with measurements and binary facts, and ``options.rel_tol`` as the resolution); None when
    nothing was measured; ``written`` as :func:`tie_report`'s. Typed loosely so the timing layer does not import
    the tuning layer."""
    if result is None or result.winner is None:
        return None
    meas = {o.config: o.measurement for o in result.outcomes if o.measurement is not None}
    res = float(result.options.rel_tol)
    best = meas[result.winner].median_ms
    # The race's ties (survivors it could not separate), and every config whose median is within the
    # resolution of the winner's even if the race dropped it: an interval a few samples wide separates
    # two configs within one run, but repeats of a short kernel differ by more than that.
    # After a final race (``decided_by``), only its configs were measured with the winner: a config the
    # batches timed under other conditions (a cooler GPU, another rank's) is not comparable with the final
    # race's medians, and let in it could be picked on stale numbers (on an H200 a 4-warp config
    # timed 4% slow in the first batch tied with the final race's slow read of the winner, and the rule's
    # fewest registers picked it, 1.06x the cold search's winner).
    pool = meas if not getattr(result, "decided_by", ()) else {c: meas[c] for c in result.decided_by if c in meas}
    tied = [c for c in result.ties if c in pool]
    tied += [c for c, m in pool.items() if c != result.winner and c not in tied and m.median_ms <= best * (1 + res)]
    facts = {o.config: o.facts for o in result.outcomes if o.facts}
    return tie_report(meas, fastest=result.winner, tied=tied, resolution=res, measure=measure, facts=facts,
                      written=written)


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)

"""The incremental race on a short kernel, replayed on the CPU: how often the hot buckets of a serving stream
converge to within 2% of their best, over many seeds, with a FAKE clock whose samples look like a 5-10 us
kernel's event spans on the H200.

The real :class:`~tritune.serving.incremental.Incremental` (state machine, per-key budgets, checks, pruning,
promotion) serves ``benchmarks/serving.py``'s stream (Zipf s=1.1 over 24 buckets, 6,000 calls); no kernel runs
(FAKE launch, FAKE compiles finished by the next call). Each bucket has 7 configs; the FAKE clock's samples:

- a real call or scratch run of config c: ``mean[c] * lognormal(0, sigma)`` with ``sigma`` drawn per bucket
  in [2%, 5%]; with probability ``outlier`` (default 3%) the span also holds 3-20 us of host time (a start
  event passed before the launch reached the device, or a clock hiccup);
- ``--early`` (default 25%): the outliers' rate in the stream's first 1,500 calls, while every key's
  candidates compile and load on a background thread that holds the interpreter's lock (the H200's spans were
  stretched most then): a config whose window was filled then looks slower than one timed later;
- ``--drift`` (default 4%): every sample scaled by ``1 + drift * sin(2 pi call / 2000 + phase)``: the stream's
  conditions drift (which other buckets' tensors and checks' copies fill L2, clocks), the same for every config
  at one moment, so a window filled in one stretch (a joiner takes ``max_samples`` calls in a row) is biased
  against windows filled at other times;
- a check's copies span and its comparison span: ``--check-span`` (default 1.5) calls' worth of the bucket's best
  each (on the H200 a ~7 us RMSNorm's checks cost 0.02-0.1 ms in all, session 10: about 4 calls' worth each).

``--drop-late``: ``IncrementalOptions(drop_late=True)``; the spans with host time inside are the ones
``CudaClock.late`` would flag (this clock flags exactly those): they are no samples and earn the budget at the
config's recent median.

``--landscape synthetic`` (default): the best config 5-10 us, the other six 0-10% slower (uniform), so two
or three of them are within 2% as a rule (ties); ``--landscape h200``: the H200's RMSNorm timings of
``tests/incremental/h200_landscapes.json`` (7 of its 8 configs). A hot bucket (>= 200 calls) converged when it
was promoted to a config whose true mean is <= 1.02x its best. Also printed: the extra GPU fraction (bound
10%), why the misses missed (the promotion's stop reason, or not promoted), and the calls to promotion.

The race's cost (the third line; issue #18): on the H200's 60,000-call RMSNorm stream (session 11) most of
the tuning's excess over the untuned stream was racing calls, each timed by an event pair (~+60 us of the
caller's host time over a cached call: p50 0.088 ms against 0.021 ms). Counted per run: ``racing`` (phase
``race``: a timed real call to a racer; ``refresh``, those of them taken while every window was full and the key
waited for a check, the one call in ``lone_every`` that keeps a window fresh), ``timed`` (every real call timed:
``first``, ``race`` and ``check``, whose real call on the provisional config is timed too) and ``untimed``
(``lone`` and ``leader``: tuning calls without events). The excess model, in us (FAKE: host time is not
simulated, the device time is the landscape's means, no noise):

- ``host``: 60 us per timed call (a check's call holds more host work: copies, scratch run, comparison; not
  modelled beyond its timed call);
- ``slow``: per tuning call (timed or untimed), the served config's true mean less the key's eventual
  winner's (the promoted config, else the key's best): what serving the race cost over serving its outcome;
- ``race = host + slow``: the race's own cost (what fewer racing calls would save);
- ``loss``: per call of the whole stream, the served config's true mean less the key's best (tuning calls and a
  promotion off the best alike), and ``checks``: the checks' scratch device time (the extra GPU);
- ``total = host + loss + checks``: the excess over an oracle that served every call the best config, untimed.

    PYTHONPATH=src:tests python3 benchmarks/race_replay.py [--seeds 40] [--landscape synthetic|h200] [--drop-late] [--out DIR]
        [--calls N] [--check-span CALLS] [--option NAME=VALUE ...] [--tag NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")  # nothing is launched

import torch
import triton
import triton.language as tl

import tritune
from tritune.serving.incremental import Incremental
from tritune.serving.state import IncrementalOptions
from tritune.store import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import zipf_stream  # benchmarks/serving.py's stream, the same generator

BLOCKS = (64, 128, 256, 512, 1024, 2048, 4096)  # stand-ins for the 7 configs, in declared order
CALLS = 6000
N_BUCKETS = 24
HOST_US = 60.0  # a timed call's host time over a cached call (H200, session 11: p50 0.088 against 0.021 ms)
TIMED = ("first", "race", "check")  # phases whose real call is timed by events
UNTIMED = ("lone", "leader")  # tuning calls without events
LANDSCAPES = Path(__file__).resolve().parent.parent / "tests" / "incremental" / "h200_landscapes.json"


@triton.jit
def pair_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr):  # never launched (FAKE launch): a (M, N) key
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < m * n), mask=offs < m * n)


class _NoCompiles:
    """FAKE compile service: every candidate "compiles" at once (delivered before the key's next call)."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, Any]] = []

    def start(self, tuned: Any, configs: Any, args: Any, kwargs: Any, grid: Any, deliver: Any) -> None:
        self.pending.extend((c, deliver) for c in configs)

    def finish(self) -> None:
        todo, self.pending = self.pending, []
        for c, deliver in todo:
            deliver(c, None)


class ShortKernelClock:
    """FAKE clock of a 5-10 us kernel's event spans (see the module docstring); ``bucket`` is set per call."""

    def __init__(self, means: list[list[float]], sigmas: list[float], outlier: float, seed: int,
                 early: float = 0.0, early_calls: int = 1500, drift: float = 0.0,
                 check_span: float = 1.5) -> None:  # fmt: skip
        self.check_span = check_span
        self.means, self.sigmas, self.outlier = means, sigmas, outlier
        self.early, self.early_calls, self.drift = early, early_calls, drift
        self.phase = random.Random(seed + 7).uniform(0, 2 * math.pi)
        self.rng = random.Random(seed)
        self.bucket = 0
        self.call = 0  # the stream's call index (set per call)
        self.checks = 0

    def start(self, cfg: Any) -> Any:
        return (cfg, self.bucket)

    def stop(self, token: Any) -> tuple[float, bool]:
        cfg, b = token
        r = self.rng
        if cfg is None:  # a check's copies or comparison span
            self.checks += 1
            return self.check_span * min(self.means[b]) * math.exp(r.gauss(0.0, self.sigmas[b])), False
        ms = self.means[b][BLOCKS.index(cfg.kwargs["BLOCK"])] * math.exp(r.gauss(0.0, self.sigmas[b]))
        ms *= 1 + self.drift * math.sin(2 * math.pi * self.call / 2000 + self.phase)
        late = r.random() < (self.early if self.call < self.early_calls else self.outlier)
        if late:
            ms += r.uniform(0.003, 0.020)  # FAKE: host time inside the span (CudaClock would call it late)
        return ms, late

    @staticmethod
    def late(handle: Any) -> bool:
        """As ``CudaClock.late``: the span holds host time (read only with ``IncrementalOptions(drop_late=True)``)."""
        return bool(handle[1])

    def elapsed_ms(self, handle: Any) -> float:
        return float(handle[0])

    def capturing(self) -> bool:
        return False


def landscape(kind: str, seed: int) -> list[list[float]]:
    """Per bucket, the 7 configs' true means in ms."""
    if kind == "h200":
        d = json.loads(LANDSCAPES.read_text())["kernels"]["rmsnorm"]
        return [list(t[: len(BLOCKS)]) for t in d["times_ms"][:N_BUCKETS]]
    rng = random.Random(10_000 + seed)
    out = []
    for _ in range(N_BUCKETS):
        base = rng.uniform(0.005, 0.010)
        rest = [base * (1 + rng.uniform(0.0, 0.10)) for _ in BLOCKS[1:]]
        means = [base, *rest]
        rng.shuffle(means)
        out.append(means)
    return out


def replay(seed: int, kind: str = "synthetic", outlier: float = 0.03, early: float = 0.25, drift: float = 0.04,
           options: IncrementalOptions | None = None, calls: int = CALLS,
           check_span: float = 1.5) -> dict[str, Any]:  # fmt: skip
    """One stream: per hot bucket, the promoted config's true ratio to the best (None: not promoted)."""
    means = landscape(kind, seed)
    srng = random.Random(20_000 + seed)
    sigmas = [srng.uniform(0.02, 0.05) for _ in means]
    clock = ShortKernelClock(means, sigmas, outlier, seed, early, drift=drift, check_span=check_span)
    comp = _NoCompiles()
    inc = Incremental(options or IncrementalOptions(), clock=clock, compiler=comp, thread=False)
    k = tritune.autotune(configs=[triton.Config({"BLOCK": b}) for b in BLOCKS], key=["m", "n"],
                         store=MemoryStore(), incremental=inc)(pair_kernel)  # fmt: skip
    x, out = torch.zeros(64), torch.zeros(64)
    sizes = [(16 * (i + 1), 4096) for i in range(len(means))]
    stream = zipf_stream(len(means), calls, seed)
    tuning = 0  # calls that ran while their key tuned (first, check, race, lone, leader): the stream's tuning cost
    phases: Counter[str] = Counter()
    launched: list[Any] = []
    k.launch = lambda cfg, *a, **kw: launched.append(cfg)  # FAKE launch, recording the configs launched
    served: list[list[int]] = [[0] * len(BLOCKS) for _ in means]  # per bucket, tuning calls served per config
    fast_served = [[0] * len(BLOCKS) for _ in means]  # per bucket, untimed calls of a promoted key per config
    refresh = 0  # racing calls taken while every window was full and the key waited for a check
    for i, b in enumerate(stream):
        clock.bucket, clock.call = b, i
        inc.last_phase = None
        launched.clear()
        k[(1,)](x, out, *sizes[b])
        phase = inc.last_phase
        tuning += phase is not None
        phases[phase or "fast"] += 1
        j = BLOCKS.index(launched[0].kwargs["BLOCK"])  # the real call's config (a check's scratch run is second)
        if phase is None or phase == "promoted":
            fast_served[b][j] += 1
        else:
            served[b][j] += 1
            if phase == "race" and _waiting(inc, sizes[b]):
                refresh += 1
        comp.finish()
        inc.resolver().poll()
    counts = Counter(stream)
    hot = sorted(b for b, n in counts.items() if n >= 200)
    rows = []
    for b in hot:
        ch = next((c for key, c in inc.promoted.items() if tuple(key[:2]) == sizes[b]), None)
        best = min(means[b])
        if ch is None:
            rows.append({"bucket": b, "calls": counts[b], "ratio": None, "stop": "not promoted"})
            continue
        ratio = means[b][BLOCKS.index(ch.config.kwargs["BLOCK"])] / best
        at = int(ch.detail.split(" after ")[1].split()[0])
        rows.append({"bucket": b, "calls": counts[b], "ratio": ratio, "stop": ch.stats.get("stop"), "at": at})
    winners = {tuple(key[:2]): BLOCKS.index(c.config.kwargs["BLOCK"]) for key, c in inc.promoted.items()}
    slow = loss = 0.0
    for b, m in enumerate(means):
        best = min(m)
        win = m[winners.get(sizes[b], m.index(best))]
        slow += sum(n * (m[j] - win) for j, n in enumerate(served[b]))
        loss += sum(n * (m[j] - best) for j, n in enumerate(served[b])) + sum(
            n * (m[j] - best) for j, n in enumerate(fast_served[b]))
    timed = sum(phases[p] for p in TIMED)
    host = HOST_US * timed
    checks_us = inc.budget.spent_ms * 1e3
    stops = Counter(str(c.stats.get("stop")) for c in inc.promoted.values())
    cost = {"racing": phases["race"], "refresh": refresh, "timed": timed, "stops": dict(stops),
            "untimed": sum(phases[p] for p in UNTIMED),
            "excess_us": {"host": round(host), "slow": round(slow * 1e3), "race": round(host + slow * 1e3),
                          "loss": round(loss * 1e3), "checks": round(checks_us),
                          "total": round(host + loss * 1e3 + checks_us)}}  # fmt: skip
    return {"seed": seed, "hot": rows, "extra": inc.budget.extra_fraction, "checks": clock.checks // 2,
            "promoted": len(inc.promoted), "tuning_calls": tuning, "phases": dict(phases), "cost": cost}


def _waiting(inc: Incremental, size: tuple[int, int]) -> bool:
    """Whether the key of ``size`` now waits for a check (or races alone) with every racer's window full: the
    condition of ``KeyState.lone_ms`` / ``waiting_leader``, read without their side effects (no leader cached)."""
    st = next((s for key, s in inc.states.items() if tuple(key[:2]) == size), None)
    if st is None:
        return False
    racers = st._racers
    if len(racers) >= 2 and not (st._to_check and st.options.wait_leader):
        return False
    need = st.options.max_samples
    return all(len(st.obs.samples.get(c, ())) >= need for c in racers)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r for run in runs for r in run["hot"]]
    conv = [r for r in rows if r["ratio"] is not None and r["ratio"] <= 1.02]
    misses = Counter(r["stop"] for r in rows if r not in conv)
    wrong = sorted(r["ratio"] for r in rows if r["ratio"] is not None and r["ratio"] > 1.02)
    ats = [r["at"] for r in rows if r.get("at") is not None]
    return {"hot": len(rows), "converged": len(conv), "rate": len(conv) / max(1, len(rows)),
            "misses": dict(misses), "wrong_ratios": [round(x, 3) for x in wrong],
            "extra_max": max(run["extra"] for run in runs), "extra_mean": statistics.mean(r["extra"] for r in runs),
            "promote_at_median": statistics.median(ats) if ats else None,
            "keys_promoted_mean": statistics.mean(r["promoted"] for r in runs),
            "tuning_calls_mean": statistics.mean(r["tuning_calls"] for r in runs),
            "phases_mean": {p: round(statistics.mean(r["phases"].get(p, 0) for r in runs))
                            for p in sorted({p for r in runs for p in r["phases"]})},
            "cost": cost_summary(runs)}  # fmt: skip


def spread(xs: list[float]) -> dict[str, float]:
    """Mean, sample standard deviation, min and max over the seeds."""
    return {"mean": statistics.mean(xs), "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs)}  # fmt: skip


def cost_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The race's cost over the seeds (see the module docstring), with the per-seed convergence rate."""
    rates = [sum(r["ratio"] is not None and r["ratio"] <= 1.02 for r in run["hot"]) / max(1, len(run["hot"]))
             for run in runs]  # fmt: skip
    out = {k: spread([run["cost"][k] for run in runs]) for k in ("racing", "refresh", "timed", "untimed")}
    out["excess_us"] = {k: spread([run["cost"]["excess_us"][k] for run in runs])
                        for k in ("host", "slow", "race", "loss", "checks", "total")}  # fmt: skip
    out["stops"] = {k: round(statistics.mean(run["cost"]["stops"].get(k, 0) for run in runs), 1)
                    for k in sorted({k for run in runs for k in run["cost"]["stops"]})}  # fmt: skip
    out["rate"] = spread(rates)
    out["extra"] = spread([run["extra"] for run in runs])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--landscape", choices=["synthetic", "h200"], default="synthetic")
    ap.add_argument("--outlier", type=float, default=0.03)
    ap.add_argument("--early", type=float, default=0.25)
    ap.add_argument("--drift", type=float, default=0.04)
    ap.add_argument("--drop-late", action="store_true", help="IncrementalOptions(drop_late=True)")
    ap.add_argument("--calls", type=int, default=CALLS, help="the stream's length (default 6,000)")
    ap.add_argument("--max-samples", type=int, default=None, help="IncrementalOptions.max_samples")
    ap.add_argument("--min-samples", type=int, default=None, help="IncrementalOptions.min_samples")
    ap.add_argument("--check-span", type=float, default=1.5,
                    help="a check's copies and comparison spans, each in calls of the bucket's best (default 1.5)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="any other IncrementalOptions field (repeatable), e.g. elimination_confidence=0.95")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--tag", default="", help="appended to the output file's name (one file per variant)")
    a = ap.parse_args()
    extra: dict[str, Any] = {k: v for k, v in (("max_samples", a.max_samples), ("min_samples", a.min_samples))
                             if v is not None}  # fmt: skip
    fields = {f.name: f for f in dataclasses.fields(IncrementalOptions)}
    for item in a.option:
        name, _, value = item.partition("=")
        default = getattr(IncrementalOptions(), name) if name in fields else None
        if default is None:
            ap.error(f"--option {item}: no IncrementalOptions field {name!r}")
        extra[name] = value.lower() in ("1", "true", "yes") if isinstance(default, bool) else type(default)(value)
    opts = IncrementalOptions(drop_late=a.drop_late, **extra)
    runs = [replay(s, a.landscape, a.outlier, a.early, a.drift, opts, a.calls, a.check_span) for s in range(a.seeds)]
    s = summarize(runs)
    print(f"{a.landscape}{', drop_late' if a.drop_late else ''}, outliers {a.outlier:.0%} ({a.early:.0%} early), drift {a.drift:.0%}, {a.seeds} seeds: hot buckets converged {s['converged']}/{s['hot']} "
          f"= {s['rate']:.1%} (target >= 90%); misses by stop {s['misses']}; wrong ratios {s['wrong_ratios']}")  # fmt: skip
    print(f"  {a.calls} calls, check spans {a.check_span} calls each, options {extra or 'default'}: extra GPU max {s['extra_max']:.1%} mean {s['extra_mean']:.1%} "
          f"(bound 10%); promotion at call {s['promote_at_median']} of the key (median); keys promoted "
          f"{s['keys_promoted_mean']:.1f} of {N_BUCKETS}; tuning calls {s['tuning_calls_mean']:.0f} (mean; by phase "
          f"{s['phases_mean']})")  # fmt: skip
    c = s["cost"]
    e = c["excess_us"]
    print(f"  race cost (mean +- sd over seeds): racing calls {c['racing']['mean']:.0f} +- {c['racing']['sd']:.0f} "
          f"({c['refresh']['mean']:.0f} refreshing full windows), timed {c['timed']['mean']:.0f}, untimed tuning "
          f"{c['untimed']['mean']:.0f}; excess us: race {e['race']['mean']:.0f} +- {e['race']['sd']:.0f} (host "
          f"{e['host']['mean']:.0f} + slow {e['slow']['mean']:.0f}), loss vs best {e['loss']['mean']:.0f}, checks "
          f"{e['checks']['mean']:.0f}, total {e['total']['mean']:.0f} +- {e['total']['sd']:.0f}; converged per seed "
          f"{c['rate']['mean']:.1%} +- {c['rate']['sd']:.1%}; promotions by stop {c['stops']}")  # fmt: skip
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        name = f"race_replay_{a.landscape}{'_drop_late' if a.drop_late else ''}{'_' + a.tag if a.tag else ''}.json"
        (a.out / name).write_text(json.dumps({"summary": s, "runs": runs, "options": extra, "calls": a.calls,
                                              "check_span": a.check_span, "seeds": a.seeds}, indent=1))  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""Short kernels (2-20 us) under each measurement policy: winner quality, cross-policy cost, tuning time.

    PYTHONPATH=src python3 benchmarks/short_kernels.py --out /tmp/short_kernels    # ~2 min
    PYTHONPATH=src python3 benchmarks/short_kernels.py --quick --out /tmp/sk    # shorter judging, same coverage
    PYTHONPATH=src python3 benchmarks/short_kernels.py --dry-run --out /tmp/sk     # any machine: the plan

Cases: RMSNorm fp16 64x2048 and 1024x4096 (examples/rmsnorm.py), a row softmax fp32
4096x1024 (examples/softmax.py), GELU fp32 at 2^20 (examples/gelu.py's kernel, 20 configs), and an fp16
matmul at 512^3 (examples/matmul.py's kernel, 24 configs).

Tuning methods: ``default`` is today's timer (L2 flushed, one launch per sample: ``EventTimer()``, judged
as cold) and race (``RaceOptions(confirm_looks=1)``: no confirmation looks of near ties), and one per policy, ``cold``, ``warm``, ``graph`` (``EventTimer.for_policy``: short kernels
batched in the policy's cache state). Each method tunes each case ``--reps`` times (3) independently: a
fresh timer, then tritune's race (``TimerMeasure`` + ``race`` with default ``RaceOptions``, what the
decorator and ``tritune tune`` run after compiling and verifying), with each binary's registers and shared
memory on the race's outcomes as the tuner's pipeline puts them, so the tie rule's pick is the config
tritune would keep. Every config is compiled and checked against the workload's oracle once, before any
tuning (compile time is the same for every method).

Judging, per policy J: the winners of every tuning plus the top ``--top-k`` of J's first tuning are
re-timed under J for ``--rounds`` interleaved rounds (order shuffled each round, samples merged), by J's
timer with graphs captured afresh for every look, so the rounds are independent of one capture. A
winner's quality under J is its median / the best median in that set. Printed: the winners and the kept
picks and their quality under their own policy (target <= 1.01), the cross-policy matrix (tuned under A, judged under B:
worst and mean over the repeats), the spread of the judged top-5 between rounds, and tuning wall time
against ``default`` (target <= 1.5x). Raw JSON with provenance goes to ``--out``/short_kernels.json; each
tuning there lists, for its top 10, the launches per sample and the warm-up's estimate of one run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from tritune.bench import EventTimer, Measurement, MeasurePolicy, Timer, TimerMeasure, race_tie_report  # noqa: E402
from tritune.config import Config  # noqa: E402
from tritune.engine.race import RaceOptions, race  # noqa: E402

METHODS = ("default", "cold", "warm", "graph")
POLICIES = ("cold", "warm", "graph")


def judged_as(method: str) -> str:
    """The policy a method's winners are judged under for 'own policy' quality (default is cold)."""
    return "cold" if method == "default" else method


@dataclass(frozen=True)
class Case:
    name: str
    workload: Any
    key: Mapping[str, Any]
    configs: tuple[Config, ...]


def _grid_configs(space: Mapping[str, Sequence[Any]], fixed: Mapping[str, Any] | None = None) -> tuple[Config, ...]:
    import itertools

    names = list(space)
    out = []
    for values in itertools.product(*(space[n] for n in names)):
        d = dict(zip(names, values, strict=True))
        w, s = d.pop("num_warps"), d.pop("num_stages")
        out.append(Config({**d, **(fixed or {})}, num_warps=w, num_stages=s))
    return tuple(out)


def cases() -> list[Case]:
    """The benchmark's cases (imports the example workloads; no GPU needed)."""
    from gelu import gelu
    from matmul import _workload
    from rmsnorm import RMSNORM_SPACE, rmsnorm
    from softmax import softmax

    rms = tuple(RMSNORM_SPACE.all_configs())
    mm = _workload("matmul_512", [{"M": 512, "N": 512, "K": 512}])
    return [
        Case("rmsnorm_64x2048", rmsnorm, {"rows": 64, "cols": 2048}, rms),
        Case("rmsnorm_1024x4096", rmsnorm, {"rows": 1024, "cols": 4096}, rms),
        Case("softmax_4096x1024", softmax, {"rows": 4096, "cols": 1024},
             _grid_configs({"BLOCK_N": [1024, 2048], "num_warps": [1, 2, 4, 8, 16], "num_stages": [1]})),
        Case("gelu_2^20", gelu, {"n": 1 << 20},
             _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8], "num_stages": [1]})),
        Case("matmul_512", mm, {"M": 512, "N": 512, "K": 512},
             _grid_configs({"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64],
                            "num_warps": [4], "num_stages": [2, 3, 4]})),
    ]  # fmt: skip


# -- the measurement logic (any Timer: the GPU's, or a FAKE one in the CPU test) -----------------------------
@dataclass(frozen=True)
class Tuning:
    method: str
    rep: int
    winner: Config | None
    #: What the tie rule picks among the configs within the resolution of the winner (what tritune keeps).
    picked: Config | None
    ties: tuple[Config, ...]
    stop: str
    wall_s: float
    device_s: float
    medians_ms: Mapping[Config, float]
    tie: Mapping[str, Any] | None
    #: Per config: launches per sample and the warm-up's estimate of one run (us), what sized the samples.
    sizing: Mapping[Config, tuple[int, float | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        top = sorted(self.medians_ms.items(), key=lambda kv: kv[1])[:10]
        return {"method": self.method, "rep": self.rep, "winner": None if self.winner is None else self.winner.id,
                "picked": None if self.picked is None else self.picked.id,
                "ties": [c.id for c in self.ties], "stop": self.stop, "wall_s": self.wall_s, "device_s": self.device_s,
                "top10_ms": [[c.id, t] for c, t in top], "tie_report": self.tie,
                "top10_calls_est_us": [[c.id, *self.sizing.get(c, (None, None))] for c, _ in top]}  # fmt: skip


def tune_once(method: str, rep: int, configs: Sequence[Config], fns: Mapping[Config, Callable[[], object]],
              timer: Timer, facts: Mapping[Config, Mapping[str, Any]] | None = None) -> Tuning:  # fmt: skip
    """One independent tuning: the race tritune runs, with a fresh timer; wall time includes warm-up.

    ``facts`` (each binary's ``registers`` and ``shared``) ride on the race's outcomes as the tuner's
    pipeline puts them there, so the tie rule picks what tritune would keep."""
    warm = getattr(timer, "warm_device", None)
    t0 = time.perf_counter()
    if warm is not None:
        warm(0.05)
    measure = TimerMeasure(timer, lambda c: fns[c], rel_tol=0.01, warmup_s=0.002)
    # ``default`` is today's tuning as it was: the old timer, and the race without confirmation looks.
    res = race(configs, measure, RaceOptions(confirm_looks=1) if method == "default" else RaceOptions())
    wall = time.perf_counter() - t0
    if facts:
        res = replace(res, outcomes=tuple(replace(o, facts=facts.get(o.config) or o.facts) for o in res.outcomes))
    meds = {o.config: o.measurement.median_ms for o in res.outcomes if o.measurement is not None}
    sizing = {o.config: (o.measurement.calls_per_sample, o.measurement.extra.get("est_us"))
              for o in res.outcomes if o.measurement is not None}  # fmt: skip
    tie = race_tie_report(res, judged_as(method))
    picked = None if tie is None else tie.picked
    return Tuning(method, rep, res.winner, picked, res.ties, res.stop, wall, res.device_s, meds,
                  None if tie is None else tie.to_json(), sizing)  # fmt: skip


@dataclass(frozen=True)
class Judged:
    """A long interleaved re-measurement under one policy: each config's merged median and per-round medians."""

    policy: str
    median_ms: Mapping[Config, float]
    rounds_ms: Mapping[Config, tuple[float, ...]]

    @property
    def best_ms(self) -> float:
        return min(self.median_ms.values())

    def quality(self, c: Config | None) -> float | None:
        if c is None or c not in self.median_ms:
            return None
        return self.median_ms[c] / self.best_ms

    def top_spread(self, k: int = 5) -> float:
        """Largest (max/min - 1) over rounds of the per-round medians of the k best configs."""
        top = sorted(self.median_ms, key=lambda c: self.median_ms[c])[:k]
        return max((max(r) / min(r) - 1.0) for r in (self.rounds_ms[c] for c in top) if r)


def judge(policy: str, configs: Sequence[Config], fns: Mapping[Config, Callable[[], object]], timer: Timer, *,
          rounds: int, budget_s: float, seed: int = 0) -> Judged:  # fmt: skip
    rng = random.Random(seed)
    merged: dict[Config, Measurement] = {}
    per_round: dict[Config, list[float]] = {c: [] for c in configs}
    order = list(configs)
    for r in range(rounds):
        rng.shuffle(order)
        for c in order:
            m = timer.measure(fns[c], budget_s=budget_s, rel_tol=0.005, min_samples=5,
                              warmup_s=0.005 if r == 0 else 0.001)  # fmt: skip
            per_round[c].append(m.median_ms)
            merged[c] = m if c not in merged else merged[c].merged(m)
    return Judged(policy, {c: m.median_ms for c, m in merged.items()}, {c: tuple(v) for c, v in per_round.items()})


def judge_set(tunings: Sequence[Tuning], policy: str, top_k: int) -> list[Config]:
    """Every tuning's winner, plus the top_k of the policy's first tuning."""
    out: list[Config] = []
    for t in tunings:
        for c in (t.winner, t.picked):
            if c is not None and c not in out:
                out.append(c)
    first = next((t for t in tunings if t.method == policy), None)
    if first is not None:
        for c in sorted(first.medians_ms, key=lambda c: first.medians_ms[c])[:top_k]:
            if c not in out:
                out.append(c)
    return out


def run_case(name: str, configs: Sequence[Config], fns: Mapping[Config, Callable[[], object]],
             make_timer: Callable[[str], Timer], *, reps: int, rounds: int, judge_budget_s: float,
             top_k: int, make_judge_timer: Callable[[str], Timer] | None = None,
             facts: Mapping[Config, Mapping[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    """Tune ``reps`` times with every method, judge under every policy (with ``make_judge_timer``'s timers,
    default ``make_timer``'s); the case's JSON."""
    make_judge_timer = make_judge_timer or make_timer
    # Methods take turns, the first one rotating each repeat, so one-time costs (the first graph capture,
    # clocks ramping up) do not always fall on the same method; wall times are medians over the repeats.
    order = [(r, METHODS[(r + i) % len(METHODS)]) for r in range(reps) for i in range(len(METHODS))]
    tunings = [tune_once(m, r, configs, fns, make_timer(m), facts) for r, m in order]
    judged = {p: judge(p, judge_set(tunings, p, top_k), fns, make_judge_timer(p), rounds=rounds,
                       budget_s=judge_budget_s, seed=i) for i, p in enumerate(POLICIES)}  # fmt: skip
    quality = {m: {p: [judged[p].quality(t.winner) for t in tunings if t.method == m] for p in POLICIES}
               for m in METHODS}  # fmt: skip
    picked = {m: [judged[judged_as(m)].quality(t.picked) for t in tunings if t.method == m] for m in METHODS}
    wall = {m: statistics.median(t.wall_s for t in tunings if t.method == m) for m in METHODS}
    return {
        "case": name, "configs": len(configs),
        "facts": {c.id: dict(f) for c, f in (facts or {}).items()},
        "tunings": [t.to_json() for t in tunings],
        "judged": {p: {"best_ms": j.best_ms, "top5_round_spread": j.top_spread(),
                       "median_ms": {c.id: v for c, v in j.median_ms.items()},
                       "rounds_ms": {c.id: list(v) for c, v in j.rounds_ms.items()}} for p, j in judged.items()},
        "quality": quality,  # method -> judged policy -> one quality per repeat
        "own_quality": {m: quality[m][judged_as(m)] for m in METHODS},
        "picked_own_quality": picked,  # the tie rule's pick (fewest registers...) judged under its own policy
        "median_wall_s": wall,
        "wall_vs_default": {m: wall[m] / wall["default"] for m in METHODS},
    }  # fmt: skip


# -- printing ------------------------------------------------------------------------------------------------
def _q(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def tables(results: Sequence[Mapping[str, Any]]) -> str:
    lines = ["", "winners and quality under their own policy (target <= 1.010): the race's winner, and the tie rule's",
             "pick (what tritune keeps), per repeat; tied configs per repeat; tuning wall time (median) vs default"]
    lines.append(f"{'case':20} {'method':8} {'best us':>8} {'winner quality':20} {'kept quality':20} {'ties':>8} "
                 f"{'wall s':>7} {'x def':>6}")  # fmt: skip
    for r in results:
        for m in METHODS:
            own = judged_as(m)
            qs, ps = r["own_quality"][m], r["picked_own_quality"][m]
            ties = [len(t["tie_report"]["tied"]) - 1 if t["tie_report"] else 0 for t in r["tunings"] if t["method"] == m]
            flag = " <-- above 1.01" if any(q is not None and q > 1.01 for q in [*qs, *ps]) else ""
            lines.append(f"{r['case']:20} {m:8} {r['judged'][own]['best_ms'] * 1e3:8.2f} "
                         f"{' '.join(_q(q) for q in qs):20} {' '.join(_q(q) for q in ps):20} "
                         f"{','.join(map(str, ties)):>8} {r['median_wall_s'][m]:7.2f} {r['wall_vs_default'][m]:6.2f}{flag}")  # fmt: skip
    lines += ["", "cross-policy matrix: tuned under A (rows), judged under B (columns): worst / mean over repeats"]
    for r in results:
        lines.append(f"{r['case']:20} {'':8} " + " ".join(f"{p:>13}" for p in POLICIES))
        for m in METHODS:
            cells = []
            for p in POLICIES:
                qs = [q for q in r["quality"][m][p] if q is not None]
                cells.append(f"{max(qs):.3f}/{sum(qs) / len(qs):.3f}" if qs else "-")
            lines.append(f"{'':20} {m:8} " + " ".join(f"{c:>13}" for c in cells))
    lines += ["", "judged top-5: largest spread of per-round medians (repeatability of the judge itself)"]
    for r in results:
        lines.append(f"{r['case']:20} " + "  ".join(f"{p} {r['judged'][p]['top5_round_spread']:.2%}" for p in POLICIES))
    tot = {m: sum(r["median_wall_s"][m] for r in results) for m in METHODS}
    worst = {m: max((q for r in results for q in r["own_quality"][m] if q is not None), default=float("nan"))
             for m in METHODS}  # fmt: skip
    worst_pick = {m: max((q for r in results for q in r["picked_own_quality"][m] if q is not None),
                         default=float("nan")) for m in METHODS}  # fmt: skip
    lines += ["", "summary over cases: worst own-policy quality of the winners and of the kept picks (target <= 1.010),",
              "median tuning wall time (summed over cases) vs default (target <= 1.5x)"]
    for m in METHODS:
        lines.append(f"{m:8} worst {worst[m]:.3f} (kept {worst_pick[m]:.3f})   wall {tot[m]:7.2f} s   "
                     f"x{tot[m] / tot['default']:.2f}")  # fmt: skip
    return "\n".join(lines)


# -- the GPU part --------------------------------------------------------------------------------------------
def gpu_fns(case: Case, device: str = "cuda") -> tuple[list[Config], dict[Config, Callable[[], object]], dict[str, str]]:
    """Build each config's launch, compile it and check it against the oracle; the good configs and why others
    were dropped. ``device="cpu"`` runs Triton's interpreter (the CPU test). See :func:`binary_facts`."""
    good, fns, dropped, _ = gpu_fns_and_facts(case, device)
    return good, fns, dropped


def binary_facts(kernel: Any) -> dict[str, int]:
    """``registers`` per thread and ``shared`` bytes of a launched Triton kernel (what the tuner's pipeline
    records and the tie rule reads); empty where the launch returned no compiled kernel (the interpreter)."""
    out: dict[str, int] = {}
    regs, shared = getattr(kernel, "n_regs", None), getattr(getattr(kernel, "metadata", None), "shared", None)
    if isinstance(regs, int):
        out["registers"] = regs
    if isinstance(shared, int):
        out["shared"] = shared
    return out


def gpu_fns_and_facts(case: Case, device: str = "cuda") -> tuple[
        list[Config], dict[Config, Callable[[], object]], dict[str, str], dict[Config, dict[str, int]]]:  # fmt: skip
    """:func:`gpu_fns`, and each good config's :func:`binary_facts`."""
    import torch

    from tritune.verify.compare import compare, poison

    wl = case.workload
    args = wl.make_args(case.key, device)
    kw = wl.caller_kwargs(case.key)
    expected = None if wl.oracle is None else wl.oracle(args)
    good: list[Config] = []
    fns: dict[Config, Callable[[], object]] = {}
    dropped: dict[str, str] = {}
    facts: dict[Config, dict[str, int]] = {}
    for c in case.configs:
        launcher = wl.kernel[wl.grid_for(c, case.key)]
        opts = {**kw, **c.kwargs, **c.launch_options()}

        def call(launcher: Any = launcher, opts: dict[str, Any] = opts) -> Any:
            return launcher(*args, **opts)

        try:
            for i in wl.outputs:
                poison(args[i])
            kernel = call()
            if device != "cpu":
                torch.cuda.synchronize()
        except Exception as e:  # a config that does not compile or launch is left out
            dropped[c.id] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            continue
        bad = [] if expected is None else [
            cmp.detail for pos, i in enumerate(wl.outputs)
            if not (cmp := compare(args[i], expected[pos], atol=wl.atol, rtol=wl.rtol, name=f"args[{i}]")).ok
        ]  # fmt: skip
        if bad:  # a config whose output is wrong is left out
            dropped[c.id] = "incorrect: " + "; ".join(bad)[:300]
            continue
        good.append(c)
        fns[c] = call
        if f := binary_facts(kernel):
            facts[c] = f
    return good, fns, dropped, facts


def make_gpu_timer(method: str) -> Timer:
    return EventTimer() if method == "default" else EventTimer.for_policy(MeasurePolicy(method))


def make_gpu_judge_timer(policy: str) -> Timer:
    """The judge's timer: the policy's, but every look captures its graphs afresh, so the rounds are
    independent (a tuning captures each config's graph once; the judge must not share one capture's luck)."""
    return EventTimer.for_policy(MeasurePolicy(policy), reuse_graphs=False)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Short kernels under each measurement policy.")
    ap.add_argument("--out", required=True, help="directory for short_kernels.json and short_kernels.txt")
    ap.add_argument("--quick", action="store_true",
                    help="shorter judging (5 rounds of 0.03 s; the full run, 10 of 0.05 s, takes ~2 minutes on one H200)")
    ap.add_argument("--dry-run", action="store_true", help="list the cases and the plan; needs no GPU")
    ap.add_argument("--cases", nargs="*", help="only these cases (names as listed by --dry-run)")
    ap.add_argument("--reps", type=int, default=3, help="independent tunings per method and case")
    ap.add_argument("--rounds", type=int, help="judging rounds (default 10, --quick 5)")
    ap.add_argument("--judge-budget-s", type=float, help="per config per round (default 0.05, --quick 0.03)")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--deadline-s", type=float,
                    help="skip the remaining cases after this long (default 220)")
    a = ap.parse_args(argv)
    rounds = a.rounds or (5 if a.quick else 10)
    budget = a.judge_budget_s or (0.03 if a.quick else 0.05)
    deadline = a.deadline_s if a.deadline_s is not None else 220.0
    selected = [c for c in cases() if not a.cases or c.name in a.cases]
    if a.cases and len(selected) != len(a.cases):
        ap.error(f"unknown case in {a.cases}; cases: {[c.name for c in cases()]}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    plan = {"cases": [{"case": c.name, "key": dict(c.key), "configs": len(c.configs)} for c in selected],
            "methods": list(METHODS), "judged_under": list(POLICIES), "reps": a.reps, "rounds": rounds,
            "judge_budget_s": budget, "top_k": a.top_k, "quick": a.quick}  # fmt: skip
    if a.dry_run:
        (out / "short_kernels_plan.json").write_text(json.dumps(plan, indent=1) + "\n")
        for c in plan["cases"]:
            print(f"{c['case']:20} key={c['key']} configs={c['configs']}")
        print(f"methods {METHODS} x {a.reps} tunings each; judged under {POLICIES}: {rounds} rounds x {budget} s")
        return 0
    from tritune.bench.provenance import provenance

    t_start = time.perf_counter()
    doc: dict[str, Any] = {"provenance": provenance(benchmark="short_kernels"), "plan": plan, "cases": []}
    for case in selected:
        if time.perf_counter() - t_start > deadline:
            doc["cases"].append({"case": case.name, "skipped": f"past the deadline of {deadline} s"})
            continue
        t0 = time.perf_counter()
        good, fns, dropped, facts = gpu_fns_and_facts(case)
        compile_s = time.perf_counter() - t0
        res = run_case(case.name, good, fns, make_gpu_timer, reps=a.reps, rounds=rounds, judge_budget_s=budget,
                       top_k=a.top_k, make_judge_timer=make_gpu_judge_timer, facts=facts)  # fmt: skip
        res.update(dropped=dropped, compile_and_check_s=compile_s, case_wall_s=time.perf_counter() - t0)
        doc["cases"].append(res)
        (out / "short_kernels.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{case.name}: {len(good)} configs ({len(dropped)} dropped), {res['case_wall_s']:.0f} s", flush=True)
    doc["wall_s"] = time.perf_counter() - t_start
    (out / "short_kernels.json").write_text(json.dumps(doc, indent=1) + "\n")
    text = tables([r for r in doc["cases"] if "skipped" not in r])
    (out / "short_kernels.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

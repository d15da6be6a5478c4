"""Every search strategy on every landscape at a fixed budget: the measurement the default is picked by.

For each landscape (``*.json`` in a folder, format ``tritune.landscape/1``) and each strategy it runs
``--seeds`` seeded searches with a budget of ``--budget`` x the legal configs, and prints the median and
90th-percentile best ratio (best recorded time found / landscape best) and the median evaluations it
took to get within 2%. Random search is the baseline. Targets: median <= 1.02, p90 <= 1.05
and never worse than random, at 0, 1% and 2% replay noise. Quality is judged on the TRUE (recorded,
noise-free) time of the config each search finally picks.

    python benchmarks/search_eval.py benchmarks/landscapes --out results.json
    python benchmarks/search_eval.py --synthetic              # SYNTHETIC landscapes only (development)
    python benchmarks/search_eval.py benchmarks/landscapes --fitted 2 --holdout 1 --noise 0,0.01,0.02 \
        --strategies random,surrogate,surrogate:kappa=2 --out eval.json

Landscapes fall in two suites. ``dev``: the recorded ones and ``--fitted`` SYNTHETIC ones (seeds from
100) that strategies were developed on. ``holdout`` (``--holdout N``): SYNTHETIC landscapes never looked
at while tuning strategies: N fitted ones per variant with other seeds (from 700) and the analytic
families of ``landscapes/synthetic.py`` (320 to 1,152 configs: roofline matmuls with smem and spill
cliffs, a chunked softmax, near-ties, a narrow attention optimum). A strategy name may carry options,
``surrogate:kappa=2,top=5``, to evaluate a variant before it becomes a default. The JSON records the
machine, date, command and commit.

No GPU is needed: this replays recorded timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tritune.engine.finals import replay_final_race
from tritune.errors import SearchError
from tritune.landscape import Landscape
from tritune.search import registry
from tritune.search.driver import ROUNDS
from tritune.search.simulate import Simulation, simulate

TARGET_MEDIAN, TARGET_P90 = 1.02, 1.05


def load_landscapes(folder: Path | None, synthetic: bool, seed: int = 0) -> list[tuple[str, Landscape]]:
    out: list[tuple[str, Landscape]] = []
    if folder is not None:
        sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
        from fitted import recorded  # type: ignore[import-not-found]

        out.extend(recorded(folder))
    if synthetic:
        sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
        from synthetic import generate_all  # type: ignore[import-not-found]

        out.extend((f"{land.kernel}/{seed} (SYNTHETIC)", land) for land in generate_all(seed))
    return out


def load_fitted(folder: Path, per_variant: int, first_seed: int = 100) -> list[tuple[str, Landscape]]:
    """SYNTHETIC landscapes sampled from models fitted to the recorded ones (landscapes/fitted.py)."""
    sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
    from fitted import generate  # type: ignore[import-not-found]

    return [(f"{land.kernel} (SYN)", land) for land in generate(per_variant, folder, first_seed)]


def load_holdout(folder: Path, per_variant: int) -> list[tuple[str, Landscape]]:
    """The held-out suite: fitted landscapes of unseen seeds, and the analytic SYNTHETIC families."""
    out = load_fitted(folder, per_variant, first_seed=700)
    sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
    from synthetic import generate_all  # type: ignore[import-not-found]

    out += [(f"{land.kernel}/7 (SYN)", land) for land in generate_all(7)]
    return out


def split_strategies(text: str | None) -> list[str]:
    """``random,surrogate:top=5,kappa=2`` -> ``["random", "surrogate:top=5,kappa=2"]``: an item with ``=``
    and no ``:`` is one more option of the strategy before it."""
    out: list[str] = []
    for item in (text or "").split(","):
        if "=" in item and ":" not in item and out:
            out[-1] += "," + item
        elif item:
            out.append(item)
    return out


def strategy_factory(spec: str) -> Any:
    """``name`` or ``name:key=value,...`` (a registered strategy with options) as a simulate factory."""
    if ":" not in spec:
        return spec
    try:
        name, options = registry.parse_spec(spec)
    except SearchError as e:
        raise SystemExit(str(e)) from None

    def factory(space: Any, *, seed: int, illegal: Any) -> Any:
        return registry.get(name, space, seed=seed, illegal=illegal, **options)

    factory.__name__ = spec
    return factory


def provenance(argv: list[str], script: str = "search_eval.py") -> dict[str, Any]:
    """Where and how a CPU replay's result was made (this script's, or ``script``'s: ``widen_eval.py`` too):
    machine, date, command and commit."""
    import datetime
    import os
    import platform
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent, check=False
            ).stdout.strip()
        except OSError:
            return ""

    return {
        "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()})",
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": f"python3 benchmarks/{script} " + " ".join(argv),
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "gpu": None,
    }


def transfer_main(args: argparse.Namespace) -> int:
    """Each key of each SYNTHETIC family as the new key, the other 3 tuned: transfer vs a cold search."""
    from tritune.search.simulate_transfer import simulate_transfer

    sys.path.insert(0, str(Path(__file__).parent / "landscapes"))
    from fitted import families  # type: ignore[import-not-found]

    folder = args.folder or Path(__file__).parent / "landscapes"
    noises = [float(x) for x in str(args.noise).split(",")]
    print(
        f"transfer: budget {args.budget:.0%}, {args.seeds} seeds, noise {noises}; evaluations until the pick is "
        "within 2% of the true best (median over seeds); target: transfer <= 0.25 x cold"
    )
    header = (
        f"{'family (SYNTHETIC)':22} {'key':>5} {'noise':>5} {'evals':>5} {'cold':>6} {'transf':>6} "
        f"{'ratio':>6} {'cold med':>8} {'tr med':>7} {'tr p90':>7}"
    )
    print(header)
    print("-" * len(header))
    rows: list[dict[str, Any]] = []
    fractions: list[float] = []
    for fam in families(4, args.transfer, folder):
        for noise in noises:
            for r in simulate_transfer(fam, budget=args.budget, seeds=args.seeds, noise=noise):
                frac = r.fraction
                if frac is not None:
                    fractions.append(frac)
                print(
                    f"{r.kernel[:22]:22} {r.key.get('size', '-'):>5} {noise:5.2f} {r.budget_evaluations:5d} "
                    f"{fmt(r.cold_evals, 1):>6} {fmt(r.transfer_evals, 1):>6} {fmt(frac, 2):>6} "
                    f"{fmt(r.cold_median):>8} {fmt(r.transfer_median):>7} {fmt(r.transfer_p90):>7}",
                    flush=True,
                )
                rows.append({**r.to_json(), "noise": noise})
    if fractions:
        fractions.sort()
        med = fractions[len(fractions) // 2]
        print(
            f"median transfer/cold evaluations ratio over {len(fractions)} keys: {med:.2f} (target <= 0.25)"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {"provenance": args.provenance, "budget": args.budget, "seeds": args.seeds, "rows": rows},
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {args.out}")
    return 0


#: A pooled row: (suite, landscape, noise, n-th row of that label) -> strategy -> seed -> best ratio.
Pooled = dict[tuple[str, str, float, int], dict[str, dict[int, float]]]


def pooled_runs(paths: list[str]) -> tuple[Pooled, list[str]]:
    """The runs of several search_eval JSONs (``.json`` or ``.json.gz``) pooled per row and strategy (a seed seen
    twice counts once; fitted variants share a label, so the n-th row of a label is its own row), and the
    strategies in first-seen order. Files of the same rows on disjoint seeds (``--first-seed``) make 40+ seeds."""
    import gzip

    runs: Pooled = {}
    order: list[str] = []
    for path in paths:
        with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
            doc = json.load(f)
        seen: dict[tuple[str, float, str], int] = {}
        for r in doc["results"]:
            label = (r["landscape"], r["noise"], r["strategy"])
            seen[label] = seen.get(label, -1) + 1
            key = (r["suite"], r["landscape"], r["noise"], seen[label])
            if r["strategy"] not in order:
                order.append(r["strategy"])
            runs.setdefault(key, {}).setdefault(r["strategy"], {}).update(
                (x["seed"], x["best_ratio"]) for x in r["runs"])  # fmt: skip
    return runs, order


def judge_row(per: dict[str, dict[int, float]]) -> dict[str, tuple[float, float, bool, bool]]:
    """Each strategy of one pooled row, as search_eval judges it over all its seeds: (median, p90, met, worse
    than random), met = median <= 1.02 and p90 <= 1.05, worse = median or p90 more than 0.005 above random's."""
    from tritune.search.simulate import quantile

    rand = list(per["random"].values())
    rand_med, rand_p90 = quantile(rand, 0.5), quantile(rand, 0.9)
    out = {}
    for name, by_seed in per.items():
        med, p90 = quantile(list(by_seed.values()), 0.5), quantile(list(by_seed.values()), 0.9)
        assert med is not None and p90 is not None and rand_med is not None and rand_p90 is not None
        worse = name != "random" and (med > rand_med + 0.005 or p90 > rand_p90 + 0.005)
        out[name] = (med, p90, med <= TARGET_MEDIAN and p90 <= TARGET_P90, worse)
    return out


def print_pooled_summary(runs: Pooled) -> None:
    """Rows met and worse than random per suite and strategy, over the pooled seeds."""
    tally: dict[tuple[str, str], list[Any]] = {}
    for key, per in runs.items():
        for name, (_, _, met, worse) in judge_row(per).items():
            t = tally.setdefault((key[0], name), [0, 0, 0, len(per[name]), []])
            t[0] += 1
            t[1] += met
            t[2] += worse
            if worse:
                t[4].append(f"{key[1]} @{key[2]:.0%}")
    for (suite, name), (rows, met, worse, seeds, which) in tally.items():
        print(f"{suite:8} {name:36} met {met}/{rows}  worse than random {worse}  ({seeds} seeds) {'; '.join(which)}")


def print_summary(tally: dict[tuple[str, str, float], list[int]]) -> list[dict[str, Any]]:
    """Per strategy, suite and noise: rows meeting both targets and rows worse than random."""
    print(f"{'strategy':28} {'suite':8} {'noise':>5} {'meet targets':>12} {'worse than random':>17}")
    out = []
    for (name, suite, noise), (rows, miss, bad) in sorted(
        tally.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])
    ):
        print(f"{name[:28]:28} {suite:8} {noise:5.2f} {f'{rows - miss}/{rows}':>12} {bad:>17}")
        out.append(
            {"strategy": name, "suite": suite, "noise": noise, "rows": rows, "met": rows - miss, "worse": bad}
        )
    return out


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", type=Path, help="folder of landscape JSON files")
    ap.add_argument(
        "--synthetic", action="store_true", help="add the synthetic landscapes (labelled SYNTHETIC)"
    )
    ap.add_argument(
        "--strategies", default=None, help="comma-separated names (default: every registered one)"
    )
    ap.add_argument(
        "--synthetic-seed", type=int, default=0, help="seed of the synthetic landscapes (default 0)"
    )
    ap.add_argument("--budget", type=float, default=0.25, help="fraction of the legal configs (default 0.25)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="seeds are FIRST..FIRST+SEEDS-1 (default 0): other seeds of the same rows, to see how much a "
        "row's median and p90 move with the seeds alone",
    )
    ap.add_argument(
        "--noise", default="0", help="relative multiplicative replay noise; comma-separated for several"
    )
    ap.add_argument(
        "--fitted",
        type=int,
        default=0,
        help="add N SYNTHETIC landscapes per variant fitted to each recorded one (landscapes/fitted.py)",
    )
    ap.add_argument(
        "--holdout",
        type=int,
        default=0,
        help="add the held-out SYNTHETIC suite: N fitted landscapes per variant of unseen seeds plus the "
        "analytic families",
    )
    ap.add_argument(
        "--model",
        choices=("tuner", "reserve"),
        default="tuner",
        help="what follows the search (tritune simulate --model): 'tuner' (default): tuning's driver, then the "
        "tuner's final race picks; 'reserve': the earlier model (15%% re-measures the ties, the strategy picks)",
    )
    ap.add_argument(
        "--width",
        type=int,
        default=16,
        help="configs proposed per batch before any is measured (tritune simulate --width): default 16, the "
        "compile pool tuning uses on the 16-core H200 host; 1 asks one at a time",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=ROUNDS,
        help="tritune simulate --rounds: when the budget allows fewer than N batch rounds at --width, batches "
        f"of ceil(budget / N), as tuning with a budget given (tuner model); default {ROUNDS}; 0: the pool's width",
    )
    ap.add_argument("--out", type=Path, help="write every run as JSON here")
    ap.add_argument(
        "--transfer",
        type=int,
        default=0,
        help="instead: transfer between keys on N fitted families of 4 keys per recorded landscape",
    )
    args = ap.parse_args(argv)
    # Taken before the runs: the commit and date of the code that ran, not of the tree at the end.
    args.provenance = provenance(list(sys.argv[1:] if argv is None else argv))
    if args.transfer:
        return transfer_main(args)
    if args.rounds < 0:
        ap.error(f"--rounds {args.rounds} must be at least 0")
    if args.width < 1:
        ap.error(f"--width {args.width} must be at least 1")
    if args.folder is None and not args.synthetic and not args.holdout:
        ap.error("give a landscape folder, --synthetic, --holdout, or several")
    names = split_strategies(args.strategies) or [n for n in registry.names() if n != "exhaustive"]
    here = Path(__file__).parent / "landscapes"
    lands = [
        (lab, land, "dev") for lab, land in load_landscapes(args.folder, args.synthetic, args.synthetic_seed)
    ]
    if args.fitted:
        lands += [(lab, land, "dev") for lab, land in load_fitted(args.folder or here, args.fitted)]
    if args.holdout:
        lands += [(lab, land, "holdout") for lab, land in load_holdout(args.folder or here, args.holdout)]
    noises = [float(x) for x in str(args.noise).split(",")]
    if not lands:
        ap.error(f"no *.json landscapes in {args.folder}")
    results: list[dict[str, Any]] = []
    # (strategy, suite, noise) -> [rows, rows missing a target, rows worse than random]
    tally: dict[tuple[str, str, float], list[int]] = {}
    print(
        f"budget {args.budget:.0%} of legal configs, {args.seeds} seeds, noise {noises}; "
        f"targets: median <= {TARGET_MEDIAN}, p90 <= {TARGET_P90}; default strategy: {registry.DEFAULT}; "
        f"model: {args.model}; width {args.width}; rounds {args.rounds}"
    )
    header = (
        f"{'landscape':30} {'noise':>5} {'legal':>5} {'evals':>5} {'strategy':13} {'median':>7} {'p90':>7} "
        f"{'to2%':>5} {'s':>5}"
    )
    print(header)
    print("-" * len(header))
    for label, land, suite in lands:
        label = label if suite == "dev" else f"{label} [H]"
        for noise in noises:
            rand: Simulation | None = None
            for name in names:
                t0 = time.perf_counter()
                try:
                    sim: Simulation = simulate(
                        land,
                        strategy_factory(name),
                        args.budget,
                        range(args.first_seed, args.first_seed + args.seeds),
                        noise=noise,
                        name=name,
                        final=replay_final_race if args.model == "tuner" else None,
                        width=args.width,
                        rounds=args.rounds or None,
                    )
                except SearchError as e:
                    if "tritune[search]" not in str(e):
                        raise
                    print(f"{label:30} {noise:5.2f} {'':>5} {'':>5} {name:13} skipped: {e}")
                    continue
                secs = time.perf_counter() - t0
                med, p90 = sim.median_best_ratio, sim.p90_best_ratio
                met = med is not None and p90 is not None and med <= TARGET_MEDIAN and p90 <= TARGET_P90
                if name == "random":
                    rand = sim
                # "never worse than random": the median and the p90 both at most random's (+0.5% slack
                # for seed noise); judged for strategies run after random in --strategies.
                bad = (
                    rand is not None
                    and name != "random"
                    and med is not None
                    and p90 is not None
                    and (
                        med > (rand.median_best_ratio or 9) + 0.005
                        or p90 > (rand.p90_best_ratio or 9) + 0.005
                    )
                )
                count = tally.setdefault((name, suite, noise), [0, 0, 0])
                count[0] += 1
                count[1] += not met
                count[2] += bad
                flag = ("" if met else "  MISS") + ("  WORSE-THAN-RANDOM" if bad else "")
                print(
                    f"{label[:30]:30} {noise:5.2f} {sim.legal_configs:5d} {sim.budget_evaluations:5d} {name[:13]:13} "
                    f"{fmt(med):>7} {fmt(p90):>7} {fmt(sim.median_evals_to_2pct, 0):>5} {secs:5.1f}{flag}",
                    flush=True,
                )
                results.append(
                    {
                        "landscape": label,
                        "suite": suite,
                        "provenance": land.provenance,
                        "seconds": secs,
                        "met": met,
                        "worse_than_random": bad,
                        "random_median": None if rand is None else rand.median_best_ratio,
                        "random_p90": None if rand is None else rand.p90_best_ratio,
                        **sim.to_json(),
                    }
                )
        print()
    summary = print_summary(tally)
    if args.out:
        doc = {
            "provenance": args.provenance,
            "budget": args.budget,
            "seeds": args.seeds,
            "first_seed": args.first_seed,
            "noise": noises,
            "default": registry.DEFAULT,
            "model": args.model,
            "width": args.width,
            "rounds": args.rounds or None,
            "summary": summary,
            "results": results,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

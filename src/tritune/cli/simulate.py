"""``tritune simulate LANDSCAPE``: replay a recorded landscape to measure a search strategy, with no GPU."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tritune.cli.common import EXIT_OK, EXIT_USAGE, check_outputs, emit_json, fail_usage, out_stream
from tritune.errors import SearchError, TrituneError
from tritune.search.driver import ROUNDS

#: ``--width``'s default: a compile pool of 16 workers, as tuning has on a 16-core GPU host (one worker per core).
DEFAULT_WIDTH = 16


def _fraction(text: str) -> float:
    """``--budget``: a share of the legal configs, ``0.25`` or ``25%``."""
    try:
        return float(text[:-1]) / 100 if text.strip().endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share of the legal configs; give 0.25 or 25%") from None


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="measure a search strategy against a recorded landscape (no GPU)",
        description="Run a search strategy against a recorded landscape (format tritune.landscape/1) once per "
        "seed, looking up each proposed config's recorded status and time. Configs recorded 'illegal' are "
        "screened out before the search; other failures are told to the strategy as failures. Prints each "
        "seed's best ratio (best recorded time found / landscape best), evaluations used and evaluations to "
        "get within 2%, then the median and 90th percentile. Exit 0, or 2 for usage errors and landscape "
        "files that cannot be loaded.",
    )
    p.add_argument("landscape", help="a landscape JSON file (tritune tune --record FILE writes one)")
    p.add_argument("--strategy", metavar="NAME", default=None, help=_strategy_help())
    p.add_argument("--budget", type=_fraction, default=0.25,
                   help="share of the legal configs to evaluate, as 0.25 or 25%% (default 0.25)")
    p.add_argument("--seeds", type=int, default=20, help="number of seeded runs, seeds 0..N-1 (default 20)")
    p.add_argument("--noise", type=float, default=0.0,
                   help="relative multiplicative noise on replayed times, such as 0.02 for 2%% (default 0: each "
                   "time replayed as recorded)")
    p.add_argument("--model", choices=("tuner", "reserve"), default="tuner",
                   help="what follows the search: 'tuner' (default) as tuning does it: the budget held back only "
                   "for a strategy's finals, then the tuner's final race re-times the configs within 3%% of the "
                   "fastest (at most 4) on the replay with the same noise per look, at no evaluation cost, and "
                   "its winner is the pick; 'reserve': the earlier model, 15%% of the budget re-measures the "
                   "strategy's ties under noise and the strategy picks")
    p.add_argument("--width", type=int, default=DEFAULT_WIDTH,
                   help="configs proposed per batch before any of them is measured, as tuning asks batches as "
                   "wide as its compile pool (tritune tune --jobs N: batches of N); default "
                   f"{DEFAULT_WIDTH}, a pool of {DEFAULT_WIDTH} workers whatever this machine's cores; 1 asks "
                   "one config at a time")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help="the fewest batch rounds, as tuning with a --budget given: a budget that allows fewer "
                   "rounds of --width asks batches of ceil(budget / ROUNDS) instead (tuner model); default "
                   f"{ROUNDS}; 0 keeps every batch as wide as --width")
    p.add_argument("--json", metavar="FILE|-", help="write the result as JSON to FILE, or to stdout with -")
    p.add_argument("--quiet", action="store_true", help="print only the final result")


def _strategy_help() -> str:
    """``--strategy``'s help, naming the registered strategies and the default."""
    from tritune.search.registry import DEFAULT, names

    return (
        f"the strategy to measure: one of {', '.join(names())}, with options as name:key=value,... "
        f"(surrogate:probe=1) (default: {DEFAULT}, the strategy tuning searches with)"
    )


def _fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def run(args: argparse.Namespace) -> int:
    from tritune.engine.finals import replay_final_race
    from tritune.landscape import Landscape
    from tritune.search import registry
    from tritune.search.simulate import simulate

    name = args.strategy or registry.DEFAULT
    if name.partition(":")[0] not in registry.names():
        return fail_usage(f"unknown strategy {name!r}; registered: {', '.join(registry.names())}")
    try:
        base, options = registry.parse_spec(name)  # "surrogate:probe=1": a strategy with options
    except TrituneError as e:
        return fail_usage(str(e))

    def strategy(space: Any, *, seed: int, illegal: Any) -> Any:
        try:
            return registry.get(base, space, seed=seed, illegal=illegal, **options)
        except TypeError as e:  # an option the strategy does not take
            raise SearchError(f"--strategy {name!r}: {e}") from None
    if not 0 < args.budget <= 1:
        return fail_usage(f"--budget {args.budget:g} must be a fraction in (0, 1], e.g. 0.25 or 25% of the legal configs")
    if args.seeds < 1:
        return fail_usage(f"--seeds {args.seeds} must be at least 1")
    if args.width < 1:
        return fail_usage(f"--width {args.width} must be at least 1 (the compile pool's width, e.g. 16)")
    if args.rounds < 0:
        return fail_usage(f"--rounds {args.rounds} must be at least 0 (0: batches as wide as --width)")
    if not args.noise >= 0:
        return fail_usage(f"--noise {args.noise} must be >= 0 (a relative spread such as 0.02)")
    problem = check_outputs(args, "json")
    if problem is not None:
        return fail_usage(problem)
    try:
        landscape = Landscape.load(args.landscape)
    except FileNotFoundError:
        return fail_usage(f"{args.landscape}: no such landscape file")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError, TypeError) as e:
        return fail_usage(f"{args.landscape}: not a readable landscape JSON file ({e})")
    except TrituneError as e:
        return fail_usage(str(e))
    from tritune.progress import make_progress

    with make_progress(quiet=args.quiet) as progress:
        progress.stage(f"simulating {name} on {args.landscape}", args.seeds, unit="seeds")

        def on_run(r: Any) -> None:
            progress.step(f"seed {r.seed}", "measured", f"best ratio {r.best_ratio:.4f}, {r.evaluations} evaluations")

        try:
            sim = simulate(landscape, strategy, args.budget, args.seeds, noise=args.noise, name=name, on_run=on_run,
                           final=replay_final_race if args.model == "tuner" else None, width=args.width,
                           rounds=args.rounds or None)
        except TrituneError as e:
            return fail_usage(f"{args.landscape}: {e}")
    payload = {"command": "simulate", **sim.to_json(), "landscape": str(args.landscape)}
    written = emit_json(args, json.dumps(payload, indent=1))
    stream = out_stream(args)
    print(
        f"{name} on {landscape.kernel or args.landscape}: budget {args.budget:g} = {sim.budget_evaluations} of "
        f"{sim.legal_configs} legal configs, {len(sim.runs)} seeds, noise {args.noise:g}, model {sim.model}, "
        f"width {sim.width}" + (f", rounds {sim.rounds}" if sim.rounds else ""),
        file=stream,
    )
    print(
        f"{'seed':>5} {'best_ratio':>11} {'evaluations':>12} {'evals_to_2pct':>14}  best config", file=stream
    )
    for r in sim.runs:
        print(
            f"{r.seed:>5} {_fmt(r.best_ratio):>11} {r.evaluations:>12} "
            f"{'-' if r.evals_to_2pct is None else r.evals_to_2pct:>14}  {r.best_config or '-'}",
            file=stream,
        )
    print(
        f"median best ratio {_fmt(sim.median_best_ratio)}, p90 best ratio {_fmt(sim.p90_best_ratio)}, "
        f"median evals to 2% {_fmt(sim.median_evals_to_2pct, 1)}",
        file=stream,
    )
    return EXIT_OK if written else EXIT_USAGE

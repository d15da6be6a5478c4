"""``tritune tune PATH``: time the candidates on this machine's GPU and keep the fastest per key.

Without a GPU nothing can be timed, and the command says so: it still checks every candidate for
correctness (as ``verify`` does) and reports the correct ones as ``not_timed``, never as a winner.

Under ``torchrun --nproc-per-node=N -m tritune tune PATH ...`` (WORLD_SIZE > 1) the command is an
offline farm: it initializes the process group (NCCL with CUDA, else gloo; each rank on GPU
LOCAL_RANK), each rank compiles and times its share of the candidates, and only rank 0 writes the
store, the JSON, the landscape files and the table; the other ranks print only errors. Each rank's
compile workers default to its share of the cores (cores / LOCAL_WORLD_SIZE).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from tritune.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_interpreter_args,
    add_workload_args,
    check_outputs,
    emit_json,
    ensure_interpreter_without_gpu,
    fail_usage,
    load,
    option_problem,
    out_stream,
    parse_keys,
)
from tritune.errors import SearchError, TrituneError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="time every legal candidate on the GPU and keep the fastest (racing, stored)",
        description="Compile the legal candidates in parallel workers, verify each against the oracle, and "
        "race them on CUDA events as the compiles finish; store every measurement. Without a GPU, nothing is timed: the candidates are "
        "verified and reported as not_timed. Exit 0 when every key has a winner, 1 otherwise, 2 for usage errors.",
    )
    add_workload_args(p)
    add_interpreter_args(p)
    p.add_argument("--record", metavar="FILE", help="write each key's timings as a tritune.landscape/1 file")
    p.add_argument("--sweep", action="store_true",
                   help="time every legal candidate to completion, with no racing (no slow candidate is dropped "
                        "early) and no search: the complete landscape --record keeps; takes no --strategy or "
                        "--budget")
    p.add_argument("--exhaustive", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--strategy", metavar="NAME", default=None, help=_strategy_help())
    p.add_argument("--budget", metavar="B", default=None, help=_budget_help())
    p.add_argument("--jobs", type=int, default=None, help="compile worker processes (default: one per core)")
    p.add_argument("--compile-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on a candidate whose compile takes longer than this, and report it "
                        "compile_timeout (default: 60)")
    p.add_argument("--no-verify", action="store_true", help="skip the oracle check before timing")
    p.add_argument("--store", metavar="PATH", help="the SQLite store (default: $TRITUNE_STORE or the user cache dir)")
    p.add_argument("--no-store", action="store_true", help="do not record results in the store")
    p.add_argument("--measure", choices=["cold", "warm", "graph"], default=None,
                   help="how to time: L2 flushed (cold), back-to-back (warm), or in a CUDA graph (graph, for very "
                        "short kernels); part of the store key (default: $TRITUNE_MEASURE, else cold)")
    p.add_argument("--numerics", choices=["any", "exact"], default=None,
                   help="exact: only configs that compute the first legal config's bits (on the key's arguments and "
                        "two perturbed copies) may win, so tuning never changes a result; part of the store key "
                        "(default: $TRITUNE_NUMERICS, else any)")


def _strategy_help() -> str:
    """``--strategy``'s help, naming the registered strategies and the default."""
    from tritune.engine.plan import SEARCH_THRESHOLD
    from tritune.search.registry import DEFAULT, names

    named = ", ".join(n for n in names() if n not in ("exhaustive", "transfer"))
    return (
        f"search the space with a strategy instead of racing every legal config: auto (spaces of more than "
        f"{SEARCH_THRESHOLD} legal configs are searched with {DEFAULT}, which transfers from tuned neighbouring "
        f"keys in the store; smaller spaces are raced in full), exhaustive (race every legal config), or one of "
        f"{named}, with options as name:key=value,... (surrogate:probe=1) (default: $TRITUNE_SEARCH, else auto)"
    )


def _budget_help() -> str:
    """``--budget``'s help, with the default stated from the constants tuning uses."""
    from tritune.engine.plan import DEFAULT_MAX, DEFAULT_MIN, DEFAULT_SHARE, TRANSFER_FRACTION

    return (
        "the search's budget: a fraction of the legal configs (10%%, 0.1), a count (200) or seconds (30s); what "
        f"the store holds for the key counts (default: {DEFAULT_SHARE * 100:g}%% of the legal configs, at least "
        f"{DEFAULT_MIN} and at most {DEFAULT_MAX}, rounded down to whole batches of --jobs; "
        f"{TRANSFER_FRACTION * 100:g}%% of that when the store holds tuned neighbouring keys)"
    )


#: Said when the removed ``--exhaustive`` is given: which flag means what it meant, and which the other reading.
EXHAUSTIVE_RENAMED = (
    "--exhaustive is now --sweep (time every legal candidate to completion, no racing); "
    "--strategy exhaustive races every legal config without searching"
)


def _record_paths(base: str, n: int) -> list[Path]:
    p = Path(base)
    if n == 1:
        return [p]
    return [p.with_name(f"{p.stem}-{i}{p.suffix or '.json'}") for i in range(n)]


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _start_distributed() -> tuple[int, int, bool]:
    """(rank, local world size, whether this call initialized the process group) under torchrun."""
    import torch
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), _env_int("LOCAL_WORLD_SIZE", 1), False
    if _env_int("WORLD_SIZE", 1) <= 1 or not dist.is_available():
        return 0, 1, False
    if torch.cuda.is_available():
        torch.cuda.set_device(_env_int("LOCAL_RANK", 0))
        dist.init_process_group("nccl", device_id=torch.device("cuda", _env_int("LOCAL_RANK", 0)))
    else:
        dist.init_process_group("gloo")
    return dist.get_rank(), _env_int("LOCAL_WORLD_SIZE", _env_int("WORLD_SIZE", 1)), True


def run(args: argparse.Namespace) -> int:
    if _env_int("WORLD_SIZE", 1) > 1 or _dist_initialized():
        return _run_farmed(args)
    return _run(args, 0)


def _dist_initialized() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return False
    return bool(dist.is_available() and dist.is_initialized())


def _run_farmed(args: argparse.Namespace) -> int:
    """One rank of a torchrun farm: start the group, tune collectively, leave the group."""
    from tritune.device import gpu_unavailable_reason

    # No GPU, nothing to farm: rank 0 verifies, the other ranks have nothing to do.
    if gpu_unavailable_reason() is not None:
        return _run(args, _env_int("RANK", 0))
    rank, _, started = _start_distributed()  # compile workers default to cores / LOCAL_WORLD_SIZE
    try:
        return _run(args, rank)
    finally:
        if started:
            import torch.distributed as dist

            dist.destroy_process_group()


def _option_problem(args: argparse.Namespace) -> str | None:
    """Bad option values and unwritable output paths, found before any work starts."""
    if args.jobs is not None and args.jobs < 1:
        return f"--jobs must be at least 1 (compile worker processes), got {args.jobs}"
    if (shared := option_problem(args)) is not None:  # --rows, --compile-timeout: as every command says them
        return shared
    if args.exhaustive:
        return EXHAUSTIVE_RENAMED
    if args.sweep and (args.strategy not in (None, "exhaustive") or args.budget is not None):
        return "--sweep times every legal config to completion; it takes no --strategy or --budget"
    from tritune.engine.plan import plan

    try:
        plan(args.strategy, args.budget, 0, where="tritune tune")
    except SearchError as e:
        return str(e)
    return check_outputs(args, "json", "record")


def _run(args: argparse.Namespace, rank: int) -> int:
    problem = _option_problem(args)
    if problem is not None:
        return fail_usage(problem) if rank == 0 else EXIT_USAGE
    why = ensure_interpreter_without_gpu()
    from tritune.progress import make_progress
    from tritune.report.tables import render_table

    try:
        keys = parse_keys(args.key)
        workloads = load(args)
    except TrituneError as e:
        return fail_usage(str(e))
    if why is not None:
        return _untimed(args, workloads, keys, why) if rank == 0 else EXIT_OK
    from tritune.engine.options import TuneOptions
    from tritune.engine.race import RaceOptions
    from tritune.offline.tune import landscapes, tune

    store = None
    if not args.no_store and rank == 0:
        from tritune.store import open_store

        try:
            store = open_store(args.store)
        except TrituneError as e:  # a directory, another user's store, an unwritable place: one line
            return fail_usage(str(e))
    opts = TuneOptions(search=args.strategy, budget=args.budget, measure=args.measure, jobs=args.jobs,
                       compile_timeout=args.compile_timeout, race=RaceOptions(), sweep=args.sweep,
                       numerics=args.numerics)
    try:
        with make_progress(quiet=args.quiet or rank != 0) as progress:
            result = tune(workloads, keys=keys, options=opts, verify=not args.no_verify, store=store, progress=progress)
    except TrituneError as e:
        return fail_usage(f"rank {rank}: {e}" if _dist_initialized() else str(e))
    ok = all(w.extra.get("winner") for w in result.workloads)
    if rank != 0:
        if result.extra.get("winners_identical_across_ranks") is False:
            print(f"tritune tune: rank {rank}: the ranks ended with different winners", file=sys.stderr)
        return EXIT_OK if ok else EXIT_FAILED
    written = emit_json(args, result.dumps())
    if args.record:
        lss = landscapes(result)
        for ls, path in zip(lss, _record_paths(args.record, len(lss))):
            try:
                ls.write(path)
            except OSError as e:
                print(f"tritune: error: --record {path}: could not write ({e.strerror or e})", file=sys.stderr)
                written = False
    if not (args.quiet and args.json == "-"):
        print(render_table(result, max_rows=args.rows or None), file=out_stream(args))
    if not written:
        return EXIT_USAGE
    return EXIT_OK if ok else EXIT_FAILED


def _untimed(args: argparse.Namespace, workloads: list[Any], keys: Any, why: str) -> int:
    """No GPU: verify instead, and say plainly that nothing was timed."""

    from tritune.cli.verify import interpreter_check
    from tritune.outcome import Status
    from tritune.progress import make_progress
    from tritune.report.tables import render_table
    from tritune.results import CandidateResult, RunResult
    from tritune.verify import verify

    try:
        pace = interpreter_check(args, workloads, keys)
    except TrituneError as e:
        return fail_usage(str(e))
    try:
        with make_progress(quiet=args.quiet) as progress:
            report = verify(workloads, keys=keys, progress=progress, pace=pace)
    except TrituneError as e:
        return fail_usage(str(e))
    for w in report.workloads:  # why nothing was timed is said once, in the timing line, not on every row
        w.extra.update(winner=None, ties=[])
        w.candidates = [
            CandidateResult(c.config, Status.NOT_TIMED, c.reason, c.extra)
            if c.status in (Status.CORRECT, Status.COMPARED)
            else c
            for c in w.candidates
        ]
    result = RunResult(
        "tune",
        f"NO TIMING HAPPENED: {why}. Timing needs a CUDA GPU driver. Every candidate was verified for "
        "correctness instead; correct ones are reported as not_timed. No winner is claimed.",
        report.workloads,
        provenance=report.provenance,
    )
    written = emit_json(args, result.dumps())
    if not (args.quiet and args.json == "-"):
        print(render_table(result, max_rows=args.rows or None), file=out_stream(args))
    print(f"tritune tune: no timing happened: {why}. Run this on a machine with a CUDA GPU.", file=sys.stderr)
    if args.record:
        print(
            f"tritune tune: --record {args.record} was not written: a landscape holds timings, and nothing "
            "was timed here",
            file=sys.stderr,
        )
    return EXIT_FAILED if written else EXIT_USAGE

"""``tritune tune PATH``: time the candidates on this machine's GPU and keep the fastest per key.

Without a GPU nothing can be timed, and the command says so: it still checks every candidate for
correctness (as ``verify`` does) and reports the correct ones as ``not_timed``, never as a winner.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tritune.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_workload_args,
    emit_json,
    ensure_interpreter_without_gpu,
    fail_usage,
    load,
    out_stream,
    parse_keys,
)
from tritune.errors import TrituneError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="time every legal candidate on the GPU and keep the fastest (racing, stored)",
        description="Screen, compile in parallel, verify against the oracle, then race the candidates on "
        "CUDA events and store every measurement. Without a GPU, nothing is timed: the candidates are "
        "verified and reported as not_timed. Exit 0 when every key has a winner, 1 otherwise, 2 for usage errors.",
    )
    add_workload_args(p)
    p.add_argument("--record", metavar="FILE", help="write each key's timings as a tritune.landscape/1 file")
    p.add_argument("--exhaustive", action="store_true", help="time every candidate to completion (no racing)")
    p.add_argument("--jobs", type=int, default=None, help="compile worker processes (default: one per core)")
    p.add_argument("--compile-timeout", type=float, default=60.0, metavar="SECONDS")
    p.add_argument("--no-verify", action="store_true", help="skip the oracle check before timing")
    p.add_argument("--store", metavar="PATH", help="the SQLite store (default: $TRITUNE_STORE or the user cache dir)")
    p.add_argument("--no-store", action="store_true", help="do not record results in the store")
    p.add_argument("--graph", action="store_true", help="time CUDA-graph replays (for very short kernels)")


def _record_paths(base: str, n: int) -> list[Path]:
    p = Path(base)
    if n == 1:
        return [p]
    return [p.with_name(f"{p.stem}-{i}{p.suffix or '.json'}") for i in range(n)]


def run(args: argparse.Namespace) -> int:
    why = ensure_interpreter_without_gpu()
    from tritune.progress import make_progress
    from tritune.report.tables import render_table

    try:
        keys = parse_keys(args.key)
        workloads = load(args)
    except TrituneError as e:
        return fail_usage(str(e))
    if why is not None:
        return _untimed(args, workloads, keys, why)
    from tritune.tune.race import RaceOptions
    from tritune.tune.session import TuneOptions, landscapes, tune

    store = None
    if not args.no_store:
        from tritune.store import open_store

        store = open_store(args.store)
    opts = TuneOptions(jobs=args.jobs, compile_timeout=args.compile_timeout, verify=not args.no_verify,
                       exhaustive=args.exhaustive, race=RaceOptions(), graph=args.graph)
    with make_progress(quiet=args.quiet) as progress:
        try:
            result = tune(workloads, keys=keys, options=opts, store=store, progress=progress)
        except TrituneError as e:
            return fail_usage(str(e))
    emit_json(args, result.dumps())
    if args.record:
        lss = landscapes(result)
        for ls, path in zip(lss, _record_paths(args.record, len(lss))):
            ls.write(path)
    if not (args.quiet and args.json == "-"):
        print(render_table(result), file=out_stream(args))
    ok = all(w.extra.get("winner") for w in result.workloads)
    return EXIT_OK if ok else EXIT_FAILED


def _untimed(args: argparse.Namespace, workloads: list[Any], keys: Any, why: str) -> int:
    """No GPU: verify instead, and say plainly that nothing was timed."""
    import sys

    from tritune.outcome import Status
    from tritune.progress import make_progress
    from tritune.report.tables import render_table
    from tritune.results import CandidateResult, RunResult
    from tritune.verify import verify

    with make_progress(quiet=args.quiet) as progress:
        report = verify(workloads, keys=keys, progress=progress)
    for w in report.workloads:
        w.extra.update(winner=None, ties=[])
        w.candidates = [
            CandidateResult(c.config, Status.NOT_TIMED, f"correct, but not timed: {why}", c.extra)
            if c.status is Status.CORRECT
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
    emit_json(args, result.dumps())
    if not (args.quiet and args.json == "-"):
        print(render_table(result), file=out_stream(args))
    print(f"tritune tune: no timing happened: {why}. Run this on a machine with a CUDA GPU.", file=sys.stderr)
    return EXIT_FAILED

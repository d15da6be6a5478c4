"""``tritune verify PATH``: check every candidate for correctness; never times anything."""

from __future__ import annotations

import argparse
from typing import Any

from tritune.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_workload_args,
    check_outputs,
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
        "verify",
        help="check every candidate against the oracle and each other (no timing)",
        description="Run every candidate of every workload for every key and check it against the oracle; "
        "group the correct ones by bit-identical outputs. Runs on the GPU if there is one, else in Triton's "
        "CPU interpreter. Never times anything. Exit 0 when every candidate is correct, 1 otherwise, 2 for "
        "usage errors and files that cannot be loaded.",
    )
    add_workload_args(p)


def announce_interpreter_cost(workloads: list[Any], keys: list[dict[str, Any]] | None) -> None:
    """Under Triton's interpreter, say up front which keys will take long, and how to pick a smaller one."""
    import sys

    from tritune.device import interpreter_on
    from tritune.verify.estimate import announcements

    if not interpreter_on():
        return
    for line in announcements(workloads, keys):
        print(f"tritune: warning: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    problem = check_outputs(args, "json")
    if problem is not None:
        return fail_usage(problem)
    ensure_interpreter_without_gpu()
    from tritune.progress import make_progress
    from tritune.report.tables import render_table
    from tritune.verify import verify

    try:
        keys = parse_keys(args.key)
        workloads = load(args)
        announce_interpreter_cost(workloads, keys)
    except TrituneError as e:
        return fail_usage(str(e))
    try:  # the error line comes after the progress display has closed: it is the last thing printed
        with make_progress(quiet=args.quiet) as progress:
            report = verify(workloads, keys=keys, progress=progress)
    except TrituneError as e:
        return fail_usage(str(e))
    written = emit_json(args, report.dumps())
    stream = out_stream(args)
    if not (args.quiet and args.json == "-"):
        print(render_table(report, max_rows=args.rows or None), file=stream)
    if not written:
        return EXIT_USAGE
    return EXIT_OK if report.ok else EXIT_FAILED

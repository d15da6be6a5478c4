"""``tritune verify PATH``: check every candidate for correctness; never times anything."""

from __future__ import annotations

import argparse
import sys
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
    out_stream,
    parse_keys,
)
from tritune.errors import TrituneError
from tritune.verify.estimate import LIMIT_S


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="check every candidate against the oracle and each other (no timing)",
        description="Run every candidate of every workload for every key and check it against the oracle; "
        "group the correct ones by bit-identical outputs. Runs on the GPU if there is one, else in Triton's "
        f"CPU interpreter, where a run estimated at more than {LIMIT_S:g} s stops before it starts and names a "
        "smaller workload or key. Never times anything. Exit 0 when every candidate is correct (or, with "
        "--allow-illegal, correct or illegal), 1 otherwise, 2 for usage errors and files that cannot be loaded.",
    )
    add_workload_args(p)
    add_interpreter_args(p)
    p.add_argument(
        "--allow-illegal", action="store_true",
        help="exit 0 when every candidate is correct or illegal (rejected by the static rules or the compiler "
        "before it ran), for a space with known-bad configs; incorrect or failing candidates still exit 1",
    )  # fmt: skip


def interpreter_check(args: argparse.Namespace, workloads: list[Any], keys: list[dict[str, Any]] | None) -> Any:
    """Under Triton's CPU interpreter: a :class:`~tritune.verify.estimate.RunClock` that stops a run slower than
    :data:`~tritune.verify.estimate.LIMIT_S`, after refusing (:class:`TooSlowError`) a run estimated over it;
    with ``--allow-slow``, the slow keys announced on stderr instead and no clock. ``None`` on a GPU."""
    from tritune.device import interpreter_on
    from tritune.verify.estimate import RunClock, TooSlowError, announcements, too_slow

    if not interpreter_on():
        return None
    if not args.allow_slow:
        refusal = too_slow(workloads, keys)
        if refusal is not None:
            raise TooSlowError(refusal)
        return RunClock()
    lines = announcements(workloads, keys)
    for i, line in enumerate(lines):
        quiet = "; --quiet: nothing more is printed until it ends" if args.quiet and i == len(lines) - 1 else ""
        print(f"tritune: warning: {line}{quiet}", file=sys.stderr)
    return None


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
        pace = interpreter_check(args, workloads, keys)
    except TrituneError as e:
        return fail_usage(str(e))
    try:  # the error line comes after the progress display has closed: it is the last thing printed
        with make_progress(quiet=args.quiet) as progress:
            report = verify(workloads, keys=keys, progress=progress, pace=pace)
    except TrituneError as e:
        return fail_usage(str(e))
    written = emit_json(args, report.dumps())
    stream = out_stream(args)
    if not (args.quiet and args.json == "-"):
        print(render_table(report, max_rows=args.rows or None), file=stream)
    if not written:
        return EXIT_USAGE
    if args.allow_illegal and report.passes(allow_illegal=True) and not report.ok:
        illegal = len(report.failures)
        print(f"tritune verify: {illegal} illegal candidate{'s' if illegal != 1 else ''} accepted (--allow-illegal)",
              file=sys.stderr)  # fmt: skip
    return EXIT_OK if report.passes(allow_illegal=args.allow_illegal) else EXIT_FAILED

"""``tritune screen PATH --target ARCH``: compile every candidate for a GPU architecture, without the GPU.

Exit codes: 0 when the screen ran, whatever the verdicts (finding illegal configs is its job);
1 when no candidate of some workload and key fits the target (nothing would be left to tune);
2 for usage errors, an unknown target, files that cannot be loaded and kernels that cannot be built.
"""

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
    fail_usage,
    out_stream,
    parse_keys,
)
from tritune.errors import TrituneError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "screen",
        help="compile every candidate for a target GPU without the GPU: resources and a verdict per config",
        description="Compile every candidate of every workload for a target GPU architecture on this machine "
        "(no GPU needed), read shared memory, registers and spills from the compiled binary, and judge each "
        "against the target's limits: fits, illegal (with the limit it breaks), compile_failed or "
        "compile_timeout. Exit 0 when the screen ran, 1 when no candidate of a workload and key fits, "
        "2 for usage errors, unknown targets and files or kernels that cannot be loaded.",
    )
    add_workload_args(p)
    p.add_argument(
        "--target",
        default="sm90",
        metavar="ARCH",
        help="sm80, sm86, sm89, sm90, sm100, sm120, or auto for this machine's GPU (default: sm90)",
    )
    p.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="compile workers (default: one per core)"
    )
    p.add_argument(
        "--compile-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="stop a candidate's compile after this long and mark it compile_timeout (default: 60)",
    )


def summary_line(result: Any) -> str:
    """``216 candidates: 120 fit, 96 illegal (96 shared_memory), 0 failed, 0 timed out; 310 s compiling``."""
    from tritune.screen import summary_counts

    counts = summary_counts(result)
    st = counts["status"]
    rules = ", ".join(f"{n} {r}" for r, n in sorted(counts["illegal_by_rule"].items()))
    total = sum(st.values())
    compile_s = sum(float(w.extra.get("compile_s_total", 0.0)) for w in result.workloads)
    return (
        f"{total} candidates for {result.extra['target']['name']}: {st.get('fits', 0)} fit, "
        f"{st.get('illegal', 0)} illegal{f' ({rules})' if rules else ''}, {st.get('compile_failed', 0)} failed "
        f"to compile, {st.get('compile_timeout', 0)} timed out; {compile_s:.1f} s compiling, "
        f"{result.extra['wall_s']:.1f} s wall with {result.extra['jobs']} job(s)"
    )


def run(args: argparse.Namespace) -> int:
    from tritune.outcome import Status
    from tritune.progress import make_progress
    from tritune.report.tables import render_table
    from tritune.screen import get_target, screen

    if args.jobs is not None and args.jobs < 1:
        return fail_usage(f"--jobs must be at least 1, got {args.jobs}")
    problem = check_outputs(args, "json")
    if problem is not None:
        return fail_usage(problem)
    try:
        keys = parse_keys(args.key)
        target = get_target(args.target)
    except TrituneError as e:
        return fail_usage(str(e))
    error: TrituneError | None = None
    with make_progress(quiet=args.quiet) as progress:
        progress.stage(f"compiling for {target.sm}", total=None)

        def step(done: int, total: int, result: Any) -> None:
            if done == 1 and progress.done:  # the next workload: its own count
                progress.stage(f"compiling for {target.sm}", total)
            progress.set_total(total)
            progress.step(result.config.id, result.status, result.reason or "")

        try:
            result = screen(
                args.path,
                target,
                name=args.workload,
                jobs=args.jobs,
                compile_timeout=args.compile_timeout,
                keys=keys,
                progress=step,
            )
        except TrituneError as e:
            error = e
    if error is not None:  # said once the progress display has ended, so it is the last line
        return fail_usage(str(error))
    written = emit_json(args, result.dumps())
    stream = out_stream(args)
    if not (args.quiet and args.json == "-"):
        print(render_table(result, max_rows=args.rows or None), file=stream)
        print(summary_line(result), file=stream)
    if not written:
        return EXIT_USAGE
    if any(not w.by_status(Status.FITS) for w in result.workloads):
        return EXIT_FAILED
    return EXIT_OK

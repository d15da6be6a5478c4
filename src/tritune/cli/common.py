"""Argument helpers shared by the commands: workload loading, key parsing, JSON output, exit codes."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from tritune.errors import TrituneError
from tritune.paths import output_problem, write_output
from tritune.terminal import printable

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

#: Set by the CLI when it switched Triton's interpreter on itself: the real reason there is no GPU.
INTERPRET_REASON_ENV = "TRITUNE_INTERPRET_REASON"


def add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a Python file defining module-level tritune.Workload objects")
    p.add_argument("--workload", metavar="NAME", help="only the workload with this name")
    p.add_argument(
        "--key",
        action="append",
        metavar="k=v[,k=v...]",
        help="a key to use instead of the workload's own keys (repeat for several keys)",
    )
    p.add_argument("--json", metavar="FILE|-", help="write the result as JSON to FILE, or to stdout with -")
    p.add_argument("--quiet", action="store_true", help="print only the final result")
    p.add_argument("--rows", type=int, default=60, metavar="N",
                   help="at most N candidates per table, timed ones fastest first (default 60; 0: every row)")


def add_interpreter_args(p: argparse.ArgumentParser) -> None:
    """``--allow-slow``: the options of a command that runs the candidates in Triton's CPU interpreter without a GPU."""
    from tritune.verify.estimate import LIMIT_S

    p.add_argument(
        "--allow-slow", action="store_true",
        help=f"without a GPU, run even a key that Triton's CPU interpreter is estimated to need more than {LIMIT_S:g} s "
        "for (without it such a run stops before it starts, in one line that names a smaller workload or key)",
    )  # fmt: skip


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_keys(specs: list[str] | None) -> list[dict[str, Any]] | None:
    """``["n=4096", "M=128,N=64"]`` -> ``[{"n": 4096}, {"M": 128, "N": 64}]``."""
    if not specs:
        return None
    keys = []
    for spec in specs:
        key: dict[str, Any] = {}
        for part in spec.split(","):
            name, eq, value = part.partition("=")
            if not eq or not name.strip():
                raise TrituneError(f"--key {spec!r}: expected name=value[,name=value...]")
            key[name.strip()] = parse_value(value.strip())
        keys.append(key)
    return keys


def ensure_interpreter_without_gpu() -> str | None:
    """Switch Triton's interpreter on before any workload is imported when there is no GPU; say why."""
    from tritune.device import gpu_unavailable_reason, interpreter_on

    if interpreter_on():
        return os.environ.get(INTERPRET_REASON_ENV) or gpu_unavailable_reason()
    reason = gpu_unavailable_reason()
    if reason is not None:
        os.environ["TRITON_INTERPRET"] = "1"
        # Remembered (also for worker processes) so nothing later says the *user* set TRITON_INTERPRET.
        os.environ[INTERPRET_REASON_ENV] = reason
    return reason


def load(args: argparse.Namespace) -> list[Any]:
    from tritune.workload import load_workloads

    return load_workloads(args.path, args.workload)


def output_path_problem(option: str, value: str, *, directory: bool = False) -> str | None:
    """Why ``value`` cannot receive the output of ``option`` (checked before any work starts), or ``None``.

    The parent folder must exist and be writable; a file output must be one :func:`tritune.paths.write_output`
    may replace (not a symlink, a directory, a device or an existing source file such as ``.py``); a folder
    output must be a real folder (not a symlink), or not exist yet.
    """
    p = Path(value)
    if directory:
        if p.is_symlink():
            return f"{option} {value}: is a symlink; outputs never follow one: give a real folder"
        if p.exists() and not p.is_dir():
            return f"{option} {value}: exists and is not a directory; give a folder for the output"
        if p.is_dir():
            return None if os.access(p, os.W_OK | os.X_OK) else f"{option} {value}: folder is not writable"
    else:
        problem = output_problem(p)
        if problem is not None:
            return f"{option} {problem}"
        if p.exists() and not os.access(p, os.W_OK):
            return f"{option} {value}: the file exists and is not writable"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        return f"{option} {value}: folder {parent} does not exist; create it first (mkdir -p {parent})"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {value}: folder {parent} is not writable; choose another place"
    return None


def option_problem(args: argparse.Namespace) -> str | None:
    """A bad number among the options commands share (``--rows``, ``--compile-timeout``), or None."""
    rows = getattr(args, "rows", None)
    if rows is not None and rows < 0:
        return f"--rows must be 0 (every row) or a positive number of rows, got {rows}"
    timeout = getattr(args, "compile_timeout", None)
    if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
        return f"--compile-timeout must be positive (a number of seconds), got {timeout:g}"
    return None


def check_outputs(args: argparse.Namespace, *options: str) -> str | None:
    """The first problem with the shared options (:func:`option_problem`), then with the output paths among
    ``options`` (``"json"``, ``"record"``...) in ``args``."""
    problem = option_problem(args)
    if problem is not None:
        return problem
    for name in options:
        value = getattr(args, name, None)
        if not value or (name == "json" and value == "-"):
            continue
        problem = output_path_problem("--" + name.replace("_", "-"), value)
        if problem is not None:
            return problem
    return None


def emit_json(args: argparse.Namespace, payload: str) -> bool:
    """Write ``payload`` where ``--json`` says; ``False`` (after one line on stderr) when that failed."""
    if not getattr(args, "json", None):
        return True
    if args.json == "-":
        sys.stdout.write(payload + "\n")
        return True
    try:
        write_output(args.json, payload + "\n")
    except OSError as e:
        # The path passed the checks made before the work, yet the write failed: keep the work anyway.
        import tempfile

        fd, kept = tempfile.mkstemp(prefix="tritune-result-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(payload + "\n")
        print(
            f"tritune: error: --json {args.json}: could not write the result ({e.strerror or e}); "
            f"it was saved to {kept} instead",
            file=sys.stderr,
        )
        return False
    return True


def fail_usage(message: str) -> int:
    """One line on stderr (data in ``message``, such as a kernel name from a file, shown escaped); exit code 2."""
    print(f"tritune: error: {printable(message, lines=True)}", file=sys.stderr)
    return EXIT_USAGE


def out_stream(args: argparse.Namespace) -> Any:
    """Where the human-readable result goes: stderr when JSON takes stdout, else stdout."""
    return sys.stderr if getattr(args, "json", None) == "-" else sys.stdout

"""Argument helpers shared by the commands: workload loading, key parsing, JSON output, exit codes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tritune.errors import TrituneError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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
        return gpu_unavailable_reason()
    reason = gpu_unavailable_reason()
    if reason is not None:
        os.environ["TRITON_INTERPRET"] = "1"
    return reason


def load(args: argparse.Namespace) -> list[Any]:
    from tritune.workload import load_workloads

    return load_workloads(args.path, args.workload)


def emit_json(args: argparse.Namespace, payload: str) -> None:
    if not getattr(args, "json", None):
        return
    if args.json == "-":
        sys.stdout.write(payload + "\n")
    else:
        with open(args.json, "w") as f:
            f.write(payload + "\n")


def fail_usage(message: str) -> int:
    print(f"tritune: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def out_stream(args: argparse.Namespace) -> Any:
    """Where the human-readable result goes: stderr when JSON takes stdout, else stdout."""
    return sys.stderr if getattr(args, "json", None) == "-" else sys.stdout

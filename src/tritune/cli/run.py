"""``tritune run SCRIPT [ARGS...]``: run a Python script (or ``-m module``) with Triton's autotuner switched to
tritune's engine, so a library that uses ``triton.autotune`` or subclasses ``triton.runtime.Autotuner`` is
tuned by tritune without being edited. The script sees ``sys.argv = [SCRIPT, *ARGS]``, as under ``python``."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a Python script with triton.autotune switched to tritune's engine",
        description="Run SCRIPT (or -m MODULE) as `python` would, after tritune.patch_triton(): triton.autotune "
        "and triton.runtime.Autotuner use tritune's engine (store, screen, race, fast dispatch) for everything "
        "the script imports. Exit status: the script's own; 2 when SCRIPT cannot be found (a directory runs its __main__.py, as with python).",
    )
    p.add_argument("-m", dest="module", action="store_true", help="SCRIPT names a module, as in python -m")
    p.add_argument("script", help="a Python file, or a module name with -m")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def run(args: argparse.Namespace) -> int:
    from tritune.api import patch_triton

    script = Path(args.script)
    if not args.module and script.is_dir() and not (script / "__main__.py").is_file():
        print(f"tritune run: {args.script}: is a directory without a __main__.py; pass the Python file to run",
              file=sys.stderr)  # fmt: skip
        return 2
    if not args.module and not script.exists():
        print(f"tritune run: {args.script}: no such file (to run a module, use `tritune run -m NAME`)",
              file=sys.stderr)  # fmt: skip
        return 2
    patch_triton()
    old_argv = sys.argv
    sys.argv = [args.script, *args.args]
    try:
        if args.module:
            runpy.run_module(args.script, run_name="__main__", alter_sys=True)
        else:
            # as `python PATH`: a script's folder, or the directory itself when it holds a __main__.py
            sys.path.insert(0, str(script.resolve() if script.is_dir() else script.resolve().parent))
            runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv = old_argv
    return 0

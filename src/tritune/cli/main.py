"""``tritune`` command line: one sub-command per module in :mod:`tritune.cli`.

Each command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Modules are imported
only when their command runs, so ``tritune --help`` stays fast and a broken optional extra breaks only
its own command. Exit codes: 0 success, 1 a candidate failed or a target was missed, 2 usage errors
and files that cannot be loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence

#: command name -> module under tritune.cli that implements it.
COMMANDS: dict[str, str] = {
    "verify": "tritune.cli.verify",
    "screen": "tritune.cli.screen",
    "tune": "tritune.cli.tune",
    "cache": "tritune.cli.cache",
    "simulate": "tritune.cli.simulate",
    "report": "tritune.cli.report",
    "run": "tritune.cli.run",
    "pin": "tritune.cli.pin",
}


def build_parser() -> argparse.ArgumentParser:
    from tritune import __version__

    parser = argparse.ArgumentParser(
        prog="tritune",
        description="Screen, verify, tune and report on Triton kernel configurations.",
    )
    parser.add_argument("--version", action="version", version=f"tritune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for modname in COMMANDS.values():
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name == modname:
                continue  # command not built into this installation
            raise
        mod.add_parser(sub)
    return parser


#: Triton 3.9 warns in every process that compiles while TRITON_DEFAULT_FP_FUSION is unset. tritune keeps
#: Triton's default either way, so its commands do not repeat that notice (nor do their worker processes).
FP_FUSION_NOTICE = "TRITON_DEFAULT_FP_FUSION is unset"


def silence_triton_notices() -> None:
    warnings.filterwarnings("ignore", message=FP_FUSION_NOTICE, category=UserWarning)
    entry = f"ignore:{FP_FUSION_NOTICE}:UserWarning"
    current = os.environ.get("PYTHONWARNINGS", "")
    if entry not in current:
        os.environ["PYTHONWARNINGS"] = f"{current},{entry}" if current else entry


class Stopped(BaseException):
    """A termination signal (SIGTERM, SIGHUP), raised where the command is, as Ctrl-C raises KeyboardInterrupt:
    every ``with`` block unwinds, so worker services kill their workers and what those started."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    for s in STOP_SIGNALS:  # a second signal during the unwinding ends the process at once
        signal.signal(s, signal.SIG_DFL)
    raise Stopped(signum)


#: The signals that end a command the way Ctrl-C does (``timeout`` sends SIGTERM; a closed terminal SIGHUP).
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within: :data:`STOP_SIGNALS` raise :class:`Stopped` (main thread only; elsewhere nothing changes). The
    handlers found on entry are restored on exit, so a caller of :func:`main` keeps its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s, h in before.items():
        if h is signal.SIG_DFL:
            signal.signal(s, _stop)
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    silence_triton_notices()
    parser = build_parser()
    args = parser.parse_args(argv)
    mod = importlib.import_module(COMMANDS[args.command])
    try:
        with stop_signals_raise():
            return int(mod.run(args))
    except KeyboardInterrupt:
        print("tritune: interrupted", file=sys.stderr)
        return 130
    except Stopped as e:
        print(f"tritune: stopped by {signal.Signals(e.signum).name}", file=sys.stderr)
        return 128 + e.signum


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

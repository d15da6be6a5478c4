"""``tritune cache ls | show KERNEL | export FILE | import FILE | clear [--kernel NAME] | check``.

Every action takes --store PATH (default: $TRITUNE_STORE, else the user cache dir). The reading actions
(ls, show, export, check) open the store read-only and never create or change a file: a missing one reads
as empty. clear asks first (--yes skips the question; without a terminal it refuses). Piped output is not
wrapped. Exit codes: 0 ok, 1 when check found problems, 2 for usage errors, an unsafe or corrupt store, or
an import file that does not match the schema.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tritune.cli.common import EXIT_FAILED, EXIT_OK, fail_usage, output_path_problem
from tritune.errors import StoreError
from tritune.terminal import printable


def add_parser(sub: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store", metavar="PATH", default=argparse.SUPPRESS,
        help="the store file (default: $TRITUNE_STORE, else the user cache dir)",
    )  # fmt: skip
    p = sub.add_parser(
        "cache",
        help="list, show, export, import, clear and check the tuning store",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("--store", metavar="PATH", default=None, help=argparse.SUPPRESS)
    cmds = p.add_subparsers(dest="cache_command", metavar="ACTION")
    cmds.required = True
    cmds.add_parser("ls", parents=[common], help="one line per kernel: keys, winners, candidate timings")
    show = cmds.add_parser("show", parents=[common], help="every key of one kernel: buckets, device, winner")
    show.add_argument("kernel", metavar="KERNEL")
    show.add_argument("--candidates", action="store_true", help="also list every candidate's status and time")
    exp = cmds.add_parser("export", parents=[common], help="write tritune.store/1 JSON ('-' for stdout)")
    exp.add_argument("file", metavar="FILE")
    exp.add_argument("--kernel", metavar="NAME", default=None, help="only this kernel's entries")
    imp = cmds.add_parser("import", parents=[common], help="validate a tritune.store/1 file and add it")
    imp.add_argument("file", metavar="FILE")
    clr = cmds.add_parser("clear", parents=[common], help="remove every entry, or one kernel's")
    clr.add_argument("--kernel", metavar="NAME", default=None, help="only this kernel's entries")
    clr.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    cmds.add_parser("check", parents=[common], help="integrity and consistency check (exit 1 on problems)")


def _console() -> Any:
    """A rich console; when output is not a terminal, wide enough that no cell wraps mid-word."""
    from rich.console import Console

    con = Console(highlight=False)
    if not con.is_terminal:
        con = Console(highlight=False, width=100_000)
    return con


def _t(value: object) -> Any:
    """A table cell or line from data (a kernel name, a key, a reason, a path): rich ``Text``, so neither its
    ``[...]`` markup nor its control characters (escaped by :func:`tritune.terminal.printable`) take effect."""
    from rich.text import Text

    return Text(printable(value))


def _path(args: argparse.Namespace) -> Path:
    from tritune.store import default_store_path

    return Path(args.store).expanduser() if args.store else default_store_path()


def _warn(message: str) -> None:
    print(f"tritune: warning: {printable(message)}", file=sys.stderr)


def _open(path: Path, *, write: bool) -> Any:
    """The store at ``path``; for reading, opened read-only (an empty one when there is no file yet): a damaged
    row is skipped with one line on stderr, and so is said what a read-only open cannot show (a left ``-wal``)."""
    from tritune.store import SQLiteStore, open_store

    if write:
        return SQLiteStore(path, create=True)
    store = open_store(path, read_only=True)
    if isinstance(store, SQLiteStore):
        store.on_damaged = _warn
        if store.notice:
            _warn(store.notice)
    return store


def _ms(t: float | None) -> str:
    return "—" if t is None else f"{t:.4f}"


def run(args: argparse.Namespace) -> int:
    path = _path(args)
    action = args.cache_command
    if action == "check":
        return _check(path)
    if action == "import":  # validate the file before the store is created: a bad one leaves no new store
        from tritune.store.exchange import load_export
        from tritune.store.safety import safe_store_path

        try:
            safe_store_path(path)  # but an unusable store path is still the first thing said
            args.writes = load_export(args.file)
        except StoreError as e:
            return fail_usage(str(e))
    try:
        store = _open(path, write=action == "import")
    except StoreError as e:
        return fail_usage(str(e))
    except OSError as e:
        return fail_usage(f"cannot open the store {path}: {e.strerror or e}")
    try:
        return int(_ACTIONS[action](store, path, args))
    except StoreError as e:  # includes StoreSchemaError for a bad import file
        return fail_usage(str(e))
    except OSError as e:
        return fail_usage(f"{getattr(e, 'filename', None) or path}: {e.strerror or e}")
    finally:
        store.close()


def _ls(store: Any, path: Path, args: argparse.Namespace) -> int:
    from rich.table import Table

    kernels = store.kernels()
    con = _console()
    if not kernels:
        con.print(_t(f"no entries in {path}"))
        return EXIT_OK
    table = Table(title=_t(f"tuning store {path}"))
    for col in ("kernel", "keys", "winners", "candidates"):
        table.add_column(col, justify="left" if col == "kernel" else "right", overflow="fold")
    for k in kernels:
        table.add_row(_t(k.kernel), str(k.entries), str(k.winners), str(k.candidates))
    con.print(table)
    return EXIT_OK


def _show(store: Any, path: Path, args: argparse.Namespace) -> int:
    from rich.table import Table

    entries = store.entries(args.kernel)
    if not entries:
        known = ", ".join(k.kernel for k in store.kernels()) or "none"
        return fail_usage(f"no entries for kernel {args.kernel!r} in {path}; kernels there: {known}")
    con = _console()
    table = Table(title=_t(f"{args.kernel} in {path}"))
    for col in ("key (bucket: values)", "dtypes", "device", "triton", "winner", "ms", "timed", "ties"):
        table.add_column(col, justify="right" if col in ("ms", "timed") else "left", overflow="fold")
    for e in entries:
        k, w = e.key, e.winner
        table.add_row(
            _t(k.describe_key() or "(no key)"), _t(", ".join(d.removeprefix("torch.") for d in k.dtypes)),
            _t(f"{k.device} ({k.capability})"), _t(k.triton_version), _t("—" if w is None else w.config.id),
            _ms(None if w is None else w.time_ms), f"{e.n_measured}/{e.n_candidates}",
            _t("" if w is None else "; ".join(c.id for c in w.ties)),
        )  # fmt: skip
    con.print(table)
    if args.candidates:
        for e in entries:
            sub = Table(title=_t(f"{args.kernel} at {e.key.describe_key() or '(no key)'} on {e.key.device}"))
            for col in ("config", "status", "ms", "reason"):
                sub.add_column(col, justify="right" if col == "ms" else "left", overflow="fold")
            for c in store.candidates(e.key):
                mark = " *" if e.winner is not None and c.config == e.winner.config else ""
                sub.add_row(_t(c.config.id + mark), c.status.value, _ms(c.time_ms), _t(c.reason or ""))
            con.print(sub)
    return EXIT_OK


def _export(store: Any, path: Path, args: argparse.Namespace) -> int:
    if args.file == "-":
        store.export(sys.stdout, kernel=args.kernel)
        return EXIT_OK
    problem = output_path_problem("cache export", args.file)
    if problem is not None:
        return fail_usage(problem)
    n = store.export(args.file, kernel=args.kernel)
    _console().print(_t(f"exported {n} entries from {path} to {args.file}"))
    return EXIT_OK


def _import(store: Any, path: Path, args: argparse.Namespace) -> int:
    """Record the writes (validated in run(), before the store was opened), then read them back through a new
    read-only open and check the store: an import into a damaged store is never reported as a success."""
    store.record_many(args.writes)
    store.close()
    with _open(path, write=False) as reader:
        problems = reader.unreadable(args.writes)
        damage = [] if problems else reader.check()
    n = len(args.writes)
    if problems:
        return fail_usage(
            f"{path}: the import from {args.file} was written, but {len(problems)} of its {n} entries cannot be "
            f"read back ({problems[0]}); the store is damaged: `tritune cache check --store {path}` says where"
        )
    if damage:
        return fail_usage(
            f"{path}: the {n} entries of {args.file} were written and read back, but the store is damaged "
            f"({damage[0]}); `tritune cache check --store {path}` lists every problem"
        )
    _console().print(_t(f"imported {n} entries from {args.file} into {path}"))
    return EXIT_OK


def _clear(store: Any, path: Path, args: argparse.Namespace) -> int:
    """Count what would go (from the read-only view), confirm, then reopen for writing and remove it."""
    what = f"kernel {args.kernel!r}" if args.kernel else "all kernels"
    n = len(store.entries(args.kernel))
    if args.kernel and n == 0:
        known = ", ".join(k.kernel for k in store.kernels()) or "none"
        return fail_usage(
            f"nothing to clear: no entries for kernel {args.kernel!r} in {path}; kernels there: {known}"
        )
    if n == 0:
        _console().print(_t(f"nothing to clear: no entries in {path}"))
        return EXIT_OK
    if not args.yes:
        question = f"remove {n} entries ({what}) from {path}?"
        if not sys.stdin.isatty():
            return fail_usage(
                f"{question} stdin is not a terminal, so nothing was removed: pass --yes to confirm"
            )
        print(f"{printable(question)} [y/N] ", end="", flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return EXIT_FAILED
    store.close()
    with _open(path, write=True) as writer:
        n = writer.clear(args.kernel)
    _console().print(_t(f"removed {n} entries ({what}) from {path}"))
    return EXIT_OK


def _check(path: Path) -> int:
    from tritune.store import check_path

    con = _console()
    if not path.exists() and not path.is_symlink():
        con.print(_t(f"ok: no store at {path} yet"))
        return EXIT_OK
    problems = check_path(path)
    if problems:
        for p in problems:
            con.print("[red]problem[/red]: ", _t(p), sep="", markup=True)
        con.print(_t(f"{len(problems)} problem(s) in {path}"))
        return EXIT_FAILED
    with _open(path, write=False) as store:
        n = len(store.entries())
    con.print(_t(f"ok: {path} ({n} entries)"))
    return EXIT_OK


_ACTIONS = {"ls": _ls, "show": _show, "export": _export, "import": _import, "clear": _clear}

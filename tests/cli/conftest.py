from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Variables that decide what ``import triton`` or ``import tritune`` does: a command whose environment sets one of
#: them runs in a fresh ``python -m tritune`` (its imports see them), never in a fork of the warm server.
IMPORT_TIME = ("TRITON_", "TRITUNE_PATCH_TRITON", "TRITUNE_RECORD", "PYTHON")

#: The warm server: a Python process that imported torch, triton and tritune's CLI once, and forks one child per
#: command. The child sets the command's working directory and environment, then runs ``tritune.cli.main.main``
#: exactly as ``python -m tritune`` would after its imports; its output goes to files the server reads back. Each
#: command starts from the server's state after its imports, so no command sees another's.
SERVER = r"""
import json, os, sys
import torch, triton
import tritune.cli.main as cli
for line in sys.stdin:
    req = json.loads(line)
    out, err = req["out"], req["err"]
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            fo, fe = os.open(out, os.O_WRONLY | os.O_TRUNC), os.open(err, os.O_WRONLY | os.O_TRUNC)
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            sys.stdout = os.fdopen(1, "w", buffering=1)
            sys.stderr = os.fdopen(2, "w", buffering=1)
            sys.argv = ["tritune", *req["argv"]]
            try:
                code = cli.main(req["argv"])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.stdout.write(json.dumps({"code": code}) + "\n")
    sys.stdout.flush()
"""


class _Server:
    """One warm server per test session (module docstring above); commands go to it one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, text=True, env=_base_env(), cwd=ROOT)  # fmt: skip
            with tempfile.NamedTemporaryFile(delete=False) as o, tempfile.NamedTemporaryFile(delete=False) as e:
                out, err = o.name, e.name
            try:
                assert self._proc.stdin is not None and self._proc.stdout is not None
                self._proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "env": env, "out": out,
                                                   "err": err}) + "\n")  # fmt: skip
                self._proc.stdin.flush()
                reply = json.loads(self._proc.stdout.readline())
                return subprocess.CompletedProcess([sys.executable, "-m", "tritune", *argv], reply["code"],
                                                   Path(out).read_text(), Path(err).read_text())  # fmt: skip
            finally:
                os.unlink(out)
                os.unlink(err)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=30)
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None


_SERVER = _Server()


def _base_env() -> dict[str, str]:
    """The environment a user's shell gives ``python -m tritune``: the test run's, without the variables its
    conftest sets for in-process tests."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION", "TRITUNE_INTERPRET_REASON")}
    base["PYTHONPATH"] = str(ROOT / "src")
    return base


def run_tritune(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m tritune ARGV`` as a user runs it: TRITON_INTERPRET and TRITON_DEFAULT_FP_FUSION unset. Run in a
    fork of a warm server that did the imports once, unless ``env`` sets a variable that changes what the imports do
    (then in a fresh process, as before)."""
    base = _base_env()
    base.update(env or {})
    if any(k.startswith(IMPORT_TIME) for k in (env or {})):
        return subprocess.run([sys.executable, "-m", "tritune", *argv], capture_output=True, text=True,
                              cwd=cwd or ROOT, env=base, timeout=timeout, check=False)  # fmt: skip
    return _SERVER.run(list(argv), cwd or ROOT, base, timeout)


@pytest.fixture
def tritune_cli() -> Any:
    return run_tritune


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _SERVER.close()

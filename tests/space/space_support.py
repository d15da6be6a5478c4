"""Helpers of the space tests: the call a kernel sees at its first launch, and source lines of the test kernels."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def line_of(fn: Any, text: str) -> int:
    """The file line of the first source line of ``fn`` (a jitted kernel) that contains ``text``."""
    py = getattr(fn, "fn", fn)
    while hasattr(py, "fn"):
        py = py.fn
    lines, start = inspect.getsourcelines(py)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} is not in {py.__name__}")


def first_call(workload: Any, key: dict[str, Any]) -> tuple[list[str], dict[str, int], list[Any], dict[str, Any]]:
    """What a kernel's first call tells the derivation: the names it binds (positional, then keyword), the int
    values among them (the key's sizes and the passed constexprs), and the arguments themselves."""
    from tritune.adapters.kernel import KernelInfo

    info = KernelInfo.of(workload.kernel)
    args = workload.make_args(key, "cpu")
    kwargs = workload.caller_kwargs(key)
    passed = [*info.arg_names[: len(args)], *kwargs]
    values = dict(zip(info.arg_names, args))
    values.update(kwargs)
    sizes = {n: v for n, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
    return passed, sizes, list(args), dict(kwargs)

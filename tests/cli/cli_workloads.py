"""Workload files for the CLI tests, written into a temporary folder and run as a user would run them."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

HEADER = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import torch, triton
import tritune
from kernels import elementwise_args, scale_kernel, wrong_value_kernel
"""


def workload_file(tmp_path: Path, body: str, name: str = "w.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def scale_workload(**fields: str) -> str:
    """A correct workload over scale_kernel, with some of its fields replaced by source text."""
    f = {
        "configs": "[tritune.Config({'BLOCK': b}, num_warps=4) for b in (256, 512)]",
        "args": "elementwise_args",
        "grid": "lambda meta, key: (triton.cdiv(key['n'], meta['BLOCK']),)",
        "oracle": "lambda args: [args[0] * 2.0]",
        "keys": "[{'n': 1000}]",
        "kernel": "scale_kernel",
    }
    f.update(fields)
    inner = ", ".join(f"{k}={v}" for k, v in f.items())
    return f"\nw = tritune.Workload(name='w', outputs=[1], {inner})\n"

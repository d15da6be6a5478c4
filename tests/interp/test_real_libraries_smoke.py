"""benchmarks/real_libraries.py on CPU: its --cpu-smoke mode, Triton's engine, then both engines.

Triton's side runs under the interpreter with the harness's FAKE timer (Triton's autotuner cannot time
on CPU). tritune's side needs ``tritune.patch_triton()`` (the compat branch): without it the harness
must stop with a message that says so; with it, both engines must run and agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tritune

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(ROOT / "benchmarks" / "real_libraries.py"), "--cpu-smoke", "--out", str(tmp_path), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)


def test_triton_engine_runs_every_smoke_op(tmp_path: Path) -> None:
    p = _run(tmp_path, "--engines", "triton")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_total"] == 2 and summary["ops_run"]["triton"] == 2, summary
    for s in summary["ops"].values():
        assert s["triton_cold_s"] > 0 and s["triton_us"] > 0 and s["triton_dispatch_us"] > 0
    assert "| smoke_row_sum | 1/0 |" in p.stdout


def test_both_engines(tmp_path: Path) -> None:
    p = _run(tmp_path)
    if not hasattr(tritune, "patch_triton"):
        assert p.returncode == 2
        assert "no tritune.patch_triton()" in p.stderr and "compat branch" in p.stderr
        return
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_run"] == {"triton": 2, "tritune": 2}, summary
    assert summary["ops_equal"] == 2, summary

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_tritune(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m tritune ARGV`` as a user runs it: TRITON_INTERPRET and TRITON_DEFAULT_FP_FUSION unset."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION", "TRITUNE_INTERPRET_REASON")}
    base["PYTHONPATH"] = str(ROOT / "src")
    base.update(env or {})
    return subprocess.run([sys.executable, "-m", "tritune", *argv], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=base, timeout=timeout, check=False)


@pytest.fixture
def tritune_cli():
    return run_tritune

"""A GPU-size key under the CPU interpreter is announced up front, with its rough duration and a smaller key."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tritune.verify.estimate import ANNOUNCE_ABOVE_S, announcements, estimate

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))


def test_layernorm_gpu_key_is_announced_and_the_small_one_is_not():
    from layernorm import layernorm, layernorm_small

    big, = estimate(layernorm, layernorm.keys)
    small, = estimate(layernorm_small, layernorm_small.keys)
    assert big.elements == 2 * 4096 * 8192 + 2 * 8192 and big.candidates == 180
    assert big.seconds > 3600 and small.seconds < ANNOUNCE_ABOVE_S
    lines = announcements([layernorm, layernorm_small], None)
    assert len(lines) == 1
    assert "layernorm at M=4096,N=8192" in lines[0] and "hours" in lines[0]
    assert "--workload layernorm_small" in lines[0]
    # With only the big workload, the hint names the key to shrink.
    assert "--key M=<smaller>,N=<smaller>" in announcements([layernorm], None)[0]


def test_verify_without_workload_says_so_before_any_candidate_runs():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITUNE_INTERPRET_REASON")}
    env["PYTHONPATH"] = str(ROOT / "src")
    p = subprocess.Popen([sys.executable, "-m", "tritune", "verify", "examples/layernorm.py"], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 300
        assert p.stderr is not None
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "verifying" in line:
                break
    finally:
        p.kill()
        p.wait()
        if p.stderr is not None:
            p.stderr.close()
    text = "".join(seen)
    assert seen and seen[0].startswith("tritune: warning: layernorm at M=4096,N=8192"), text
    assert "--workload layernorm_small" in seen[0] and "hours" in seen[0]

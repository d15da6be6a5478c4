"""GPU: an illegal address in one candidate costs that candidate only; the others are still checked and
timed (in a fresh process, since the tuning process's CUDA context is lost). Skips at run time without a GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritune.device import gpu_unavailable_reason

HERE = Path(__file__).resolve().parent
SCRIPT = """
import json, sys
from tritune.engine.options import TuneOptions
from tritune.offline.tune import tune
from tritune.workload import load_workloads
(w,) = load_workloads(sys.argv[1])
res = tune([w], ceilings=False, options=TuneOptions(jobs=4), group=None)
(e,) = res.workloads
print(json.dumps({"candidates": [[c.config.kwargs["WILD"], c.status.value, c.reason] for c in e.candidates],
                  "winner": e.extra["winner"]}))
"""


@pytest.mark.gpu
def test_an_illegal_address_costs_one_candidate_not_the_tuning(tmp_path: Path) -> None:
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parents[1] / "src"), env.get("PYTHONPATH", "")])
    # In a process of its own: the illegal address loses that process's CUDA context, not pytest's.
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(HERE / "sticky_workload.py")], env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    wild = [c for c in got["candidates"] if c[0] == 1]
    good = [c for c in got["candidates"] if c[0] == 0]
    assert len(wild) == 1 and wild[0][1] == "launch_failed" and "sticky CUDA error" in wild[0][2]
    assert [c[1] for c in good] == ["measured"] * 3, good
    assert got["winner"] is not None and got["winner"]["kwargs"]["WILD"] == 0

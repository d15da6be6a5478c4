"""GPU: a Workload whose kernel takes host TensorDescriptors, shaped per config by its ``pre_hook``, is compiled in
the engine's workers, loaded, checked against its oracle and timed like any other; the device-descriptor kernel
it shares its tile loop with too. Skips at run time without a GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritune.device import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import matmul_tma_wide as wide
import tritune
from tritune.engine.options import TuneOptions
from tritune.offline.tune import tune

cfgs = [tritune.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8, "EPILOGUE_SUBTILE": epi,
                        "WARP_SPECIALIZE": 0}, num_warps=8, num_stages=3) for bn in (128, 256) for epi in (1, 2)]
out = {}
for host in (True, False):
    src = wide.matmul_tma_wide_host if host else wide.matmul_tma_wide
    w = tritune.Workload(name=src.name + "_four", kernel=src.kernel, configs=cfgs, args=src.args, grid=src.grid,
                         outputs=[2], oracle=src.oracle, pre_hook=src.pre_hook, keys=[{"M": 1024, "N": 1024, "K": 1024}],
                         atol=src.atol, rtol=src.rtol)
    res = tune([w], ceilings=False, options=TuneOptions(jobs=4), group=None)
    (e,) = res.workloads
    out["host" if host else "device"] = {"statuses": [[c.config.id, c.status.value, c.reason] for c in e.candidates],
                                         "winner": e.extra["winner"]}
print(json.dumps(out))
"""


@pytest.mark.gpu
def test_host_descriptor_configs_compile_check_and_time_through_the_workload_hook() -> None:
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "examples")], env=env, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for kind in ("host", "device"):
        assert [s[1] for s in got[kind]["statuses"]] == ["measured"] * 4, got[kind]["statuses"]
        assert got[kind]["winner"] is not None

"""numerics.py on CPU: its library-op mode end to end under the interpreter.

The ops are real_libraries.py's smoke kernels, tuned under ``tritune.patch_triton()`` in fresh processes. With no
GPU nothing is timed by tritune (each run keeps the first config), and the comparison's per-call times come from
real_libraries' FAKE CPU timer: only the script's steps and its bookkeeping are under test, not the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_library_ops_run_in_both_modes_and_compare_in_a_process_of_their_own(tmp_path: Path) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "NUMERICS_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "numerics.py"), "--out", str(tmp_path), "--runs", "2",
                        "--ops", "lib:smoke_row_sum,lib:smoke_axpy", "--shared-triton-cache"],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    summary = json.loads((tmp_path / "numerics.json").read_text())
    assert summary["runs"] == {"any": 2, "exact": 2} and summary["shared_triton_cache"]
    for op in ("lib:smoke_row_sum", "lib:smoke_axpy"):
        row = summary["ops"][op]
        assert row["any_distinct"] == row["exact_distinct"] == 1 and row["exact_is_reference"]
        assert set(row["timing"]["ms"]) == {"exact", "any", "reference"}
    assert "exact/any per call: median" in p.stdout

    # a later call resumes: its run is numbered after the earlier two and every run counts
    more = tmp_path / "more"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "numerics.py"), "--out", str(more), "--runs", "1",
                        "--ops", "lib:smoke_row_sum,lib:smoke_axpy", "--shared-triton-cache", "--resume",
                        str(tmp_path)], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    summary = json.loads((more / "numerics.json").read_text())
    assert summary["runs"] == {"any": 3, "exact": 3} and summary["resumed"] == {"any": 2, "exact": 2}
    assert sorted(f.name for f in more.glob("*_[0-9].json")) == [f"{m}_{i}.json" for m in ("any", "exact")
                                                                  for i in range(3)]  # fmt: skip
    assert summary["ops"]["lib:smoke_axpy"]["exact_distinct"] == 1
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "numerics.py"), "--out", str(tmp_path / "x"),
                        "--runs", "1", "--ops", "lib:smoke_row_sum,lib:mm", "--resume", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)  # fmt: skip
    assert p.returncode != 0 and "any_0.json has no run of lib:mm" in p.stderr
    # each run records its machine; runs from another machine are refused before anything runs
    run0 = json.loads((tmp_path / "any_0.json").read_text())
    assert set(run0["_machine"]) == {"gpu", "driver", "torch", "triton"} and run0["_machine"]["torch"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for f in tmp_path.glob("*_[0-9].json"):
        run = json.loads(f.read_text())
        run["_machine"]["gpu"] = "NVIDIA H100 80GB HBM3"
        (elsewhere / f.name).write_text(json.dumps(run))
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "numerics.py"), "--out", str(tmp_path / "y"),
                        "--runs", "1", "--ops", "lib:smoke_row_sum,lib:smoke_axpy", "--resume", str(elsewhere)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)  # fmt: skip
    assert p.returncode != 0 and "ran elsewhere (gpu 'NVIDIA H100 80GB HBM3' there, None here)" in p.stderr, p.stderr
    assert not list((tmp_path / "y").glob("*_[0-9].json"))  # refused before any run

"""Without a GPU, a check the CPU interpreter would need minutes or hours for stops before it starts, in one line
that names what to run instead; one slower than estimated stops early; --allow-slow runs it, said up front."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.verify import estimate as est

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
GELU = str(ROOT / "examples" / "gelu.py")


def test_layernorm_gpu_key_is_refused_naming_the_small_workload():
    from layernorm import layernorm, layernorm_small

    big, = est.estimate(layernorm, layernorm.keys)
    small, = est.estimate(layernorm_small, layernorm_small.keys)
    assert big.elements == 2 * 4096 * 8192 + 2 * 8192 and big.candidates == 180
    assert big.runs == 12  # ROWS x BLOCK_N: the interpreter ignores num_warps and num_stages
    assert big.seconds > 1800 and small.seconds < est.LIMIT_S
    line = est.too_slow([layernorm, layernorm_small], None)
    assert line is not None and "layernorm at M=4096,N=8192" in line and "67 minutes" in line
    assert "use --workload layernorm_small" in line and "--allow-slow" in line
    assert est.too_slow([layernorm_small], None) is None
    # With only the big workload, the hint names the key to shrink.
    assert "--key M=<smaller>,N=<smaller>" in (est.too_slow([layernorm], None) or "")


def test_a_workload_with_one_quick_key_is_pointed_at_it():
    from rmsnorm import rmsnorm

    line = est.too_slow([rmsnorm], None)
    assert line is not None and "rmsnorm at rows=1024,cols=4096" in line
    assert "use its key --key rows=64,cols=2048" in line


def test_too_many_candidates_for_any_key_points_at_a_gpu_or_the_screen():
    import tritune
    from kernels import elementwise_args, scale_kernel

    many = tritune.Workload(
        name="many", kernel=scale_kernel, configs=[tritune.Config({"BLOCK": 2**b, "X": i}) for b in range(4, 8)
                                                   for i in range(400)],
        args=elementwise_args, grid=lambda meta, key: (1,), keys=[{"n": 4096}],
    )  # fmt: skip
    line = est.too_slow([many], None)
    assert line is not None and "on a GPU, or only their legality with tritune screen" in line


def test_verify_of_a_gpu_size_file_is_one_line_and_exit_2_before_any_candidate_runs(capsys):
    t0 = time.monotonic()
    assert main(["verify", str(ROOT / "examples" / "layernorm.py")]) == 2
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tritune: error: layernorm at M=4096,N=8192"), err
    assert "--workload layernorm_small" in err[0]


def test_tune_without_a_gpu_stops_the_same_way(capsys):
    assert main(["tune", str(ROOT / "examples" / "layernorm.py"), "--no-store"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--workload layernorm_small" in err[0], err


def test_allow_slow_runs_it_and_says_so_first_even_when_quiet(monkeypatch, capsys):
    monkeypatch.setattr(est, "LIMIT_S", 0.0)
    assert main(["verify", GELU, "--key", "n=64", "--quiet"]) == 2
    assert main(["verify", GELU, "--key", "n=64", "--quiet", "--allow-slow"]) == 0
    err = capsys.readouterr().err
    assert "tritune: warning: gelu at n=64" in err and "--quiet: nothing more is printed until it ends" in err


def test_a_run_slower_than_its_estimate_stops_early(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(est.time, "monotonic", lambda: now[0])
    clock = est.RunClock()
    clock.start("w", {"n": 1}, 100)
    now[0] = 5.0
    clock.step(1)  # too early to project
    now[0] = 12.0
    with pytest.raises(est.TooSlowError, match=r"w at n=1: stopped after 12 s of 2 of 100 candidates.*--allow-slow"):
        clock.step(2)  # 6 s a candidate: ~10 minutes


def test_verify_stops_when_the_clock_says_so(monkeypatch, capsys):
    class Stop:
        def start(self, workload, key, total):
            pass

        def step(self, done):
            raise est.TooSlowError("too slow here")

    import tritune.cli.verify as cli_verify

    monkeypatch.setattr(cli_verify, "interpreter_check", lambda *a: Stop())
    assert main(["verify", GELU, "--key", "n=64"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == "tritune: error: too slow here"

"""The smaller edges: --jobs 0, --record without a GPU, a directory given as the workload, and noise."""

from __future__ import annotations

import os

import pytest

from tritune.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GELU = os.path.join(ROOT, "examples", "gelu.py")


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_tune_refuses_jobs_below_one(jobs, capsys):
    assert main(["tune", GELU, "--no-store", "--jobs", jobs]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_record_without_a_gpu_says_it_was_not_written(tmp_path, tritune_cli):
    rec = tmp_path / "land.json"
    run = tritune_cli("tune", GELU, "--no-store", "--key", "n=64", "--record", str(rec), "--quiet")
    assert run.returncode == 1, run.stderr
    assert f"--record {rec} was not written" in run.stderr and "nothing was timed" in run.stderr
    assert not rec.exists()


@pytest.mark.parametrize("command", ["verify", "screen", "tune"])
def test_a_directory_is_not_reported_as_no_such_file(tmp_path, command, capsys):
    assert main([command, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "no such file" not in err


def test_no_fp_fusion_warning_and_no_claim_that_the_user_set_the_interpreter(tritune_cli):
    run = tritune_cli("verify", GELU, "--key", "n=64")
    assert run.returncode == 0, run.stderr
    out = run.stdout + run.stderr
    assert "TRITON_DEFAULT_FP_FUSION" not in out
    assert "TRITON_INTERPRET=1 is set" not in out
    assert "no CUDA GPU driver is active" in run.stdout  # the real reason, on the timing line


def test_the_interpreter_reason_stays_true_when_the_user_did_set_it(tritune_cli):
    run = tritune_cli("verify", GELU, "--key", "n=64", env={"TRITON_INTERPRET": "1"})
    assert run.returncode == 0, run.stderr
    assert "TRITON_INTERPRET=1 is set" in run.stdout


def test_screen_progress_never_starts_at_zero(tritune_cli):
    run = tritune_cli("screen", GELU, "--key", "n=64", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    progress = [ln for ln in run.stderr.splitlines() if ln.startswith("tritune: compiling")]
    assert progress, run.stderr
    assert not any(": 0 candidates" in ln or "/0 " in ln or "unknown number" in ln for ln in progress), progress
    assert progress[0] == "tritune: compiling for sm_90: 4 candidates", progress  # the count is the first word
    assert "TRITON_DEFAULT_FP_FUSION" not in run.stderr


def test_run_of_a_directory_says_so_and_runs_one_with_main_as_python_does(tmp_path, tritune_cli):
    # In a subprocess: `tritune run` patches triton for the rest of its process, as it should.
    run = tritune_cli("run", str(tmp_path))
    assert run.returncode == 2
    assert "is a directory" in run.stderr and "__main__.py" in run.stderr and "no such file" not in run.stderr
    (tmp_path / "__main__.py").write_text("import sys\nsys.exit(7)\n")
    assert tritune_cli("run", str(tmp_path)).returncode == 7  # `python DIR` runs DIR/__main__.py; so does this


@pytest.mark.parametrize("command", ["verify", "screen", "tune"])
def test_a_users_error_is_the_last_line_not_followed_by_progress(tmp_path, command, capsys):
    assert main([command, str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("tritune: error:") and "is a directory" in lines[-1], lines


@pytest.mark.parametrize("command", ["screen", "tune"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_compile_timeout_that_is_no_positive_number_is_refused(command, value, capsys):
    store = ["--no-store"] if command == "tune" else []
    assert main([command, GELU, *store, "--compile-timeout", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compile-timeout must be positive" in err, err


@pytest.mark.parametrize("command", ["verify", "screen", "tune"])
def test_a_negative_row_count_is_refused(command, capsys):
    assert main([command, GELU, "--rows", "-5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rows must be 0" in err, err

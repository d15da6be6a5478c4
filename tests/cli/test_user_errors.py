"""A user's args(), oracle or grid that raises: one line and exit 2 for the workload, a candidate error otherwise."""

from __future__ import annotations

import json

import pytest
from cli_workloads import scale_workload, workload_file

BAD_ORACLE = """
def oracle(args):
    return [args[0] * undefined_name]
"""

BAD_ARGS = """
def args(key, device):
    raise RuntimeError("no data for this key")
"""

BAD_GRID_FOR_512 = """
def grid(meta, key):
    if meta["BLOCK"] == 512:
        raise ValueError("this grid cannot handle 512")
    return (triton.cdiv(key["n"], meta["BLOCK"]),)
"""


def _one_error_line(run) -> str:
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("tritune: error:")]
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr
    return lines[0]


def test_an_oracle_that_raises_is_exit_2_with_the_users_frame(tmp_path, tritune_cli):
    path = workload_file(tmp_path, BAD_ORACLE + scale_workload(oracle="oracle"))
    run = tritune_cli("verify", str(path))
    assert run.returncode == 2, run.stderr
    line = _one_error_line(run)
    assert "the oracle raised NameError" in line and "undefined_name" in line
    assert f"{path}:" in line and "in oracle" in line  # the user's own frame, file:line


def test_args_that_raise_is_exit_2_in_verify_and_tune(tmp_path, tritune_cli):
    path = workload_file(tmp_path, BAD_ARGS + scale_workload(args="args"))
    for command in ("verify", "tune"):
        run = tritune_cli(command, str(path), "--no-store" if command == "tune" else "--quiet")
        assert run.returncode == 2, (command, run.stderr)
        line = _one_error_line(run)
        assert "RuntimeError: no data for this key" in line and f"{path}:" in line and "in args" in line


def test_a_grid_that_raises_for_one_candidate_makes_that_candidate_an_error(tmp_path, tritune_cli):
    path = workload_file(tmp_path, BAD_GRID_FOR_512 + scale_workload(grid="grid"))
    out = tmp_path / "r.json"
    run = tritune_cli("verify", str(path), "--json", str(out), "--quiet")
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    cands = {c["config"]["kwargs"]["BLOCK"]: c for c in json.loads(out.read_text())["workloads"][0]["candidates"]}
    assert cands[256]["status"] == "correct"
    assert cands[512]["status"] == "error"
    assert "ValueError: this grid cannot handle 512" in cands[512]["reason"]
    assert f"{path}:" in cands[512]["reason"] and "in grid" in cands[512]["reason"]


def test_a_grid_of_neither_form_is_one_line_and_exit_2_before_any_candidate(tmp_path, tritune_cli):
    path = workload_file(tmp_path, scale_workload(grid="lambda: (1,)"))
    run = tritune_cli("verify", str(path))
    assert run.returncode == 2, run.stderr
    line = _one_error_line(run)
    assert "grid() cannot be called as grid(meta) (Triton's form) nor as grid(meta, key)" in line
    assert "verifying" not in run.stderr


def test_an_import_error_is_one_line_naming_the_users_line(tmp_path, tritune_cli):
    path = workload_file(tmp_path, "\nx = 1 / 0\n")
    run = tritune_cli("verify", str(path))
    assert run.returncode == 2
    line = _one_error_line(run)
    assert "ZeroDivisionError" in line and f"{path}:" in line


@pytest.mark.parametrize(
    ("field", "source", "said"),
    [
        ("oracle", "lambda args: None", "the oracle returned None"),
        ("args", "lambda key, device: 5", "args({n=1000}, 'cpu') returned 5"),
        ("kwargs", "lambda key: 5", "kwargs({n=1000}) returned 5"),
    ],
)
def test_a_user_function_returning_the_wrong_kind_of_value_is_exit_2(tmp_path, tritune_cli, field, source, said):
    path = workload_file(tmp_path, scale_workload(**{field: source}))
    run = tritune_cli("verify", str(path), "--quiet")
    assert run.returncode == 2, run.stderr
    line = _one_error_line(run)
    assert "workload 'w'" in line and said in line, line


def test_a_grid_returning_no_grid_makes_each_candidate_an_error_saying_so(tmp_path, tritune_cli):
    path = workload_file(tmp_path, scale_workload(grid="lambda meta, key: None"))
    out = tmp_path / "r.json"
    run = tritune_cli("verify", str(path), "--json", str(out), "--quiet")
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    for c in json.loads(out.read_text())["workloads"][0]["candidates"]:
        assert c["status"] == "error" and "grid(meta of" in c["reason"] and "returned None" in c["reason"]

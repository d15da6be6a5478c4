"""Verify with no oracle: candidates are labelled by agreement group, never as correct or incorrect."""

from __future__ import annotations

import json
import re

from cli_workloads import scale_workload, workload_file

import tritune
from tritune import Status

# wrong_value_kernel computes 2.5*x at BLOCK=1024 and 2*x otherwise; BLOCK=1024 comes FIRST here, so a
# "first candidate is the reference" rule would call the wrong one correct and the right ones incorrect.
WRONG_FIRST = scale_workload(
    kernel="wrong_value_kernel",
    configs="[tritune.Config({'BLOCK': b}, num_warps=4) for b in (1024, 256, 512)]",
    oracle="None",
)


def test_a_wrong_first_candidate_is_not_called_correct(tmp_path, tritune_cli):
    path = workload_file(tmp_path, WRONG_FIRST)
    out = tmp_path / "r.json"
    run = tritune_cli("verify", str(path), "--json", str(out))
    assert run.returncode == 1, run.stderr  # the candidates disagree: something is wrong
    w = json.loads(out.read_text())["workloads"][0]
    statuses = {c["config"]["kwargs"]["BLOCK"]: c["status"] for c in w["candidates"]}
    assert statuses == {1024: "compared", 256: "compared", 512: "compared"}
    groups = {c["config"]["kwargs"]["BLOCK"]: c["agreement_group"] for c in w["candidates"]}
    assert groups[256] == groups[512] != groups[1024]
    assert w["oracle"] is False and len(w["agreement_groups"]) == 2
    assert "compared with each other" in run.stdout and "DISAGREE" in run.stdout
    assert not re.search(r"\b(correct|incorrect)\b", run.stdout)  # no candidate is labelled either


def test_candidates_that_all_agree_exit_0_without_claiming_correctness(tmp_path, tritune_cli):
    path = workload_file(tmp_path, scale_workload(oracle="None"))
    run = tritune_cli("verify", str(path))
    assert run.returncode == 0, run.stderr + run.stdout
    assert "one agreement group" in run.stdout and "group 1 of 1" in run.stdout


def test_unwritten_output_is_incorrect_with_or_without_an_oracle():
    from kernels import elementwise_workload, half_writer_kernel

    for oracle in (True, False):
        w = elementwise_workload("half", half_writer_kernel)
        if not oracle:
            w.oracle = None
        report = tritune.verify(w)
        by_block = {c.config.kwargs["BLOCK"]: c for c in report.workloads[0].candidates}
        assert by_block[512].status is Status.INCORRECT and by_block[1024].status is Status.INCORRECT
        assert "never written" in (by_block[512].reason or "")
        assert by_block[256].status is (Status.CORRECT if oracle else Status.COMPARED)
        assert not report.ok


def test_the_html_report_of_a_no_oracle_verify_says_so(tmp_path):
    from kernels import elementwise_workload, wrong_value_kernel
    from tritune.report.build import build_report

    w = elementwise_workload("noora", wrong_value_kernel)
    w.oracle = None
    report = build_report(tritune.verify(w), tmp_path / "rep")
    html = report.html.read_text()
    assert "NO ORACLE" in html and "DISAGREE" in html and "compared" in html

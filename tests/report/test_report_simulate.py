"""``tritune report`` on a ``tritune simulate`` result: a convergence figure, not "not a tritune result"."""

from __future__ import annotations

import json
from pathlib import Path

from report_checks import assert_nontrivial_png, embedded_pngs

from tritune.cli.main import main
from tritune.report.simulate import convergence, parse_simulate

ROOT = Path(__file__).resolve().parents[2]
GELU_LANDSCAPE = Path(__file__).parent / "fixtures" / "landscape_gelu_h200_n2e24.json"  # a recorded landscape


def test_report_of_a_simulate_result_draws_convergence(tmp_path, capsys):
    sim = tmp_path / "sim.json"
    assert main(["simulate", str(GELU_LANDSCAPE), "--strategy", "random", "--seeds", "4", "--json", str(sim),
                 "--quiet"]) == 0
    data = json.loads(sim.read_text())
    assert data["command"] == "simulate"
    capsys.readouterr()
    out = tmp_path / "rep"
    assert main(["report", str(sim), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "not a result written by tritune" not in printed.err
    html = (out / "report.html").read_text()
    png = (out / "convergence.png").read_bytes()
    assert_nontrivial_png(png, "convergence.png")
    assert embedded_pngs(html) == [png]
    assert "random" in html and "within 2%" in html
    for run in data["runs"]:
        assert f"<td class=num>{run['seed']}</td>" in html


def test_an_older_simulate_json_without_command_is_reported_too(tmp_path, capsys):
    data = {"strategy": "random", "budget": 0.25, "budget_evaluations": 4, "legal_configs": 16, "kernel": "k",
            "noise": 0.0, "median_best_ratio": 1.0, "p90_best_ratio": 1.01,
            "runs": [{"seed": 0, "best_ratio": 1.0, "evaluations": 4, "evals_to_2pct": 2, "best_config": "A"},
                     {"seed": 1, "best_ratio": 1.03, "evaluations": 4, "evals_to_2pct": None, "best_config": "B"}]}
    src = tmp_path / "old.json"
    src.write_text(json.dumps(data))
    assert main(["report", str(src), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "convergence.png").exists()


def test_convergence_is_the_fraction_of_seeds_within_2pct_after_n_evaluations():
    sim = parse_simulate({"strategy": "s", "budget_evaluations": 3, "runs": [
        {"seed": 0, "evaluations": 3, "evals_to_2pct": 1},
        {"seed": 1, "evaluations": 3, "evals_to_2pct": 3},
        {"seed": 2, "evaluations": 3, "evals_to_2pct": None},
        {"seed": 3, "evaluations": 3, "evals_to_2pct": 2}]}, "t")
    assert convergence(sim) == ([0, 1, 2, 3], [0.0, 0.25, 0.5, 0.75])

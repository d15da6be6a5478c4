"""Replaying landscapes: `simulate` and `tritune simulate` on a small FAKE landscape (not GPU data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search.simulate import ReplayEvaluator, quantile, replay_space, simulate
from tritune.testing.strategy_contract import SCREENED_OUT, contract_space, fake_evaluate


def fake_landscape() -> Landscape:
    """FAKE: the contract's analytic times, two configs recorded illegal, some compile failures."""
    points = []
    for c in contract_space().configs():
        if c in SCREENED_OUT:
            points.append(LandscapePoint(c, Status.ILLEGAL, None, "screened"))
        else:
            status, t = fake_evaluate(c)
            points.append(LandscapePoint(c, status, t))
    land = Landscape.from_points("fake", "FAKE", {"n": 1}, points)
    land.provenance = {"fake": True}
    return land


def test_replay_space_screens_out_illegal_and_tells_failures() -> None:
    land = fake_landscape()
    space, illegal = replay_space(land)
    assert set(space.configs()) == set(land.configs)
    assert set(illegal) == set(SCREENED_OUT)
    failed = next(p for p in land.points if p.status is Status.COMPILE_FAILED)
    assert ReplayEvaluator(land)(failed.config) == (Status.COMPILE_FAILED, None, None)
    with pytest.raises(SearchError, match="not in the landscape"):
        ReplayEvaluator(land)(Config({"BLOCK": 3}))


def test_noise_is_seeded_and_multiplicative() -> None:
    land = fake_landscape()
    c = land.best.config
    a = [ReplayEvaluator(land, noise=0.05, seed=4)(c)[1] for _ in range(2)]
    ev = ReplayEvaluator(land, noise=0.05, seed=4)
    b = [ev(c)[1], ev(c)[1]]
    assert a[0] == a[1] == b[0] != b[1]
    assert b[1] is not None and abs(b[1] / land.best.time_ms - 1) < 0.5  # type: ignore[operator]


def test_simulate_exhaustive_at_full_budget_finds_the_best() -> None:
    land = fake_landscape()
    sim = simulate(land, "exhaustive", 1.0, 2)
    legal = len(land.points) - len(SCREENED_OUT)
    assert sim.legal_configs == legal and sim.budget_evaluations == legal
    assert [r.best_ratio for r in sim.runs] == [1.0, 1.0]
    assert all(r.evaluations == legal and r.evals_to_2pct is not None for r in sim.runs)
    assert sim.median_best_ratio == 1.0 and sim.p90_best_ratio == 1.0


def test_simulate_ratios_are_judged_on_recorded_times_and_respect_the_budget() -> None:
    land = fake_landscape()
    sim = simulate(land, "random", 0.25, 5, noise=0.1)
    best = land.best.time_ms
    assert best is not None
    for r in sim.runs:
        assert r.evaluations == sim.budget_evaluations
        point = land.lookup(next(c for c in land.configs if c.id == r.best_config))
        assert point is not None and r.best_ratio == point.time_ms / best  # type: ignore[operator]


def test_quantile_treats_nothing_found_as_worst() -> None:
    assert quantile([1.0, 2.0, 3.0], 0.5) == 2.0
    assert quantile([1.0, 2.0], 0.9) == pytest.approx(1.9)
    assert quantile([1.0, None, None], 0.5) is None
    assert quantile([1.0, 1.0, None], 0.5) == 1.0


def test_cli_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fake.json"
    fake_landscape().write(path)
    rc = main(
        ["simulate", str(path), "--strategy", "random", "--budget", "0.25", "--seeds", "3", "--json", "-"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "random" and out["budget"] == 0.25
    assert [r["seed"] for r in out["runs"]] == [0, 1, 2]
    for r in out["runs"]:
        assert {"seed", "best_ratio", "evaluations", "evals_to_2pct"} <= set(r)
        assert r["best_ratio"] >= 1.0 and r["evaluations"] == out["budget_evaluations"]
    assert out["median_best_ratio"] >= 1.0 and out["p90_best_ratio"] >= out["median_best_ratio"]


def test_cli_takes_a_strategy_with_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--strategy surrogate:probe=1 runs the surrogate with finalist probes (as search= does in tuning)."""
    path = tmp_path / "fake.json"
    fake_landscape().write(path)
    args = ["simulate", str(path), "--budget", "0.5", "--seeds", "2", "--noise", "0.02", "--json", "-"]
    assert main([*args, "--strategy", "surrogate:probe=1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "surrogate:probe=1" and len(out["runs"]) == 2
    assert main([*args, "--strategy", "surrogate"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "surrogate"


def test_cli_prints_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fake.json"
    fake_landscape().write(path)
    assert main(["simulate", str(path), "--seeds", "2", "--noise", "0.02"]) == 0
    text = capsys.readouterr().out
    assert "median best ratio" in text and "p90 best ratio" in text and "evals_to_2pct" in text


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("{not json", [], "not a readable landscape"),
        ('{"format": "other/1"}', [], "expected 'tritune.landscape/1'"),
        ('{"format": "tritune.landscape/1", "results": [{"status": "measured"}]}', [], "malformed"),
        ('{"format": "tritune.landscape/1", "results": []}', [], "no measured config"),
        (None, ["--strategy", "nope"], "unknown strategy 'nope'"),
        (None, ["--strategy", "surrogate:probe"], "key=value"),
        (None, ["--strategy", "surrogate:nope=1"], "--strategy 'surrogate:nope=1'"),
        (None, ["--strategy", "surrogate:probe=3"], "probe=3 must be a share"),
        (None, ["--budget", "0"], "must be a fraction"),
        (None, ["--budget", "150%"], "--budget 1.5 must be a fraction"),
        (None, ["--seeds", "0"], "at least 1"),
    ],
)
def test_cli_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, args: list[str], message: str
) -> None:
    path = tmp_path / "land.json"
    if content is None:
        fake_landscape().write(path)
    else:
        path.write_text(content)
    assert main(["simulate", str(path), *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_budget_is_a_share_given_either_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "land.json"
    fake_landscape().write(path)
    outs = []
    for budget in ("25%", "0.25"):
        assert main(["simulate", str(path), "--budget", budget, "--seeds", "2"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "budget 0.25 = " in outs[0]
    with pytest.raises(SystemExit) as e:  # argparse's usage error
        main(["simulate", str(path), "--budget", "lots"])
    assert e.value.code == 2 and "give 0.25 or 25%" in capsys.readouterr().err


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "absent.json")]) == 2
    assert "no such landscape file" in capsys.readouterr().err


def test_noisy_simulation_spends_part_of_the_budget_on_finalists() -> None:
    """With noise, the re-measured finalists count in the evaluations, which never exceed the budget."""
    from tritune.search.base import Budget
    from tritune.search.simulate import simulate_one

    land = _fitted_or_fake()
    quiet = simulate_one(land, "random", Budget(evaluations=20), seed=0)
    noisy = simulate_one(land, "random", Budget(evaluations=20), seed=0, noise=0.02)
    assert quiet.evaluations == 20 and noisy.evaluations == 20
    none = simulate_one(land, "random", Budget(evaluations=20), seed=0, noise=0.02, confirm=0.0)
    assert none.evaluations == 20
    assert noisy.best_ratio is not None and noisy.best_ratio >= 1.0


def _fitted_or_fake():  # type: ignore[no-untyped-def]
    import itertools
    import math

    from tritune.config import Config
    from tritune.landscape import Landscape, LandscapePoint
    from tritune.outcome import Status

    points = [
        LandscapePoint(Config({"B": b}, num_warps=w), Status.MEASURED, 1 + abs(math.log2(b) - 7) + 0.1 * w)
        for b, w in itertools.product([16, 32, 64, 128, 256, 512], [1, 2, 4, 8])
    ]
    return Landscape.from_points("fake", "FAKE", {}, points)

"""search_tune.py's space: >= 1,500 legal configs of the wide Hopper matmul, loadable by ``tritune tune``."""

from __future__ import annotations

from pathlib import Path

from tritune.space import check_static
from tritune.workload import load_workloads

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "search_tune.py"


def test_the_benchmark_space_is_large_legal_and_inside_the_wide_one() -> None:
    (w,) = load_workloads(BENCH, "matmul_search")
    legal = [c for c in w.candidates() if check_static(c, w.info, w.caller_kwargs(w.keys[0]), w.space) is None]
    assert len(legal) == 2000
    assert all(c.launch_options().get("num_ctas", 1) == 1 for c in legal)
    (wide,) = load_workloads(BENCH.parents[1] / "examples" / "matmul_tma_wide.py", "matmul_tma_wide")
    assert set(legal) <= set(wide.space.configs())
    assert len(w.keys) == 3
    (host,) = load_workloads(BENCH, "matmul_search_host")  # the same space less warp specialization
    h_legal = [c for c in host.candidates() if check_static(c, host.info, {}, host.space) is None]
    assert set(h_legal) == {c for c in legal if c["WARP_SPECIALIZE"] == 0} and len(h_legal) >= 1500
    assert host.pre_hook is not None and host.keys == w.keys


def test_the_warm_process_runs_tritune_tune_after_the_warm_up(monkeypatch, tmp_path) -> None:
    """--new-key-process warm: the child is this script with --child-warm CFG, then the CLI's own arguments."""
    import importlib.util
    import subprocess

    spec = importlib.util.spec_from_file_location("search_tune_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = mod.SEARCH_SPACE.configs()[7]
    seen: list[list[str]] = []

    def fake_run(cmd, **kw):  # FAKE: records the command instead of starting a GPU process
        seen.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    got = mod.tune_process("t", tmp_path, [mod.NEW_KEY], tmp_path / "s.db", warm=cfg)
    assert got["rc"] == 0 and got["keys"] == []
    cmd = seen[0]
    i = cmd.index("--child-warm")
    assert cmd[i - 1] == str(BENCH) and cmd[i + 1] == cfg.id and cmd[i + 2] == "tune"
    assert cmd[cmd.index("--key") + 1] == "M=6144,N=6144,K=6144"
    mod.tune_process("f", tmp_path, [mod.NEW_KEY], tmp_path / "s.db")  # a fresh process: tritune's CLI itself
    assert seen[1][1:4] == ["-m", "tritune", "tune"] and "--child-warm" not in seen[1]
    called: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(mod, "warm_child", lambda c, cli: called.append((c, list(cli))) or 0)
    assert mod.main(["--child-warm", cfg.id, "tune", "x.py"]) == 0
    assert called == [(cfg.id, ["tune", "x.py"])]

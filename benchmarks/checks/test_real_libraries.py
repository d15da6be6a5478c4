"""real_libraries.py on CPU: its --cpu-smoke mode, Triton's engine, then both engines.

The two runs of the harness over both engines are in the long group (``python -m pytest -m long``), which the test
command leaves out and .ci/run runs after it; the runs of one op under tritune alone, with and without
--fresh-dispatch, take seconds and are not.

Triton's side runs under the interpreter with the harness's FAKE timer (Triton's autotuner cannot time
on CPU). tritune's side needs ``tritune.patch_triton()``: without it the harness
must stop with a message that says so; with it, both engines must run and agree.

The ops of Triton's tutorials need a GPU at import; here they are checked over FAKE tutorial files and missing
ones: which ops a run picks, the one loader, the calls the ops make, and the not-run report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tritune

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *extra: str, hang: str | None = None) -> subprocess.CompletedProcess[str]:
    """The harness's CPU smoke run; ``hang``: the op whose cold run hangs (FAKE: ``REAL_LIBRARIES_FAKE_HANG``)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    if hang is not None:
        env["REAL_LIBRARIES_FAKE_HANG"] = hang
    cmd = [sys.executable, str(ROOT / "benchmarks" / "real_libraries.py"), "--cpu-smoke", "--out", str(tmp_path), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)


@pytest.mark.long  # about a minute: the harness tunes two ops under the interpreter
def test_triton_engine_runs_every_smoke_op(tmp_path: Path) -> None:
    p = _run(tmp_path, "--engines", "triton")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_total"] == 2 and summary["ops_run"]["triton"] == 2, summary
    for s in summary["ops"].values():
        assert s["triton_cold_s"] > 0 and s["triton_us"] > 0 and s["triton_dispatch_us"] > 0
    assert "| smoke_row_sum | 1/0 |" in p.stdout


@pytest.mark.long  # about a minute: two calls of the harness, one smoke op each
def test_a_resumed_call_runs_only_the_ops_the_earlier_one_did_not_finish(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    p = _run(first, "--engines", "triton", "--ops", "smoke_row_sum")
    assert p.returncode == 0, p.stdout + p.stderr
    p = _run(second, "--engines", "triton", "--ops", "smoke_row_sum,smoke_axpy", "--resume", str(first / "results.json"))
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((second / "results.json").read_text())
    assert doc["provenance"]["resumed"]["ops"] == ["smoke_row_sum"] and list(doc["ops"]) == ["smoke_row_sum", "smoke_axpy"]
    assert doc["summary"]["ops_run"]["triton"] == 2
    earlier = json.loads((first / "results.json").read_text())["ops"]["smoke_row_sum"]
    assert doc["ops"]["smoke_row_sum"] == earlier  # counted as it was, not run again
    assert "cold smoke_row_sum" not in p.stdout + p.stderr and "cold smoke_axpy triton" in p.stdout + p.stderr


@pytest.mark.long  # about a minute: a stalled op waits out the least wait a step gets (30 s)
def test_a_stalled_op_is_stopped_and_the_next_ops_run_in_a_fresh_engine(tmp_path: Path) -> None:
    """The first smoke op's cold run hangs (FAKE: ``REAL_LIBRARIES_FAKE_HANG``); past its share of the budget its
    engine is stopped, its stacks land in the log, and the second op runs, and is timed, in a fresh process."""
    p = _run(tmp_path, "--engines", "triton", "--budget-s", "60", "--ops", "smoke_row_sum,smoke_axpy", hang="smoke_row_sum")
    assert p.returncode == 0, p.stdout + p.stderr
    ops = json.loads((tmp_path / "results.json").read_text())["summary"]["ops"]
    assert "one op's most" in (ops["smoke_row_sum"]["triton_error"] or ""), ops["smoke_row_sum"]
    assert ops["smoke_axpy"]["triton_runs"] and ops["smoke_axpy"]["triton_us"] > 0, ops["smoke_axpy"]
    assert "most recent call first" in (tmp_path / "triton.log").read_text()  # where the stalled one waited
    assert (tmp_path / "triton.1.log").exists()


@pytest.mark.long  # about a minute: a stalled op waits out the least wait a step gets (30 s)
def test_an_op_timed_before_a_later_op_is_stopped_keeps_its_row_for_a_resumed_call(tmp_path: Path) -> None:
    """The second smoke op's cold run hangs (FAKE: ``REAL_LIBRARIES_FAKE_HANG``) and its engine is stopped, taking
    the first op's tuned state with it. The first op was timed right after its cold run, so its row is whole: a
    later call's ``--resume`` counts it and runs only the second."""
    p = _run(tmp_path, "--engines", "triton", "--budget-s", "60", "--ops", "smoke_row_sum,smoke_axpy", hang="smoke_axpy")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    ops = doc["summary"]["ops"]
    assert "one op's most" in (ops["smoke_axpy"]["triton_error"] or ""), ops["smoke_axpy"]
    assert ops["smoke_row_sum"]["triton_us"] > 0, ops["smoke_row_sum"]  # timed before its process was stopped
    assert len(doc["ops"]["smoke_row_sum"]["triton"]["us_rounds"]) >= 2
    from real_libraries import resumed_rows

    rows, _ = resumed_rows(tmp_path / "results.json", ("triton",))
    assert list(rows) == ["smoke_row_sum"]


@pytest.mark.long  # about two minutes: both engines tune one op, then wait out a stalled one each
def test_an_op_judged_before_a_later_op_is_stopped_keeps_its_winners_ratio(tmp_path: Path) -> None:
    """Both engines; the second smoke op's cold run hangs (FAKE: ``REAL_LIBRARIES_FAKE_HANG``) and each engine is
    stopped there, Triton's process with the first op's tuned state. The first op's winners were pinned and re-timed
    right after its first rounds, while that process lived, so its winner ratio is in the summary."""
    if not hasattr(tritune, "patch_triton"):
        pytest.skip("this tritune has no patch_triton()")
    p = _run(tmp_path, "--budget-s", "120", "--op-share", "0.25", "--ops", "smoke_row_sum,smoke_axpy",
             "--profile-calls", "0", hang="smoke_axpy")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert "one op's most" in (summary["ops"]["smoke_axpy"]["triton_error"] or ""), summary["ops"]["smoke_axpy"]
    s = summary["ops"]["smoke_row_sum"]
    assert s["winner_ratio"] is not None and s["winner_note"] is None, s
    assert summary["winners_compared"] == 1, summary


@pytest.mark.long  # minutes: both engines tune, then each winner is pinned and re-timed
def test_both_engines(tmp_path: Path) -> None:
    p = _run(tmp_path)
    if not hasattr(tritune, "patch_triton"):
        assert p.returncode == 2
        assert "no tritune.patch_triton()" in p.stderr
        return
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_run"] == {"triton": 2, "tritune": 2}, summary
    assert summary["ops_equal"] == 2, summary
    for name, s in summary["ops"].items():
        # each engine's winner is recorded, and both were pinned in turn and re-timed in Triton's process
        assert s["triton_config"] and s["tritune_config"], (name, s)
        assert s["winner_ratio"] is not None and s["winner_note"] is None, (name, s)
        assert s["reaches"] is True and s["tritune_reaches"] is True  # plain autotuned kernels: no libentry
    assert summary["winners_compared"] == 2 and summary["ops_reaching"] == 2
    assert "winners re-measured interleaved (warm" in p.stdout and "median over the 2 ops" in p.stdout


@pytest.mark.slow  # seconds: two runs of one op under tritune alone (three child processes, each imports torch)
def test_fresh_dispatch_times_a_fresh_tritune_process_beside_the_tuning_one_and_without_it_nothing_changes(
    tmp_path: Path,
) -> None:
    """--fresh-dispatch: a fresh tritune process makes the op's first call on the tuning process's caches and store,
    is timed in every dispatch round, and both processes' state is kept from the first round; the summary and the
    table have the tuning process over the fresh one. Without the flag the run has none of it."""
    if not hasattr(tritune, "patch_triton"):
        pytest.skip("this tritune has no patch_triton()")
    one = ("--engines", "tritune", "--ops", "smoke_axpy", "--profile-calls", "0")
    p = _run(tmp_path / "fresh", *one, "--fresh-dispatch")
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads((tmp_path / "fresh" / "results.json").read_text())
    row, summary = got["ops"]["smoke_axpy"], got["summary"]
    fresh = row["tritune_fresh"]
    assert fresh["cold"]["ok"] and fresh["cold"]["cold_s"] > 0, fresh["cold"]
    rounds = len(row["tritune"]["dispatch_us"])
    assert rounds == 3 and len(fresh["dispatch_us"]) == rounds and all(x > 0 for x in fresh["dispatch_us"])
    for side in (row["tritune"], fresh):  # the first round's state, in both processes
        st = side["state"]
        assert st["threads"] >= 1 and "MainThread" in st["thread_names"], st
        assert st["switch_interval_s"] > 0 and st["gc_freeze_count"] >= 0 and st["gc_objects"] > 1000, st
        assert len(st["gc_threshold"]) == 3 and st["children"] is not None and st["os_threads"], st
    s = summary["ops"]["smoke_axpy"]
    assert s["tritune_fresh_runs"] and s["tritune_fresh_same_config"] is True, s
    assert s["fresh_ratio"] > 0 and s["fresh_ratio_basis"] == "wall", s  # no CPU time on the interpreter's path
    assert summary["fresh_ops_compared"] == 1 and summary["fresh_ratio_worst_op"] == "smoke_axpy", summary
    assert summary["fresh_first_call_total_s"] == fresh["cold"]["cold_s"]
    assert got["provenance"]["fresh_dispatch"] is True
    assert "tuning process / fresh process (tritune): median " in p.stdout and "over 1 ops, worst " in p.stdout
    assert "first call in a fresh process with the store: " in p.stdout, p.stdout
    assert (tmp_path / "fresh" / "tritune_fresh.log").exists()
    assert (tmp_path / "fresh" / "outputs" / "tritune_fresh" / "smoke_axpy.pt").exists()

    p = _run(tmp_path / "plain", *one)
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads((tmp_path / "plain" / "results.json").read_text())
    assert set(got["ops"]["smoke_axpy"]) == {"lib", "tritune"} and "state" not in got["ops"]["smoke_axpy"]["tritune"]
    assert not [k for k in got["summary"] if k.startswith("fresh")], got["summary"]
    assert not [k for k in got["summary"]["ops"]["smoke_axpy"] if "fresh" in k]
    assert "fresh process" not in p.stdout and not (tmp_path / "plain" / "tritune_fresh.log").exists()


def test_a_fresh_engine_reads_the_caches_and_store_of_the_home_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fresh tritune process's environment: the Triton cache, tritune store and FlagGems cache of the folder it is
    given (the tuning process's), tritune's widening as the tuning process has it, and its own outputs."""
    import argparse

    from real_libraries import FRESH, _Engine

    spawned: dict[str, tuple[list[str], dict[str, str]]] = {}
    monkeypatch.setattr(_Engine, "_spawn", lambda self, name, cmd, env, log: spawned.setdefault(name, (cmd, env)))
    args = argparse.Namespace(cpu_smoke=True, quick=False, widen=2, out=tmp_path / "out")
    tuning = _Engine("tritune", args, tmp_path, tmp_path / "t.log", generation=1)  # a replacement's own folder
    _Engine(FRESH, args, tmp_path, tmp_path / "f.log", home=tuning.home)
    env_t, (cmd_f, env_f) = spawned["tritune"][1], spawned[FRESH]
    assert tuning.home == tmp_path / "tritune.1"
    for key in ("TRITON_CACHE_DIR", "TRITUNE_STORE", "FLAGGEMS_CACHE_DIR", "TRITUNE_WIDEN", "PYTHONHASHSEED"):
        assert env_f[key] == env_t[key], key
    assert env_f["TRITUNE_STORE"].startswith(str(tmp_path / "tritune.1")) and env_f["TRITUNE_WIDEN"] == "2"
    assert cmd_f[cmd_f.index("--child") + 1] == FRESH and cmd_f[cmd_f.index("--out") + 1].endswith(FRESH)


def test_process_state_names_threads_and_counts_child_processes() -> None:
    """``process_state`` in this process: a FAKE worker thread by its name, a child process (a ``sleep``), the
    collector's settings and heap, the switch interval."""
    import gc
    import threading

    from real_libraries import process_state

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="fake-worker", daemon=True)  # FAKE: a thread left running
    worker.start()
    before = process_state()
    child = subprocess.Popen(["sleep", "30"])
    try:
        st = process_state()
    finally:
        child.kill()
        child.wait()
        stop.set()
        worker.join()
    assert "fake-worker" in st["thread_names"] and st["threads"] == len(st["thread_names"]) >= 2
    assert st["switch_interval_s"] == sys.getswitchinterval() and st["gc_threshold"] == list(gc.get_threshold())
    assert st["gc_freeze_count"] == gc.get_freeze_count() and st["gc_objects"] > 1000
    if before["children"] is not None:  # Linux: psutil, /proc's children lists, or a scan of /proc
        assert st["children"] == before["children"] + 1, (before["children"], st["children"])
    assert st["os_threads"] is None or sum(st["os_threads"].values()) >= 2


def test_the_fresh_summary_rates_the_tuning_process_over_the_fresh_one() -> None:
    """The summary's --fresh-dispatch part on recorded rows (no GPU): per op the tuning process's CPU time a call over
    the fresh process's, median of per-round ratios, and the control's; their median and worst; the first calls;
    the state where the two differ (not the collector's counts, which move on their own); and the table's lines.
    Triton's and tritune's comparison is the same as on rows without the fresh process."""
    import contextlib
    import io

    from real_libraries import FRESH, _print_table, _summarize

    def side(cpu: list[float], ctl: list[float], state: dict[str, object] | None = None) -> dict[str, object]:
        out = {"cold": {"ok": True, "cold_s": 0.5, "reaches": False, "tuners": [{"name": "k", "config": {"B": 1}}]},
               "us": [10.0], "us_rounds": [10.0], "dispatch_us": [c + 1 for c in cpu], "dispatch_cpu_us": cpu,
               "control_cpu_us": ctl, "control_us": ctl, "run_us": [0.0]}  # fmt: skip
        return {**out, "state": state} if state else out

    tuning = {"thread_names": ["MainThread", "tritune-store"], "switch_interval_s": 0.005, "gc_freeze_count": 9,
              "gc_objects": 900, "gc_count": [1, 0, 0], "os_threads": {"python": 3}}  # fmt: skip
    fresh = {"thread_names": ["MainThread"], "switch_interval_s": 0.005, "gc_freeze_count": 0, "gc_objects": 500,
             "gc_count": [5, 0, 0], "os_threads": {"python": 2}}  # fmt: skip
    rows = {
        "a": {"lib": "x", "triton": side([10.0, 10.0], [4.0, 4.0]), "tritune": side([13.0, 15.0], [4.4, 4.4], tuning),
              FRESH: {**side([10.0, 10.0], [4.0, 4.0], fresh), "cold": {"ok": True, "cold_s": 0.25, "tuners": [
                  {"name": "k", "config": {"B": 1}}]}}},
        "b": {"lib": "x", "triton": side([10.0], [4.0]), "tritune": side([11.0], [4.0]),
              FRESH: {**side([10.0], [4.0]), "cold": {"ok": True, "cold_s": 0.5, "tuners": [
                  {"name": "k", "config": {"B": 2}}]}}},
    }  # fmt: skip
    t = _summarize(rows, ("triton", "tritune"))
    plain = _summarize({k: {n: v for n, v in r.items() if n != FRESH} for k, r in rows.items()}, ("triton", "tritune"))
    assert {k: v for k, v in t.items() if not k.startswith("fresh") and k != "ops"} == {
        k: v for k, v in plain.items() if k != "ops"}
    a, b = t["ops"]["a"], t["ops"]["b"]
    assert abs(a["fresh_ratio"] - 1.4) < 1e-9 and a["fresh_ratio_basis"] == "cpu"  # median of 1.3 and 1.5
    assert abs(a["fresh_control_ratio_cpu"] - 1.1) < 1e-9 and abs(b["fresh_ratio"] - 1.1) < 1e-9
    assert a["tritune_fresh_same_config"] is True and b["tritune_fresh_same_config"] is False
    assert t["fresh_ratio_worst_op"] == "a" and abs(t["fresh_ratio_median"] - 1.25) < 1e-9
    assert t["fresh_first_call_s"] == {"a": 0.25, "b": 0.5} and t["fresh_first_call_total_s"] == 0.75
    diff = t["fresh_state_diff"]
    assert diff["op"] == "a" and set(diff["differs"]) == {"thread_names", "gc_freeze_count", "gc_objects", "os_threads"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_table(t, {"gpu": "cpu", "torch": "-", "triton": "-", "date": "-"})
    text = out.getvalue()
    assert "tuning process / fresh process (tritune): median 1.250 over 2 ops, worst 1.400 (a)" in text, text
    assert "first call in a fresh process with the store: 0.750 s in all over 2 ops" in text
    assert "  thread_names: only in the tuning process tritune-store; only in the fresh one -" in text
    assert "  os_threads: only in the tuning process python; only in the fresh one -" in text
    assert "  gc_freeze_count: 9 / 0" in text and "gc_count" not in text and "switch_interval_s" not in text
    assert "| a | 0.250 | True | 14.0 | 10.0 | 1.400 | 1.100 | False |" in text


def test_run_counter_counts_runs_and_puts_run_back() -> None:
    """The harness's counter of autotuner runs wraps ``run`` of Triton's Autotuner and its subclasses only
    while active; ``Pinned`` pins a tuner to one config and restores its list."""
    import torch
    import triton
    import triton.language as tl
    from real_libraries import Pinned, RunCounter, describe, matching_config, original_autotuner

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

    cfgs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=2)]
    k = triton.autotune(configs=cfgs, key=["n"], do_bench=lambda fn, quantiles=None: [1.0, 1.0, 1.0])(scale_kernel)
    before = original_autotuner().__dict__["run"]
    x = torch.randn(256)
    with RunCounter() as c:
        k[(2,)](x, torch.empty_like(x), 256)
        k[(2,)](x, torch.empty_like(x), 256)
    assert c.counts == {id(k): 2} and original_autotuner().__dict__["run"] is before
    assert matching_config(k, describe(cfgs[1])) is cfgs[1]
    assert matching_config(k, {"BLOCK": 32, "num_warps": 8}).kwargs == {"BLOCK": 32}
    p = Pinned([k])
    p.pin([cfgs[1]])
    assert k.configs == [cfgs[1]]
    p.restore()
    assert k.configs == cfgs


def test_a_tuner_run_at_two_keys_a_call_is_recorded_and_pinned_per_run(tmp_path: Path) -> None:
    """An op that launches one autotuned kernel at two keys a call (as fla's chunked ops do): the cold call records
    the config of each run in order, and the winners' judge pins each side's configs run by run, so each key
    launches its own winner. The kernel writes its BLOCK, which shows the config each launch ran; FAKE timer."""
    import torch
    import triton
    import triton.language as tl
    from real_libraries import Op, Pinned, _Child, describe

    @triton.jit
    def block_of(out_ptr, n, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.program_id(0), BLOCK + n * 0)

    cfgs = [triton.Config({"BLOCK": b}) for b in (16, 32, 64)]
    times = iter([3.0, 1.0, 2.0, 2.0, 3.0, 1.0])  # FAKE: n=5 -> BLOCK 32 wins, n=7 -> BLOCK 64
    k = triton.autotune(configs=cfgs, key=["n"], do_bench=lambda fn, quantiles=None: [next(times)] * 3)(block_of)

    def make(torch_: object, device: str, quick: bool) -> tuple[object, tuple[object, ...]]:
        def call() -> torch.Tensor:
            outs = [torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)]
            k[(1,)](outs[0], 5)
            k[(1,)](outs[1], 7)
            return torch.cat(outs)

        return call, ()

    child = _Child("triton", tmp_path, "cpu", False)
    op = Op("two_keys", "smoke", make)
    cold = child.cold(op)
    (entry,) = cold["tuners"]
    assert entry["calls"] == 2 and entry["sequence"] == [describe(cfgs[1]), describe(cfgs[2])], entry
    assert entry["sequence_keys"] == [[5], [7]]  # the key argument n of each run
    fn, _ = child.calls["two_keys"]
    p = Pinned([k])
    p.pin([[cfgs[0], cfgs[2]]])
    assert fn().tolist() == [16, 64] and fn().tolist() == [16, 64]  # each call starts from the list's first
    p.restore()
    assert "run" not in k.__dict__ and k.configs == cfgs and fn().tolist() == [32, 64]  # tuned ones again

    other = {**entry, "sequence": [describe(cfgs[0]), describe(cfgs[2])]}
    got = child.winners(op, [other])
    assert "skipped" not in got, got
    assert got["configs"] == {"triton": [entry["sequence"]], "other": [other["sequence"]]}
    assert got["same"] == [False] and got["other_generated"] == [False]
    assert got["us"]["triton"] > 0 and got["us"]["other"] > 0
    assert child.winners(op, [{**entry, "sequence": entry["sequence"][:1]}])["skipped"].startswith("test_real")
    swapped = {**other, "sequence_keys": [[7], [5]]}  # the other engine ran the keys in another order: not paired
    assert "cannot be paired run by run" in child.winners(op, [swapped])["skipped"]


def test_summary_rates_same_configs_as_equal_and_dispatch_by_cpu_time() -> None:
    """The summary's rules on recorded rows (no GPU): a winner pair of the same configs counts 1.000 (the same
    kernels) while its measured ratio is kept as the judge's A/A spread; dispatch is rated by the calling
    thread's CPU time where it was recorded, with the wall-time ratio kept beside it."""
    from real_libraries import _summarize

    def side(disp: list[float], cpu: list[float], ctl: list[float]) -> dict[str, object]:
        return {"cold": {"ok": True, "cold_s": 1.0, "reaches": True, "tuners": [{"config": {"B": 1}}]},
                "us": [10.0], "us_rounds": [10.0], "dispatch_us": disp, "dispatch_cpu_us": cpu,
                "control_cpu_us": ctl, "control_us": ctl, "run_us": [5.0]}  # fmt: skip

    rows = {
        "same": {"lib": "x", "triton": side([20.0, 20.0], [10.0, 10.0], [4.0, 4.0]),
                 "tritune": side([30.0, 30.0], [6.0, 6.0], [4.4, 4.4]),
                 "winners": {"us": {"triton": 3.0, "other": 3.2}, "us_cold": {"triton": 3.6, "other": 3.8},
                             "same": [True]}},
        "differs": {"lib": "x", "triton": side([20.0], [10.0], [4.0]), "tritune": side([10.0], [7.0], [4.0]),
                    "winners": {"us": {"triton": 3.0, "other": 3.3}, "us_cold": {"triton": 3.0, "other": 2.7},
                                "same": [False]}},
    }  # fmt: skip
    t = _summarize(rows, ("triton", "tritune"))
    same, differs = t["ops"]["same"], t["ops"]["differs"]
    assert same["winner_ratio"] == same["winner_ratio_cold"] == 1.0
    assert abs(same["winner_ratio_measured"] - 3.2 / 3.0) < 1e-9
    assert abs(differs["winner_ratio"] - 1.1) < 1e-9 and abs(differs["winner_ratio_cold"] - 0.9) < 1e-9
    assert t["winners_within_1_02"] == 1 and t["winners_cold_within_1_02"] == 2
    assert sorted(round(r, 4) for r in t["judge_aa_ratios"]) == sorted([round(3.2 / 3.0, 4), round(3.8 / 3.6, 4)])
    assert abs(same["dispatch_ratio"] - 0.6) < 1e-9 and abs(same["dispatch_ratio_mean"] - 1.5) < 1e-9
    assert abs(t["dispatch_ratio_median_reaching"] - 0.65) < 1e-9
    assert abs(t["control_ratio_median"] - 1.05) < 1e-9


def names(**kw: object) -> list[str]:
    """The names of the ops ``select_ops`` picks for these command-line options (the rest at their defaults)."""
    import argparse

    from real_libraries import select_ops

    base = {"cpu_smoke": False, "quick": False, "compile": False, "variants": False, "ops": ""}
    return [op.name for op in select_ops(argparse.Namespace(**{**base, **kw}))]


def test_ops_are_picked_by_name_in_order_with_variants_and_compiled_ops_only_when_asked() -> None:
    every = names()
    assert "mm" in every and not any("@" in n or "+compile" in n for n in every)
    assert names(ops="fla_gla,mm,liger_dyt") == ["fla_gla", "mm", "liger_dyt"]  # exact names, in this order
    assert names(ops="fla_gla_") == ["fla_gla_bwd", "fla_gla_bwd@odd", "fla_gla_bwd@small"]
    assert "mm@odd" in names(ops="@odd")
    assert {"liger_dyt+compile", "fla_gla+compile"} <= set(names(compile=True))
    assert {"bmm@odd", "bmm@small", "fla_retention_bwd@odd", "liger_swiglu@small"} <= set(names(variants=True))
    assert "mm@small" in names(ops="@small") and not any("@odd" in n for n in names(ops="@small"))


def test_every_other_shape_is_one_of_an_op_that_runs_at_its_own_shape() -> None:
    """An op's other shapes (``@odd``, ``@small``) are named after an op of the same library, are variants (run only
    when asked), and no name is given twice."""
    from real_libraries import OPS

    by_name = {op.name: op for op in OPS}
    assert len(by_name) == len(OPS)
    others = [op for op in OPS if "@" in op.name]
    assert len(others) >= 50 and all(op.variant for op in others)
    for op in others:
        base, shape = op.name.split("@")
        assert shape in ("odd", "small") and base in by_name and by_name[base].lib == op.lib, op.name


def test_widened_winners_are_summarised_with_their_spaces_and_a_new_config_takes_the_lists_hook() -> None:
    """The summary of a --widen run on recorded rows (no GPU): every tuner's space from tritune's choices, the
    winners' median and best, the ops 5% faster; a config outside the list is pinned with the list's pre_hook."""
    from types import SimpleNamespace

    import triton
    from real_libraries import _summarize, matching_config

    def side(ratio: float | None, space: dict[str, object] | None) -> dict[str, object]:
        stats = {"(64,)": {"space": space, "total_s": 1.5, "checked": {"s": {"inputs": 0.1, "checks": 0.3}}}} if space else None
        return {"cold": {"ok": True, "cold_s": 1.0, "reaches": False, "tuners": [
            {"name": "k", "config": {"B": 1}, "stats": stats}]}, "us": [10.0], "us_rounds": [10.0]}

    space = {"source": "widened", "given": 4, "generated": 9, "legal": 13, "generated_legal": 9,
             "winner_generated": True, "winner_over_best_written": 0.93}  # fmt: skip
    rows = {op: {"lib": "x", "triton": side(None, None), "tritune": side(None, space),
                 "winners": {"us": {"triton": 10.0, "other": 10.0 * r}, "same": [r == 1.0], "other_generated": [r < 1]}}
            for op, r in (("a", 0.90), ("b", 1.0), ("c", 1.005))}  # fmt: skip
    for name, r in (("a@small", 0.90), ("b@odd", 0.94)):  # other shapes: a 5% faster again, b this time
        rows[name] = {**rows["b"], "winners": {"us": {"triton": 10.0, "other": 10.0 * r}, "same": [False],
                                               "other_generated": [True]}}
    rows["c@small"] = {**rows["c"], "winners": {"skipped": "not run: past --budget-s 1"}}
    t = _summarize(rows, ("triton", "tritune"))
    assert t["winners_faster_by_5pct"] == ["a", "a@small", "b@odd"] and t["winners_at_most_1_01"] == 5
    # per op over its shapes: a is 5% faster at both, b at one of two; c judged at one shape, run at two
    assert t["base_ops_judged"] == 3 and t["base_ops_run"] == 3 and t["base_ops_within_1_01"] == 3
    assert t["base_ops_faster_somewhere"] == ["a", "b"] and t["base_ops_faster_everywhere"] == ["a"]
    assert abs(t["winner_ratio_best"] - 0.9) < 1e-9 and t["winner_ratio_median"] == pytest.approx(0.94)
    assert t["ops"]["a"]["winner_generated"] and t["ops"]["a"]["space"][0]["winner_over_best_written"] == 0.93
    from real_libraries import _check_seconds

    assert _check_seconds(t["ops"]["a"]["space"][0]) == "; check 0.40 s of 1.50"

    def hook(nargs: object) -> None:
        return None

    k = SimpleNamespace(configs=[triton.Config({"BLOCK": 64}, pre_hook=hook), triton.Config({"BLOCK": 128}, pre_hook=hook)])
    assert matching_config(k, {"BLOCK": 256, "num_warps": 4}).pre_hook is hook

    # --widen derived: the flag's value, and a tuner without a derived space says why in its row
    from real_libraries import _spaces, _widen_arg

    assert _widen_arg("derived") == "derived" and _widen_arg("2") == 2
    why = "no tunable tl.constexpr parameter (BD is passed by the caller); widened one step instead"
    (row,) = _spaces([{"name": "k", "stats": {"(64,)": {"space": {**space, "not_derived": why}}}}])
    assert row["not_derived"] == why and row["source"] == "widened"


def test_merge_summarises_several_calls_as_one_run_taking_each_ops_most_complete_row(tmp_path: Path) -> None:
    """--merge runs nothing: two calls' recorded rows (FAKE timings) become one summary; an op run by both counts once,
    from the call that judged its winners; a call on another GPU is refused with the difference named."""
    from real_libraries import main

    def row(cold_ok: bool, ratio: float | None) -> dict[str, object]:
        side = {"cold": {"ok": cold_ok, "cold_s": 1.0, "reaches": False, "tuners": []}, "us": [10.0], "us_rounds": [10.0]}
        w = {"us": {"triton": 10.0, "other": 10.0 * ratio}, "same": [False], "other_generated": [True]} if ratio else {}
        return {"lib": "x", "triton": side, "tritune": side, **({"winners": w} if w else {})}

    prov = {"gpu": "FAKE GPU", "driver": "1", "torch": "2", "triton": "3", "date": "2026-12-08"}
    first = {"provenance": prov, "ops": {"a": row(True, None), "b": row(True, 1.0)}}
    second = {"provenance": prov, "ops": {"a": row(True, 0.9), "c": row(False, None)}}
    paths = []
    for i, doc in enumerate((first, second)):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(doc))
    assert main(["--out", str(tmp_path / "m"), "--merge", *map(str, paths)]) == 0
    got = json.loads((tmp_path / "m" / "results.json").read_text())
    assert sorted(got["ops"]) == ["a", "b", "c"] and got["ops"]["a"] == second["ops"]["a"]
    assert got["summary"]["winners_faster_by_5pct"] == ["a"] and got["summary"]["winners_compared"] == 2
    assert [m["ops"] for m in got["provenance"]["merged"]] == [["a", "b"], ["a", "c"]]
    paths[1].write_text(json.dumps({**second, "provenance": {**prov, "gpu": "OTHER GPU"}}))
    with pytest.raises(SystemExit, match="ran elsewhere"):
        main(["--out", str(tmp_path / "m2"), "--merge", *map(str, paths)])


def _widen_default_ops() -> str:
    """The op list of gpu.sh's widen part when WIDEN_OPS is unset (its ``o=${WIDEN_OPS:-...}`` lines, in order)."""
    import re

    o = ""
    for line in (ROOT / "benchmarks" / "gpu.sh").read_text().splitlines():
        m = re.fullmatch(r"\s*o=\$\{WIDEN_OPS:-(.*)\}", line)
        if m:
            o = m.group(1).replace("$o", o)
    return o


def test_tutorial_ops_are_picked_by_name_their_second_shape_as_a_variant_and_by_the_widen_default() -> None:
    from real_libraries import OPS

    tut = ["tut_matmul", "tut_layer_norm", "tut_attention", "tut_attention_bwd"]
    others = ["tut_matmul@odd", "tut_matmul@small", "tut_layer_norm@odd", "tut_layer_norm@small", "tut_attention@small",
              "tut_attention_bwd@small"]
    assert sorted(op.name for op in OPS if op.lib == "tutorials") == sorted([*tut, *others])
    assert [op.name for op in OPS if op.lib == "tutorials" and op.variant] == others
    every = names()
    assert set(tut) <= set(every) and "tut_matmul@odd" not in every  # a second shape only when asked
    assert "tut_matmul@odd" in names(variants=True) and not set(tut) & set(names(cpu_smoke=True))
    assert names(ops="tut_attention") == ["tut_attention"]  # the exact name, not the _bwd op it is part of
    assert names(ops="tut_matmul") == ["tut_matmul"]
    assert names(ops="tut_") == ["tut_matmul", "tut_matmul@odd", "tut_matmul@small", "tut_layer_norm",
                                 "tut_layer_norm@odd", "tut_layer_norm@small", "tut_attention", "tut_attention_bwd",
                                 "tut_attention@small", "tut_attention_bwd@small"]
    widen = names(ops=_widen_default_ops())
    assert set(tut) | {"tut_matmul@odd", "mm@odd", "liger_swiglu"} <= set(widen), widen
    assert widen.index("tut_attention_bwd") < widen.index("mm@odd")  # ahead of the second shapes


@pytest.mark.slow  # two child processes start (each imports torch)
def test_tutorial_ops_without_their_files_or_whose_file_fails_to_import_are_reported_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The child reports an op of Triton's tutorials as not run, with a one-line reason, as it reports an op whose
    library did not import: when $TRITUNE_TUTORIALS lacks the files, and when a file is there but fails to import
    (a FAKE tutorial 03 that raises)."""
    import argparse

    from real_libraries import _Engine, _print_table, _summarize

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    args = argparse.Namespace(cpu_smoke=True, quick=False, widen=False, out=tmp_path)
    empty, broken = tmp_path / "empty", tmp_path / "broken"
    empty.mkdir()
    broken.mkdir()
    fake_03 = 'raise ValueError("FAKE tutorial 03\\nsecond line")\n'  # a FAKE 03 that fails to import
    (broken / "03-matrix-multiplication.py").write_text(fake_03)
    (broken / "05-layer-norm.py").write_text("# FAKE tutorial 05\n")
    (broken / "06-fused-attention.py").write_text("# FAKE tutorial 06\n")
    got = {}
    for name, folder in (("empty", empty), ("broken", broken)):
        monkeypatch.setenv("TRITUNE_TUTORIALS", str(folder))
        e = _Engine("triton", args, tmp_path / name, tmp_path / f"{name}.log")
        try:
            assert "fatal" not in e.hello, e.hello
            got[name] = (e.hello["libs"]["tutorials"], e.ask(cmd="cold", op="tut_matmul"))
        finally:
            e.close()
    reason, cold = got["empty"]
    assert reason.startswith("FileNotFoundError: 03-matrix-multiplication.py, 05-layer-norm.py, 06-fused-attention.py "
                             "not in ")
    assert str(empty) in reason and "fetch.sh tutorials" in reason and "\n" not in reason
    assert cold["ok"] is False and cold["error"] == f"RuntimeError: tutorials did not import: {reason}"
    reason, cold = got["broken"]
    assert reason is None  # the files are there; the op's first call imports them
    want = "RuntimeError: tutorials did not import: 03-matrix-multiplication.py: ValueError: FAKE tutorial 03"
    assert cold["ok"] is False and cold["error"] == want  # one line: the first of the exception's
    # the parent's table: the op not run by the engine, and the reason on the line below it
    rows = {"tut_matmul": {"lib": "tutorials", "triton": {"cold": got["empty"][1]}}}
    table = _summarize(rows, ("triton",))
    assert table["ops_run"]["triton"] == 0
    assert table["ops"]["tut_matmul"]["triton_error"] == got["empty"][1]["error"]
    _print_table(table, {"gpu": "cpu", "torch": "-", "triton": "-", "date": "-"})
    lines = capsys.readouterr().out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| tut_matmul | 0/0 |"))
    assert lines[row + 1] == f"|   triton error: {got['empty'][1]['error'][:300]} |"  # the table's cut at 300


def test_the_tutorial_loader_imports_a_file_unedited_and_its_perf_report_does_not_run(tmp_path: Path) -> None:
    """``load_tutorial`` (real_libraries' tut_ ops and tutorials_check.py) on a FAKE tutorial whose import runs a
    ``triton.testing.perf_report`` benchmark, as tutorial 03 does: the module is imported, its benchmark is not run,
    and Triton's ``perf_report`` is its own again after the import, also after a file that fails to import."""
    import triton.testing
    from real_libraries import load_tutorial

    ran = tmp_path / "benchmark_ran"
    fake = tmp_path / "fake_tutorial.py"
    fake.write_text(
        '"""A FAKE tutorial for this test: a function, then a perf_report benchmark run at import (as tutorial 03)."""\n'
        "import triton\nimport triton.testing\n\n\n"
        "def double(x):\n    return 2 * x\n\n\n"
        "@triton.testing.perf_report([triton.testing.Benchmark(x_names=['n'], x_vals=[1], line_arg='p', "
        "line_vals=['a'], line_names=['a'], plot_name='fake', args={})])\n"
        f"def bench(n, p):\n    open({str(ran)!r}, 'w').write('ran')\n    return 1.0\n\n\n"
        "bench.run(print_data=True)\nAFTER = double(21)\n"
    )
    real = triton.testing.perf_report
    try:
        mod = load_tutorial(fake, "fake_tutorial_for_test")
        assert mod.AFTER == 42 and sys.modules["fake_tutorial_for_test"] is mod
        assert not ran.exists()  # the benchmark did not run
        assert triton.testing.perf_report is real
        bad = tmp_path / "fake_broken.py"
        bad.write_text("import triton.testing\nraise KeyError('FAKE')\n")  # a FAKE tutorial that fails
        with pytest.raises(KeyError):
            load_tutorial(bad, "fake_broken_tutorial_for_test")
        assert triton.testing.perf_report is real and "fake_broken_tutorial_for_test" not in sys.modules
    finally:
        sys.modules.pop("fake_tutorial_for_test", None)


def test_tutorial_ops_call_the_tutorials_functions_as_their_own_tests_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tut_ ops' factories on CPU, over FAKE tutorial files that record their calls (the real ones need a GPU
    at import): 03's ``matmul(a, b)`` on fp16 inputs of the op's shapes; 05's forward kernel (a FAKE of its
    signature, run by the interpreter) through an autotuner whose one config is the tutorial's launch choice; 06's ``attention`` called positionally
    with causal=True, sm_scale=0.5 and warp_specialize=False, and its backward's input gradients joined."""
    import torch
    from real_libraries import OPS, tutorial

    (tmp_path / "03-matrix-multiplication.py").write_text(
        '"""FAKE tutorial 03 for this test."""\n'
        "calls = []\n\n\n"
        "def matmul(a, b, activation=''):\n"
        "    calls.append((tuple(a.shape), tuple(b.shape), a.dtype, activation))\n"
        "    return (a.float() @ b.float()).half()\n"
    )
    (tmp_path / "06-fused-attention.py").write_text(
        '"""FAKE tutorial 06 for this test: attention in torch, with the tutorial\'s signature."""\n'
        "import torch\n\ncalls = []\n\n\n"
        "class _attention:\n"
        "    @staticmethod\n"
        "    def forward(ctx, q, k, v, causal, sm_scale, warp_specialize=True):\n"
        "        raise AssertionError('the op calls attention, not forward')\n\n\n"
        "def attention(q, k, v, causal, sm_scale, warp_specialize=True):\n"
        "    calls.append((causal, sm_scale, warp_specialize))\n"
        "    return torch.softmax(q.float() @ k.float().transpose(2, 3) * sm_scale, -1).half() @ v\n"
    )
    (tmp_path / "05-layer-norm.py").write_text(
        '"""FAKE tutorial 05 for this test: a layer norm forward kernel with the tutorial\'s signature, which loops\n'
        'over the row in BLOCK_SIZE chunks as the tutorial\'s does."""\n'
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):\n"
        "    row = tl.program_id(0)\n"
        "    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)\n"
        "    sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)\n"
        "    for off in range(0, N, BLOCK_SIZE):\n"
        "        cols = off + tl.arange(0, BLOCK_SIZE)\n"
        "        v = tl.load(X + row * stride + cols, mask=cols < N, other=0.).to(tl.float32)\n"
        "        acc += v\n"
        "        sq += v * v\n"
        "    mean = tl.sum(acc, axis=0) / N\n"
        "    rstd = 1 / tl.sqrt(tl.sum(sq, axis=0) / N - mean * mean + eps)\n"
        "    tl.store(Mean + row, mean)\n"
        "    tl.store(Rstd + row, rstd)\n"
        "    for off in range(0, N, BLOCK_SIZE):\n"
        "        cols = off + tl.arange(0, BLOCK_SIZE)\n"
        "        m = cols < N\n"
        "        v = tl.load(X + row * stride + cols, mask=m, other=0.).to(tl.float32)\n"
        "        y = (v - mean) * rstd * tl.load(W + cols, mask=m) + tl.load(B + cols, mask=m)\n"
        "        tl.store(Y + row * stride + cols, y, mask=m)\n"
    )
    monkeypatch.setenv("TRITUNE_TUTORIALS", str(tmp_path))
    tutorial.cache_clear()
    by_name = {op.name: op for op in OPS}
    try:
        shapes = {"tut_matmul": ((2048, 1024), (1024, 2048)), "tut_matmul@odd": ((3000, 1500), (1500, 2000))}
        for name, (a, b) in shapes.items():
            fn, args = by_name[name].make(torch, "cpu", False)
            out = fn(*args)
            assert tutorial("03").calls[-1] == (a, b, torch.float16, "")
            assert out.shape == (a[0], b[1]) and torch.equal(out, (args[0].float() @ args[1].float()).half())
        fn, args = by_name["tut_layer_norm"].make(torch, "cpu", False)
        x, w, b = args
        assert x.dtype == torch.float16 and abs(float(x.float().mean()) + 2.3) < 0.1  # as the tutorial's test draws x
        want = torch.nn.functional.layer_norm(x.float(), (x.shape[1],), w.float(), b.float(), 1e-5)
        torch.testing.assert_close(fn(*args).float(), want, atol=2e-2, rtol=0)
        configs = fn.__closure__ and [c.cell_contents for c in fn.__closure__ if hasattr(c.cell_contents, "configs")]
        assert configs and [(dict(c.kwargs), c.num_warps) for c in configs[0].configs] == [({"BLOCK_SIZE": 128}, 1)]
        fn, args = by_name["tut_attention"].make(torch, "cpu", False)
        assert fn(*args).shape == args[0].shape and tutorial("06").calls == [(True, 0.5, False)]
        assert all(a.dtype == torch.float16 and not a.requires_grad for a in args)
        assert 0.4 < float(args[0].float().std()) < 0.6  # std 0.5, as the tutorial's test draws q, k and v
        fn, args = by_name["tut_attention_bwd"].make(torch, "cpu", False)
        grads = fn(*args)
        assert all(a.requires_grad and a.is_leaf for a in args)
        assert grads.dtype == torch.float32 and grads.numel() == 3 * args[0].numel()
        assert torch.equal(grads[: args[0].numel()], args[0].grad.float().flatten())  # dq first, dk, dv
        assert torch.equal(fn(*args), grads)  # a second call starts from cleared gradients
    finally:
        tutorial.cache_clear()
        for mod in ("tutorial_03", "tutorial_05", "tutorial_06"):
            sys.modules.pop(mod, None)


def test_an_engine_step_past_its_deadline_is_stopped_and_later_steps_say_why(tmp_path: Path) -> None:
    """A step that overruns its deadline kills the engine's process, after asking it for its threads' stacks (in its
    log: where it stalled); the reply and every later one name why, and closing returns at once. The child here is a
    FAKE engine (a few lines that speak the harness's protocol and print their stacks on SIGUSR1, as engines do)."""
    import time

    from real_libraries import MARK, _Engine

    child = (
        "import faulthandler, json, signal, sys, time\n"
        "faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)\n"
        f"print({MARK!r} + json.dumps({{'ready': True}}), flush=True)\n"
        "for line in sys.stdin:\n"
        "    cmd = json.loads(line)\n"
        "    if cmd['cmd'] == 'quit': break\n"
        "    if cmd['cmd'] == 'hang': time.sleep(600)\n"
        f"    print({MARK!r} + json.dumps({{'ok': True, 'echo': cmd['op']}}), flush=True)\n"
    )
    e = object.__new__(_Engine)
    e.MIN_WAIT_S = 1.0  # the least wait a step gets, shortened for the FAKE child
    e._spawn("fake", [sys.executable, "-c", child], dict(os.environ), tmp_path / "fake.log")
    assert _Engine.MIN_WAIT_S >= 30  # a working step that starts late is not killed for it
    assert e.hello == {"ready": True}
    assert e.ask(time.time() + 60, "answering", cmd="echo", op="a") == {"ok": True, "echo": "a"}
    assert e.ask(time.time() - 5, "late", cmd="echo", op="late") == {"ok": True, "echo": "late"}  # waited MIN_WAIT_S
    t0 = time.time()
    got = e.ask(time.time() + 1, "still tuning at 85% of --budget-s 1", cmd="hang", op="b")
    assert time.time() - t0 < 30 and got["ok"] is False
    assert got["error"] == "stopped after 1 s: still tuning at 85% of --budget-s 1", got
    assert e.proc.poll() is not None  # killed, not left running
    later = e.ask(None, cmd="echo", op="c")
    assert later["ok"] is False and "gone (stopped after 1 s" in later["error"], later
    t0 = time.time()
    e.close()
    assert time.time() - t0 < 5
    log = (tmp_path / "fake.log").read_text()
    assert "most recent call first" in log and 'File "<string>", line 7' in log, log  # stalled in the sleep


def test_the_widen_trap_is_wrong_where_its_block_does_not_divide_and_the_check_refuses_that_neighbour() -> None:
    """``trap_whole_blocks``: its written blocks divide the size, its widened neighbour 256 does not and leaves a tail
    unwritten; under ``widen=True`` the output check refuses 256 before any timing and a written block serves.
    TIMINGS ARE FAKE (larger blocks faster, so 256 would win unchecked); the kernel runs in the interpreter."""
    import real_libraries as rl
    import torch
    import triton

    from tritune.bench import Measurement

    class FakeTimer:
        def measure_config(self, config, budget_s):  # type: ignore[no-untyped-def]
            return Measurement.from_samples([1.0 / config.kwargs["BLOCK"]] * 8, stop="budget")

    jit = rl._smoke_kernels()["whole_blocks"].fn
    n = 128 * 3
    x = torch.randn(n)
    wrong = torch.zeros(n)
    jit[(n // 256,)](x, wrong, n, BLOCK=256)
    assert not torch.equal(wrong, x * 2) and torch.equal(wrong[:256], x[:256] * 2)  # the trap is real

    k = tritune.autotune([triton.Config({"BLOCK": b}) for b in (64, 128)], ["n"], store=False, timer=FakeTimer(),
                         widen=True)(jit)  # fmt: skip
    out = torch.zeros(n)
    k[lambda m: (n // m["BLOCK"],)](x, out, n)
    assert torch.equal(out, x * 2) and k.best_config.kwargs["BLOCK"] in (32, 64, 128)
    (choice,) = k.choices().values()
    assert any(c.startswith("BLOCK=256,") for c in choice.stats["checked"]["other"])
    assert rl._spaces([{"name": "t", "stats": {"k": choice.stats}}])[0]["refused"]


def test_a_resumed_call_skips_the_finished_ops_and_refuses_another_machines(tmp_path: Path) -> None:
    """``--resume``: the ops of an earlier results.json that every engine finished (cold run ok, cached calls timed)
    are not run again; an op cut short is; an earlier call on another GPU or library version is refused in one line
    naming what differs, and one that could not import a library this call imports (or the reverse) is not. Recorded
    rows, no GPU."""
    import json

    from real_libraries import _check_resumed, resumed_rows

    done = {"lib": "x", "triton": {"cold": {"ok": True}, "us": [1.0]}, "tritune": {"cold": {"ok": True}, "us": [0.9]}}
    cut = {"lib": "x", "triton": {"cold": {"ok": True}, "us": [1.0]},
           "tritune": {"cold": {"ok": False, "error": "not run: past 70% of --budget-s 480.0"}}}  # fmt: skip
    prov = {"gpu": "NVIDIA H200", "driver": "580", "torch": "2.11", "triton": "3.6",
            "libs": {"triton": {"flag_gems": None}, "tritune": {"flag_gems": None}},
            "versions": {"triton": {"flag_gems": "5.0.2"}, "tritune": {"flag_gems": "5.0.2"}}}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"provenance": prov, "ops": {"mm": done, "bmm": cut}, "summary": {}}))
    rows, earlier = resumed_rows(path, ("triton", "tritune"))
    assert list(rows) == ["mm"] and earlier == prov
    _check_resumed(path, earlier, {**prov, "versions": {**prov["versions"], "tritune_fresh": {"flag_gems": "5.0.2"}}})
    with pytest.raises(SystemExit, match=r"gpu 'NVIDIA H200' there, 'NVIDIA H100 80GB HBM3' here"):
        _check_resumed(path, earlier, {**prov, "gpu": "NVIDIA H100 80GB HBM3"})
    with pytest.raises(SystemExit, match=r"triton's flag_gems '5.0.2' there, '5.0.3' here"):
        _check_resumed(path, earlier, {**prov, "versions": {"triton": {"flag_gems": "5.0.3", "fla-core": "0.6.0"}}})
    # a library or the tutorials' files that only one call could import: no rows of it to mix, so not refused
    _check_resumed(path, earlier, {**prov, "libs": {"triton": {"flag_gems": None, "tutorials": "FileNotFoundError"}},
                                   "versions": {"triton": {"flag_gems": "5.0.2", "fla-core": "0.6.0"}}})  # fmt: skip
    older = {k: v for k, v in prov.items() if k != "versions"}  # a file written before versions were recorded
    _check_resumed(path, older, prov)
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(SystemExit, match=r"not a results\.json"):
        resumed_rows(tmp_path / "bad.json", ("triton", "tritune"))


def test_provenance_names_each_imported_librarys_distribution_and_version() -> None:
    """A library's version is its distribution's (the module ``fla`` comes from ``fla-core``): read from the
    installed metadata, here of modules this environment has."""
    from importlib import metadata

    from real_libraries import _dist_versions

    got = _dist_versions(["pytest", "no_such_module_anywhere"])
    assert got == {"pytest": metadata.version("pytest")}


class _SimDevice:
    """FAKE CUDA for the winners' judge: one stream on a simulated timeline. The host clock advances by each
    call's host cost; a queued kernel starts when the stream is free and the host has queued it, so a GPU sleep
    covers the queuing of what follows it only while it lasts. Events read the stream's time when reached."""

    def __init__(self, host_us: float, kernel_us: float, waits: bool = False) -> None:
        self.host, self.gpu = 0.0, 0.0  # ms
        self.host_us, self.kernel_us, self.waits = host_us, kernel_us, waits
        sim = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                sim.gpu = max(sim.gpu, sim.host)
                self.t = sim.gpu

            def synchronize(self) -> None:
                sim.host = max(sim.host, sim.gpu)

            def elapsed_time(self, other: Event) -> float:
                return other.t - self.t

        class Cuda:
            def __init__(self) -> None:
                self.Event = Event

            def _sleep(self, cycles: int) -> None:
                sim.enqueue(cycles / 2e6)  # 2 GHz: 2e6 cycles a ms

            def synchronize(self) -> None:
                sim.host = max(sim.host, sim.gpu)

        self.cuda = Cuda()

    def enqueue(self, ms: float) -> None:
        self.gpu = max(self.gpu, self.host) + ms

    def call(self) -> None:  # the library's op: host code, then its kernel; with waits, it synchronizes
        self.host += self.host_us / 1e3
        self.enqueue(self.kernel_us / 1e3)
        if self.waits:
            self.host = max(self.host, self.gpu)

    def perf_counter(self) -> float:
        return self.host / 1e3


@pytest.mark.parametrize("host_us", [20.0, 200.0])
def test_the_winners_judge_times_kernels_not_a_slow_wrapper(monkeypatch, host_us) -> None:
    """A library whose wrapper costs 200 us a call queues a block of 20 calls in 4 ms, longer than the judge's
    first sleep: that block timed the host's launch rate (about 200 us a call for a 6 us kernel), so it is
    timed again behind a sleep that covers it, and the judge reports the kernel's time, as for a fast wrapper."""
    import time

    import real_libraries as rl

    sim = _SimDevice(host_us=host_us, kernel_us=6.0)
    monkeypatch.setattr(time, "perf_counter", sim.perf_counter)
    monkeypatch.setattr(rl.GpuHold, "_cycles_per_ms", 2e6)
    got = rl.remeasure_winners(sim, lambda: sim.call(), (), [], {"triton": [], "other": []}, blocks=6, calls=20)
    assert got["us"] == {"triton": pytest.approx(6.0), "other": pytest.approx(6.0)}
    assert got["waits"] == []
    assert (got["redone"] > 0) == (host_us * 20 / 1e3 > 0.8 * 2.5)  # only the slow wrapper's first blocks
    assert got["redone"] <= 2  # once a side: its sleep then covers every later block


def test_the_winners_judge_stops_growing_its_sleep_for_calls_that_wait(monkeypatch) -> None:
    """An op that synchronizes inside its call queues nothing ahead: no sleep covers it, so the judge stops
    retrying that side after one longer sleep, its sleep back to the first length (it does not grow block
    after block), and says so (``waits``)."""
    import time

    import real_libraries as rl

    sim = _SimDevice(host_us=50.0, kernel_us=6.0, waits=True)
    monkeypatch.setattr(time, "perf_counter", sim.perf_counter)
    monkeypatch.setattr(rl.GpuHold, "_cycles_per_ms", 2e6)
    got = rl.remeasure_winners(sim, lambda: sim.call(), (), [], {"triton": [], "other": []}, blocks=8, calls=20)
    assert got["waits"] == ["other", "triton"] and got["redone"] == 2
    assert got["hold_ms"] == {"triton": 2.5, "other": 2.5}
    # simulated time spent: 16 blocks, each about one 2.5 ms sleep plus 20 calls, and two retried ones
    assert sim.host < 16 * (2.5 + 20 * 0.056) + 2 * 20

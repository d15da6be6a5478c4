"""Search in the loop: the decorator searches a space in batches, the race decides, the store resumes.

FAKES, to test the orchestration on CPU: the GPU check says "a GPU is here", compile workers are
FakeCompiling (each batch's last config is a straggler, the others compile at once; the batches are kept), loading a binary is
faked (one config is refused by the "GPU" like a shared-memory overflow), and the TIMINGS ARE SYNTHETIC:
a made-up landscape replayed through ``Tuner(timer=...)``. The kernel itself runs in Triton's interpreter.
"""

from __future__ import annotations

import json

import pytest
import torch
import triton

import tritune
from fake_compiling import FakeCompiling
from kernels import scale_kernel
from tritune.bench import Failure, ReplayTimer
from tritune.engine import plan as searching
from tritune.engine import precompile as pc
from tritune.engine.race import RaceOptions
from tritune.errors import SearchError
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status
from tritune.search import Strategy, register, unregister
from tritune.store import open_store

CONFIGS = [tritune.Config({"BLOCK": b}, num_warps=w, num_stages=s)
           for b in (64, 128, 256, 512, 1024) for w in (1, 2, 4, 8) for s in (1, 2, 3)]  # fmt: skip
REFUSED = tritune.Config({"BLOCK": 1024}, num_warps=8, num_stages=3)  # FAKE: "the GPU refuses to load it"


def times() -> dict[tritune.Config, float]:  # SYNTHETIC: distinct, well separated (>= 4% apart)
    return {c: 0.010 * (1.04 ** ((i * 7) % len(CONFIGS))) for i, c in enumerate(CONFIGS)}


@pytest.fixture
def fake_gpu(monkeypatch):  # type: ignore[no-untyped-def]
    from tritune.decorator import miss as tuner
    from tritune.store import keys as store_keys

    monkeypatch.setattr(tuner, "gpu_unavailable_reason", lambda: None)  # FAKE: "a GPU is here"
    monkeypatch.setattr(store_keys, "current_device", lambda: ("FAKE GPU", "9.0"))
    monkeypatch.setattr("tritune.device.current_target", lambda: None)

    def load(jit, name, cfg, *a, **k):  # FAKE binary screen
        return Failure(Status.ILLEGAL, f"{name} {cfg.id}: FAKE shared memory") if cfg == REFUSED else {}

    monkeypatch.setattr("tritune.engine.pipeline.load_binary", load)
    batches: list[list[tritune.Config]] = []

    def fake_start(jit, todo, args, kwargs, target, jobs, timeout):  # FAKE compile workers
        batches.append(list(todo))  # the batch's last config is a straggler: the batch races before it lands
        return FakeCompiling(list(todo), {todo[-1]: None}, workers=4)

    monkeypatch.setattr(pc, "start_precompile", fake_start)
    pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in times().items()]

    class Timer:  # FAKE timer: replays the synthetic landscape with 0.5% noise
        def __init__(self) -> None:
            self.replay = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {}, pts), noise=0.005, seed=0)
            self.timed: list[tritune.Config] = []

        def measure_config(self, config, budget_s):  # type: ignore[no-untyped-def]
            self.timed.append(config)
            return self.replay.measure_config(config, budget_s)

    return batches, Timer


def run(k, n: int = 3000) -> None:  # type: ignore[no-untyped-def]
    x = torch.randn(n)
    out = torch.empty_like(x)
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
    assert torch.equal(out, x * 2)


def deco(store, timer, **kw):  # type: ignore[no-untyped-def]
    return tritune.autotune(configs=CONFIGS, key=["n"], store=store, timer=timer, jobs=4,
                            race=RaceOptions(brief_budget_s=0.001, round_budget_s=0.002), **kw)(scale_kernel)  # fmt: skip


def test_search_batches_the_pool_width_the_race_decides_and_the_store_resumes(fake_gpu, tmp_path, monkeypatch):
    batches, Timer = fake_gpu
    monkeypatch.setattr(searching, "ROUNDS", 3)  # 12 given = 3 rounds of the pool: not narrowed (adaptive width)
    db = str(tmp_path / "s.db")
    t = Timer()
    k = deco(db, t, search="random", budget=12)
    run(k)
    (choice,) = k.choices().values()
    s = choice.stats["search"]
    assert [len(b) for b in batches] == [4, 4, 4]  # as wide as the pool (jobs=4), 12 = the budget
    tried = [c for b in batches for c in b]
    assert len(set(tried)) == 12  # never proposed twice
    assert s["strategy"] == "random" and s["evaluated"] == 12 and s["stopped"] == "budget" and s["space"] == 60
    ok = [c for c in tried if c != REFUSED]
    assert choice.config == min(ok, key=times().__getitem__)  # the race's winner over every batch
    assert REFUSED not in t.timed  # screened on its binary: never timed
    st = open_store(db)
    (entry,) = st.entries()
    assert len(st.candidates(entry.key)) == 12  # every measured (or failed) config is recorded
    assert st.lookup_winner(entry.key).provenance["search"]["evaluated"] == 12
    # A larger budget continues: 12 more configs, none of the first 12, the stored ones count.
    batches.clear()
    k2 = deco(db, Timer(), search="random", budget=24)
    run(k2)
    (c2,) = k2.choices().values()
    more = [c for b in batches for c in b]
    again = set(more) & set(tried)  # only the stored winner (and its ties) race again, with the first batch
    assert choice.config in again and len(again) <= 3 and again <= set(batches[0])
    assert len(set(more) - set(tried)) == 12
    assert c2.stats["search"]["resumed"] == 12 and c2.stats["search"]["evaluated"] == 12
    assert len(st.candidates(entry.key)) == 24
    assert times()[c2.config] <= times()[choice.config]
    # The same budget again: the store answers, nothing is compiled or timed.
    batches.clear()
    t3 = Timer()
    k3 = deco(db, t3, search="random", budget=24)
    run(k3)
    assert next(iter(k3.choices().values())).source == "store" and not batches and not t3.timed


def test_a_new_key_starts_from_the_tuned_keys_winners(fake_gpu, tmp_path):
    batches, Timer = fake_gpu
    db = str(tmp_path / "s.db")
    winners = []
    for n in (1000, 2000, 4000):
        k = deco(db, Timer(), search="surrogate", budget=16)
        run(k, n)
        winners.append(next(iter(k.choices().values())).config)
    batches.clear()
    k = deco(db, Timer(), search="surrogate")  # the default budget, a quarter of the cold one with transfer
    run(k, 3000)
    (choice,) = k.choices().values()
    s = choice.stats["search"]
    assert len(s["transfer"]["keys"]) == 3
    assert set(winners) <= set(batches[0])  # the neighbours' winners are measured first
    st = open_store(db)
    seen_there = {r.config for e in st.entries() for r in st.candidates(e.key) if r.status is Status.MEASURED}
    assert set(batches[0]) <= seen_there  # the rest of the first batch: their fastest, not random draws
    # The first batch (as wide as the pool here: 2 x 3 keys + 2 > 4 workers) confirmed a neighbour's winner
    # (SYNTHETIC landscape: the same at every n, so the winners are this key's best): the search stops there,
    # and no second batch was proposed (nor compiled) while the first raced.
    assert len(batches) == 1 and len(batches[0]) == searching.first_batch_size(3, 4) == 4
    assert s["evaluated"] == 4 < searching.default_evaluations(60, 4, transfer=True) == 16
    assert "transfer" in s["budget"] and s["stopped"] == "confirmed"
    assert choice.config in set(winners)


def test_plan_threshold_env_and_errors(monkeypatch):
    monkeypatch.delenv(searching.ENV_VAR, raising=False)
    assert searching.plan(None, None, searching.SEARCH_THRESHOLD) is None  # small spaces race whole
    big = searching.plan(None, None, searching.SEARCH_THRESHOLD + 1)
    assert big is not None and big.strategy == "surrogate" and big.budget is None
    assert searching.plan("exhaustive", None, 10_000) is None
    assert searching.plan(None, "20", 10) is not None  # a budget alone searches
    monkeypatch.setenv(searching.ENV_VAR, "exhaustive")
    assert searching.plan(None, None, 10_000) is None
    monkeypatch.setenv(searching.ENV_VAR, "random")
    assert searching.plan(None, None, 10).strategy == "random"
    with pytest.raises(SearchError, match="mykernel: unknown search strategy 'nope'"):
        searching.plan("nope", None, 10, where="mykernel")
    with pytest.raises(SearchError, match="mykernel: budget '0'"):
        searching.plan("random", "0", 10, where="mykernel")
    with pytest.raises(SearchError, match="drop budget"):
        searching.plan("exhaustive", "10%", 10)
    with pytest.raises(SearchError, match="unknown search strategy"):
        tritune.autotune(configs=CONFIGS, key=["n"], search="nope")(scale_kernel)


@pytest.mark.parametrize(("n_legal", "width", "transfer", "evals"), [
    (2000, 16, False, 96),  # 5% = 100, in whole batches of 16
    (2000, 16, True, 16),  # a quarter: 25, one batch
    (5536, 16, False, 256),  # at most 256
    (513, 16, False, 64),  # at least 64
    (40, 16, False, 40),  # never more than the space
])  # fmt: skip
def test_default_budget(n_legal, width, transfer, evals):
    assert searching.default_evaluations(n_legal, width, transfer=transfer) == evals


@pytest.mark.parametrize(("text", "evals", "secs"), [("10%", 6, None), ("0.5", 30, None), (7, 7, None),
                                                     ("30s", None, 30.0), ("10%+1m", 6, 60.0)])  # fmt: skip
def test_budget_forms_resolve_against_the_legal_space(text, evals, secs):
    b = searching.parse_budget(text).resolve(60)
    assert (b.evaluations, b.seconds) == (evals, secs)


def test_tritune_tune_session_searches_resumes_and_reports(monkeypatch, tmp_path):
    """``tune()`` (what ``tritune tune --strategy --budget`` runs) through FAKE compile workers and a replay
    timer (SYNTHETIC times of tests/ranks/session_workers.py); the kernel runs in Triton's interpreter."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import tune
    from tritune.report.html import _summary as html_summary
    from tritune.report.tables import _summary

    batches: list[list[tritune.Config]] = []

    def fake_start(jit, todo, args, kwargs, target, jobs, timeout):  # type: ignore[no-untyped-def]
        batches.append(list(todo))
        return FakeCompiling(list(todo), {})

    monkeypatch.setattr(pc, "start_precompile", fake_start)
    wl = sw.gelu()
    store = open_store(str(tmp_path / "s.db"))

    def once(budget):  # type: ignore[no-untyped-def]
        opts = TuneOptions(jobs=2, race=sw.OPTS, search="random", budget=budget)
        res = tune([wl], keys=[sw.KEY], ceilings=False, options=opts, store=store, timer=sw.replay_timer(wl, 0), target="sm90",
                   device="cpu", group=None)  # fmt: skip
        doc = json.loads(res.dumps())  # what `tritune tune --json` writes
        assert doc["workloads"][0]["search"]["evaluated"] == res.workloads[0].extra["search"]["evaluated"]
        return res.workloads[0]

    assert len(wl.candidates()) == 4
    w = once(2)
    s = w.extra["search"]
    # 2 given, 2 workers: fewer than ROUNDS rounds of 2, so batches of ceil(2 / 16) = 1 (adaptive width)
    assert [len(b) for b in batches] == [1, 1] and s["evaluated"] == 2 and s["stopped"] == "budget"
    assert s["width"] == 2 and s["batch"] == 1
    assert sum(c.extra.get("searched") is False for c in w.candidates) == 2
    assert s["winner"] == tritune.Config.from_json(w.extra["winner"]).id
    assert "searched with random" in _summary("tune", w) and "2 of 4" in _summary("tune", w)
    assert "searched with random" in html_summary("tune", w) and "stopped: budget" in html_summary("tune", w)
    (entry,) = store.entries()
    assert len(store.candidates(entry.key)) == 2  # the untried configs are not recorded
    batches.clear()
    w2 = once(4)
    assert w2.extra["search"]["resumed"] == 2 and w2.extra["search"]["evaluated"] == 2
    assert len(store.candidates(entry.key)) == 4 and w2.extra["search"]["stopped"] in ("budget", "exhausted")


@pytest.mark.parametrize(("flags", "message"), [
    (["--strategy", "nope"], "unknown search strategy 'nope'"),
    (["--budget", "1.5"], "neither a fraction"),
    (["--budget", "0%"], "percentage"),
    (["--sweep", "--budget", "10%"], "--sweep times every legal config"),
    (["--sweep", "--strategy", "random"], "--sweep times every legal config"),
    (["--exhaustive"], "--exhaustive is now --sweep"),
    (["--strategy", "exhaustive", "--budget", "10%"], "drop budget"),
])  # fmt: skip
def test_tune_cli_refuses_bad_search_flags_before_any_work(flags, message, capsys):
    from pathlib import Path

    from tritune.cli.main import main

    gelu = str(Path(__file__).resolve().parents[2] / "examples" / "gelu.py")
    assert main(["tune", gelu, "--no-store", *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_transfer_batch_wider_than_the_warm_start_is_filled_from_the_neighbours_not_at_random():
    from tritune.search import KeyResults

    ranked = sorted(times(), key=times().__getitem__)
    near = [KeyResults({"n": 1000}, {c: times()[c] for c in ranked[:40]})]  # one tuned key, 40 measured (SYNTHETIC)
    p = searching.plan("surrogate", None, len(CONFIGS))
    driver, info = searching.make_driver(p, CONFIGS, width=16, key_values={"n": 3000}, near=near)
    first = driver.next_batch()
    assert first == ranked[:4]  # a small first batch: the neighbour's winner, then its fastest configs
    assert info["transfer"]["keys"] == [{"n": 1000}] and driver.budget.evaluations == 16
    assert info["transfer"]["first"] == 4 and info["transfer"]["confirm"] is True
    # SYNTHETIC outcomes that do not confirm the transfer: a config other than the winner is 20% faster here.
    for i, c in enumerate(first):
        driver.record(c, (Status.MEASURED, 1.0 if i == 2 else 1.2))
    assert not driver.done
    second = driver.next_batch()
    assert len(second) == 12 and set(first + second) == set(ranked[:16])  # then its fastest, no random draws


def test_neighbours_carry_each_keys_stored_winner_not_its_smallest_median(tmp_path):
    from tritune.store import CandidateRecord
    from tritune.store.keys import TuningKey

    def key(n: int) -> TuningKey:
        return TuningKey("scale_kernel", "src", "3.6.0", "FAKE GPU", "cuda:90", "env", key=(("n", n),))

    st = open_store(str(tmp_path / "n.db"))
    picked, smaller = CONFIGS[0], CONFIGS[1]  # the tie rule picked one a hair slower by its median (SYNTHETIC)
    st.record(key(1000), [CandidateRecord(picked, Status.MEASURED, 1.004, None),
                          CandidateRecord(smaller, Status.MEASURED, 1.0, None)], picked)  # fmt: skip
    (nb,) = searching.neighbours(st, key(2000), CONFIGS)
    assert nb.best == picked and nb.winner() == picked
    p = searching.plan("surrogate", None, len(CONFIGS))
    driver, info = searching.make_driver(p, CONFIGS, width=4, key_values={"n": 2000}, near=[nb])
    assert info["transfer"]["warm"] == [picked.id] and driver.next_batch()[0] == picked


def test_tune_screens_a_workloads_space_once_for_all_its_keys(monkeypatch, tmp_path):
    """The static screen is per kernel and caller kwargs, not per key: counted, through FAKE compile workers
    and a replay timer (SYNTHETIC times); the kernel runs in Triton's interpreter."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline import tune as session
    from tritune.offline.tune import tune

    monkeypatch.setattr(pc, "start_precompile", lambda jit, todo, *a: FakeCompiling(list(todo), {}))
    calls: list[tritune.Config] = []
    real = session.check_static_all

    def counting(cfgs, *a):  # type: ignore[no-untyped-def]  # the real rule check, counted
        calls.extend(cfgs)
        return real(cfgs, *a)

    monkeypatch.setattr(session, "check_static_all", counting)
    wl = sw.gelu()
    keys = [{"n": 4096}, {"n": 8192}, {"n": 2048}]
    opts = TuneOptions(jobs=2, race=sw.OPTS)
    res = tune([wl], keys=keys, ceilings=False, options=opts, store=open_store(str(tmp_path / "s.db")), timer=sw.replay_timer(wl, 0),
               target="sm90", device="cpu", group=None)  # fmt: skip
    assert len(calls) == len(wl.candidates()) == 4  # once, not once per key (12)
    assert [w.key for w in res.workloads] == keys and all(w.extra["winner"] for w in res.workloads)
    for w in res.workloads:
        setup = w.extra["phases"]["setup"]
        assert {"args_s", "oracle_s", "screen_s"} <= set(setup) and w.extra["phases"]["after_s"] >= 0
        prep = w.extra["phases"]["prepare"]  # each candidate's check, and its steps, summed over the key
        steps = [prep["check_restore_s"], prep["check_run_s"], prep["check_compare_s"]]
        assert prep["check_s"] > 0 and all(x > 0 for x in steps) and sum(steps) <= prep["check_s"] + 1e-3
        after = w.extra["phases"]["after_parts"]  # where after_s goes: results, the report, the store's write
        steps_after = [after["results_s"], after["report_s"], after["store_s"]]
        assert set(after) == {"results_s", "report_s", "store_s", "gc_s", "threads"} and min(steps_after) >= 0
        assert 0 <= after["gc_s"] and sum(steps_after) <= w.extra["phases"]["after_s"] + 1e-3
        assert after["threads"] >= 1
        assert "compare_warm_s" not in setup  # the CPU interpreter's tune: no device code to load ahead
        assert setup["refrozen"] is True and w.extra["phases"]["gc_s"] >= 0  # tune() freezes per key
    assert {c.status for c in res.workloads[2].candidates} == {c.status for c in res.workloads[0].candidates}


class NeedleFinals(Strategy):
    """FAKE strategy: asks the legal configs in REVERSE stable order; its finals (``Strategy.finals``) plan one
    probe, the FIRST config in stable order (the synthetic landscape's best), which its ordinary asks reach
    only at the end of the space."""

    name = "fake-needle"

    def wants_finals(self) -> bool:
        return True

    def finals(self, reserve: int) -> int:
        self.planned = reserve  # type: ignore[attr-defined]
        return 1

    def _propose(self, n: int) -> list[tritune.Config]:  # type: ignore[override]
        free = self.unasked()[::-1]
        out = []
        if getattr(self, "planned", 0) and not self.is_asked(0):
            out.append(self.candidates[0])
            self.planned = 0  # type: ignore[attr-defined]
        return out + [self.candidates[i] for i in free if i != 0 or not out][: n - len(out)]


def test_the_tuners_search_asks_the_strategys_finals_and_races_them(fake_gpu, tmp_path, monkeypatch):
    """The decorator's search= loop (engine.searched with the SearchDriver) holds back the finalists' reserve,
    asks the strategy's finals once every batch is back, and compiles, screens and races the probe like any
    batch: the probe here is the true best, which the old loop (no finals) never measured in 12."""
    batches, Timer = fake_gpu
    monkeypatch.setattr(searching, "ROUNDS", 2)  # the 10 searched are 2.5 rounds of the pool: not narrowed
    register("fake-needle", NeedleFinals)
    try:
        t = Timer()
        k = deco(str(tmp_path / "s.db"), t, search="fake-needle", budget=12)
        run(k)
    finally:
        unregister("fake-needle")
    (choice,) = k.choices().values()
    s = choice.stats["search"]
    best = CONFIGS[0]
    assert best == min(times(), key=times().__getitem__)
    assert [len(b) for b in batches] == [4, 4, 2, 2]  # 10, then the reserve of 2 (15% of 12) after the finals
    assert best in batches[-1] and best not in [c for b in batches[:-1] for c in b]
    tried = [c for b in batches for c in b]
    assert len(set(tried)) == len(tried) == 12  # never proposed twice
    assert s["evaluated"] == 12 and s["measured"] == 11 and s["failed"] == 1  # REFUSED, screened on its binary
    assert s["finals"] == {"reserve": 2, "probes": 1, "at": 10}
    assert REFUSED in tried and REFUSED not in t.timed
    assert choice.config == best and best in t.timed


def test_a_strategy_spec_with_options_reaches_the_tuners_driver(tmp_path):
    """search="surrogate:probe=1" (and tritune tune --strategy): the options build the strategy, its finals
    get a reserve; a transfer of a spec keeps them; bad specs fail at planning, naming the kernel."""
    from tritune.search.surrogate import SurrogateSearch
    from tritune.store import CandidateRecord
    from tritune.store.keys import TuningKey

    p = searching.plan("surrogate:probe=1", 20, len(CONFIGS), where="mykernel")
    assert p is not None and p.strategy == "surrogate:probe=1"
    driver, info = searching.make_driver(p, CONFIGS, width=4, key_values={"n": 1})
    assert isinstance(driver.strategy, SurrogateSearch) and driver.strategy.probe == 1.0
    assert driver.held == 3 and info["strategy"] == "surrogate:probe=1"  # 15% of 20 for the finals
    plain, _ = searching.make_driver(searching.plan("surrogate", 20, len(CONFIGS)), CONFIGS, width=4,
                                     key_values={"n": 1})  # fmt: skip
    assert plain.held == 0
    st = open_store(str(tmp_path / "n.db"))
    k = TuningKey("scale_kernel", "src", "3.6.0", "FAKE GPU", "cuda:90", "env", key=(("n", 1000),))
    st.record(k, [CandidateRecord(CONFIGS[0], Status.MEASURED, 1.0, None)], CONFIGS[0])
    k2 = TuningKey("scale_kernel", "src", "3.6.0", "FAKE GPU", "cuda:90", "env", key=(("n", 2000),))
    near = searching.neighbours(st, k2, CONFIGS)
    moved, info = searching.make_driver(p, CONFIGS, width=4, key_values={"n": 2000}, near=near)
    assert moved.strategy.name == "transfer" and moved.strategy.probe == 1.0 and "transfer" in info  # type: ignore[attr-defined]
    with pytest.raises(SearchError, match=r"mykernel: .*key=value"):
        searching.plan("surrogate:probe", None, 10, where="mykernel")
    with pytest.raises(SearchError, match="mykernel: unknown search strategy 'nope:probe=1'"):
        searching.plan("nope:probe=1", None, 10, where="mykernel")
    with pytest.raises(SearchError, match="mykernel: strategy 'surrogate:probe=2': surrogate probe=2 must be a share"):
        searching.make_driver(searching.plan("surrogate:probe=2", 20, 60), CONFIGS, width=4, key_values={},
                              where="mykernel")  # fmt: skip
    with pytest.raises(SearchError, match=r"mykernel: strategy 'surrogate:nope=1'.*nope"):
        searching.make_driver(searching.plan("surrogate:nope=1", 20, 60), CONFIGS, width=4, key_values={},
                              where="mykernel")  # fmt: skip


BIG = [tritune.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
       for m in (16, 32, 64, 128, 256) for n in (16, 32, 64, 128, 256) for k in (32, 64, 128)
       for w in (2, 4, 8) for s in (2, 3, 4)]  # fmt: skip  # 675 legal: searched by default


def _batch_sizes(driver):  # type: ignore[no-untyped-def]
    sizes = []
    while not driver.done:
        batch = driver.next_batch()
        sizes.append(len(batch))
        for i, c in enumerate(batch):
            driver.record(c, (Status.MEASURED, 1.0 + 0.001 * (len(sizes) * 16 + i)))  # SYNTHETIC times
    return sizes


def test_default_tuning_of_a_big_space_keeps_whole_batches_of_the_pool():
    p = searching.plan(None, None, len(BIG))
    assert p is not None and p.budget is None and len(BIG) > searching.SEARCH_THRESHOLD
    driver, info = searching.make_driver(p, BIG, width=16, key_values={"n": 1})
    assert driver.budget.evaluations == 64 and driver.batch_width == 16 and driver.rounds is None
    assert info["budget"] == "default: 64 evaluations"
    assert _batch_sizes(driver) == [16, 16, 16, 16]  # 4 rounds < ROUNDS, but the default budget is not narrowed


@pytest.mark.parametrize(("n_legal", "budget", "sizes"), [
    (168, "25%", [3] * 14),  # 42 of 168 given: fewer than 16 rounds of 16, so ceil(42 / 16) = 3 per batch
    (400, "256", [16] * 16),  # 16 rounds of 16 given: the pool's width
    (400, "150", [10] * 15),  # 150 given: 9.4 rounds of 16, so ceil(150 / 16) = 10
    (168, "30s", None),  # a time budget: the pool's width
])  # fmt: skip
def test_a_small_budget_given_is_asked_in_narrower_batches(n_legal, budget, sizes):
    legal = BIG[:n_legal]
    p = searching.plan(None, budget, len(legal))
    driver, _ = searching.make_driver(p, legal, width=16, key_values={"n": 1})
    assert driver.rounds == searching.ROUNDS == 16
    if sizes is None:
        assert driver.batch_width == 16 and len(driver.next_batch()) == 16
    else:
        assert _batch_sizes(driver) == sizes and driver.summary()["batch"] == max(sizes)


def test_transfer_opening_batch_is_per_tuned_key_even_when_they_agree():
    """The opening batch is 2 per tuned key + 2, also when the keys picked one winner (sizing it by
    distinct winners lost quality in a SYNTHETIC replay of fitted landscape families); ``opening=`` sets
    it for that replay. SYNTHETIC neighbour times (``times()``), no kernel runs."""
    from tritune.search import KeyResults

    t = times()
    won = min(t, key=t.get)
    near = [KeyResults({"n": n}, t, won) for n in (1000, 2000, 4000)]  # three keys, one winner
    plan = searching.SearchPlan("surrogate", None, "test")
    driver, info = searching.make_driver(plan, CONFIGS, width=16, key_values={"n": 3000}, near=near, where="k")
    batch = driver.next_batch()
    assert info["transfer"]["first"] == searching.first_batch_size(3, 16) == 8 == len(batch)
    assert batch[0] == won and set(batch) <= set(t)  # the winner, then the configs they measured fastest
    d4, i4 = searching.make_driver(plan, CONFIGS, width=16, key_values={"n": 3000}, near=near, opening=4)
    assert i4["transfer"]["first"] == 4 and d4.next_batch() == batch[:4]
    assert searching.first_batch_size(1, 16) == 4 and searching.first_batch_size(10, 16) == 16  # the pool's width
    with pytest.raises(SearchError, match="k: opening=0 must be a positive number"):
        searching.make_driver(plan, CONFIGS, width=16, key_values={"n": 3000}, near=near, where="k", opening=0)


def test_the_screen_and_oracle_run_aside_and_the_arguments_on_the_callers_thread(monkeypatch, tmp_path):
    # As on a GPU (session._INLINE_ON_CPU off): the arguments stay on the caller's thread, since a workload's args
    # may set per-thread state that its launches need (the TMA matmul calls triton.set_allocator, a context
    # variable: made on a helper thread, every candidate's launch failed on the H200); the oracle runs aside and
    # still sees that state.
    import contextvars
    import dataclasses
    import sys
    import threading
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline import tune as session
    from tritune.offline.tune import tune

    monkeypatch.setattr(session, "_INLINE_ON_CPU", False)
    monkeypatch.setattr(pc, "start_precompile", lambda jit, todo, *a: FakeCompiling(list(todo), {}))
    state: contextvars.ContextVar[str] = contextvars.ContextVar("state", default="unset")
    seen: dict[str, object] = {}
    base = sw.gelu()

    def args(key, device):  # type: ignore[no-untyped-def]
        seen["args_thread"] = threading.get_ident()
        state.set("set by args")
        return base.make_args(key, device)

    def oracle(inputs):  # type: ignore[no-untyped-def]
        seen["oracle_thread"], seen["oracle_state"] = threading.get_ident(), state.get()
        return base.oracle(inputs)  # type: ignore[misc]

    wl = dataclasses.replace(base, args=args, oracle=oracle)
    opts = TuneOptions(jobs=2, race=sw.OPTS)
    res = tune([wl], keys=[{"n": 4096}], ceilings=False, options=opts, store=open_store(str(tmp_path / "s.db")),
               timer=sw.replay_timer(wl, 0), target="sm90", device="cpu", group=None)  # fmt: skip
    assert seen["args_thread"] == threading.get_ident()
    assert seen["oracle_thread"] != threading.get_ident() and seen["oracle_state"] == "set by args"
    (w,) = res.workloads
    assert w.extra["winner"] and {"screen_wait_s", "oracle_wait_s"} <= set(w.extra["phases"]["setup"])
    assert not any(c.status is Status.INCORRECT for c in w.candidates)


def test_an_oracle_that_raises_aside_still_fails_the_key_with_its_error(monkeypatch, tmp_path):
    # The first check joins the oracle (the first batch's compiles no longer wait for it); an oracle
    # that raises on its helper thread still ends the key with its own error, not as a failure of each candidate.
    import dataclasses
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline import tune as session
    from tritune.offline.tune import tune

    monkeypatch.setattr(session, "_INLINE_ON_CPU", False)
    monkeypatch.setattr(pc, "start_precompile", lambda jit, todo, *a: FakeCompiling(list(todo), {}))
    base = sw.gelu()

    def oracle(inputs):  # type: ignore[no-untyped-def]
        raise ValueError("the oracle broke on these inputs")

    wl = dataclasses.replace(base, oracle=oracle)
    opts = TuneOptions(jobs=2, race=sw.OPTS)
    with pytest.raises(ValueError, match="the oracle broke on these inputs"):
        tune([wl], keys=[{"n": 4096}], ceilings=False, options=opts, store=open_store(str(tmp_path / "s.db")),
             timer=sw.replay_timer(wl, 0), target="sm90", device="cpu", group=None)  # fmt: skip


def test_the_collectors_pauses_are_summed_and_the_callback_never_lingers():
    import gc

    from tritune.offline.tune import _GcPauses

    g = _GcPauses.start("after")
    gc.collect()
    s = g.stop()
    assert s > 0 and g not in gc.callbacks and g.stop() == s  # stopped twice: nothing more
    other = _GcPauses.start("key")  # another tag: left alone
    left = _GcPauses.start("after")  # never stopped (a step raised): the next start of its tag removes it
    nxt = _GcPauses.start("after")
    assert left not in gc.callbacks and nxt in gc.callbacks and other in gc.callbacks
    nxt.stop()
    other.stop()
    assert not any(isinstance(c, _GcPauses) for c in gc.callbacks)

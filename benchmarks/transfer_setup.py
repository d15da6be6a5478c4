"""A new key's fixed costs on the CPU (issue 16): the static screen, the search's start and the store write of a
transfer from 3 tuned keys, next to a cold search's, on ``search_tune.py``'s 6,912-candidate matmul space.

    PYTHONPATH=src python3 benchmarks/transfer_setup.py [--out DIR] [--repeat 5]

No GPU: ``tune()`` runs with ``device="cpu"`` and nothing is launched (verification off, no compile target) and
the TIMINGS ARE SYNTHETIC (a made-up landscape replayed by ReplayTimer). What it measures is the host work the
H200 run's phases name (``search_tune.py --only transfer``): ``screen_s`` (the static rules over every
candidate), ``search_start_s`` (the store's records of the tuned keys, the transfer's prior and warm start),
``after_s`` (the results and the store's write: a searched key writes the configs it tried, not the ~4,900 the
static rules rejected, which it wrote before: ``session.record``). The 3 keys are tuned into a SQLite store
first; then the new key is tuned into a copy of it (transfer) and into an empty store (cold), each in a fresh
process-like state (the screen cache is per ``tune()`` call). Then each part alone, the fastest of
``--repeat`` runs: ``screen_static``, ``start_driver`` (transfer and cold) and ``store.record`` of the new key's
records (``store_write_s``: the first batch's, what a searched key writes now; ``store_write_all_s``: with the
statically illegal ones, what it wrote before). Compare two trees by running it with each on ``PYTHONPATH``.

``--proposals FILE``: every batch that 8 searches of the new key propose (transfer and cold, the default budget
and 10%, on ``synthetic_ms`` and on :func:`shifted_ms`, whose optimum the neighbours' winners miss), seed 0, into
FILE as JSON: two trees that must propose the same give the same file (``cmp``).

``--fresh N``: the new key's transfer and cold search also run N times each in a FRESH process (this script
with ``--child``), as on the H200 (``search_tune.py`` tunes the new key in its own ``tritune tune`` process):
nothing of the 3 keys' tuning is warm there (imports such as ``numpy.random``, decoded store rows), which the
in-process ``transfer``/``cold`` runs above have. It prints the fastest ``search_start_s`` of each
(``fresh_start_transfer_s``, ``fresh_start_cold_s``) and the batches, which must be the in-process runs'.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import search_tune as st  # noqa: E402

from tritune.bench import ReplayTimer  # noqa: E402
from tritune.config import Config  # noqa: E402
from tritune.engine import plan as searching  # noqa: E402
from tritune.engine.options import TuneOptions  # noqa: E402
from tritune.engine.race import RaceOptions  # noqa: E402
from tritune.landscape import Landscape, LandscapePoint  # noqa: E402
from tritune.offline.tune import screen_static, tune  # noqa: E402
from tritune.outcome import Status  # noqa: E402
from tritune.store import CandidateRecord, make_key, open_store  # noqa: E402


def synthetic_ms(c: Config) -> float:
    """SYNTHETIC: a smooth landscape around 128x256x64 tiles, 3 stages, GROUP_M=16, subtiled, plus seeded jitter."""
    jitter = random.Random(c.id).random()
    return (1.0 + 0.1 * abs(math.log2(c["BLOCK_M"] / 128)) + 0.1 * abs(math.log2(c["BLOCK_N"] / 256))
            + 0.05 * abs(math.log2(c["BLOCK_K"] / 64)) + 0.02 * abs(c.num_stages - 3)
            + 0.01 * (c["GROUP_M"] != 16) + 0.03 * (c["EPILOGUE_SUBTILE"] != 2) + 0.05 * jitter)  # fmt: skip


def shifted_ms(c: Config) -> float:
    """SYNTHETIC: ``synthetic_ms`` with its optimum at 256x128 tiles and 4 stages, where no tuned key's winner is."""
    jitter = random.Random(c.id + "s").random()
    return (1.0 + 0.1 * abs(math.log2(c["BLOCK_M"] / 256)) + 0.1 * abs(math.log2(c["BLOCK_N"] / 128))
            + 0.05 * abs(math.log2(c["BLOCK_K"] / 64)) + 0.02 * abs(c.num_stages - 4) + 0.05 * jitter)  # fmt: skip


def proposals(legal: list[Config], stores: dict[str, Any], tkey: Any) -> dict[str, Any]:
    """Every batch of each search of ``--proposals`` (module docstring), its stop and its best config."""
    out: dict[str, Any] = {}
    for who, store in stores.items():
        for lname, f in (("synthetic", synthetic_ms), ("shifted", shifted_ms)):
            for budget in (None, "10%"):
                p = searching.plan(None, budget, len(legal))
                assert p is not None
                d, _ = searching.start_driver(p, legal, store=store, tkey=tkey, key_values=st.NEW_KEY, where="new",
                                              width=16)  # fmt: skip
                batches = []
                while not d.done and (batch := d.next_batch()):
                    batches.append([c.id for c in batch])
                    for c in batch:
                        d.record(c, f(c))
                out[f"{who}/{lname}/{budget or 'default'}"] = {"batches": batches, "stopped": d.why_stopped,
                                                               "best": d.best.config.id if d.best else None}  # fmt: skip
    return out


def fastest(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return round(best, 4), out


def fresh_runs(n: int, three: Path, tmp: Path) -> dict[str, Any]:
    """The new key tuned ``n`` times each as a transfer (into a copy of ``three``) and cold, each in a fresh
    process (module docstring): the fastest ``search_start_s`` of each and every run's batches and winner."""
    out: dict[str, Any] = {}
    for who in ("transfer", "cold"):
        runs = []
        for i in range(n):
            db = tmp / f"fresh-{who}-{i}.db"
            if who == "transfer":
                st.copy_store(three, db)
            got = subprocess.run([sys.executable, __file__, "--child", str(db)], check=True, capture_output=True,
                                 text=True)  # fmt: skip
            runs.append(json.loads(got.stdout.strip().splitlines()[-1]))
        out[f"fresh_start_{who}_s"] = min(r["setup"]["search_start_s"] for r in runs)
        out[f"fresh_{who}_runs"] = runs
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="write transfer_setup.json here")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each part alone (the fastest is reported)")
    ap.add_argument("--proposals", type=Path, default=None, help="write every proposed batch here and stop")
    ap.add_argument("--fresh", type=int, default=0, help="also tune the new key this many times in fresh processes")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)  # --fresh's process: tune into DB
    a = ap.parse_args()
    wl = st.matmul_search
    kw = wl.caller_kwargs(st.NEW_KEY)
    screened = screen_static(wl, kw)
    legal = list(screened.legal)
    points = [LandscapePoint(c, Status.MEASURED, synthetic_ms(c)) for c in legal]
    timer = ReplayTimer(Landscape.from_points(wl.name, "synthetic", st.NEW_KEY, points), noise=0.01, seed=0)
    opts = TuneOptions(jobs=16,
                       race=RaceOptions(brief_budget_s=0.001, round_budget_s=0.003))  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="transfer-setup-"))

    def run(keys: list[dict[str, int]], db: Path) -> list[dict[str, Any]]:
        res = tune([wl], keys=keys, ceilings=False, verify=False, options=opts, store=open_store(db), timer=timer, target=None, device="cpu",
                   group=None)  # fmt: skip
        out = []
        for w in res.workloads:
            ph, s = w.extra["phases"], w.extra.get("search") or {}
            out.append({"key": w.key, "wall_s": w.extra["wall_s"], "setup": ph["setup"], "after_s": ph["after_s"],
                        "after_parts": ph.get("after_parts"), "batches": [b["configs"] for b in ph.get("batches", [])], "stopped": s.get("stopped"),
                        "winner": s.get("winner")})  # fmt: skip
        return out

    if a.child is not None:  # one fresh process's new key (--fresh): its phases as one JSON line
        (r,) = run([st.NEW_KEY], a.child)
        print(json.dumps({k: r[k] for k in ("setup", "after_s", "after_parts", "batches", "stopped", "winner")}))
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    result: dict[str, Any] = {"space": len(screened.candidates), "legal": len(legal)}
    result["three_keys"] = run(st.KEYS, tmp / "three.db")
    st.copy_store(tmp / "three.db", tmp / "transfer.db")  # SQLite's backup: a file copy would miss the WAL
    (result["transfer"],) = run([st.NEW_KEY], tmp / "transfer.db")
    (result["cold"],) = run([st.NEW_KEY], tmp / "cold.db")
    for who in ("transfer", "cold"):
        r = result[who]
        print(f"{who}: wall {r['wall_s']} s (args {r['setup']['args_s']} s), screen {r['setup']['screen_s']} s, "
              f"search start {r['setup'].get('search_start_s')} s, after {r['after_s']} s; batches {r['batches']}, "
              f"stopped {r['stopped']}, winner {r['winner']}")  # fmt: skip

    store = open_store(tmp / "three.db")
    k0 = store.entries(wl.info.name)[0].key
    tkey = make_key(wl.info, dict(st.NEW_KEY), dtypes=k0.dtypes, device=(k0.device, k0.capability), measure=k0.measure)
    if a.proposals is not None:
        found = proposals(legal, {"transfer": store, "cold": open_store(tmp / "none.db")}, tkey)
        a.proposals.write_text(json.dumps(found, indent=1) + "\n")
        print(f"proposals of {len(found)} searches -> {a.proposals}")
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    plan = searching.plan(None, None, len(legal))
    assert plan is not None
    alone: dict[str, float] = {}
    alone["screen_s"], _ = fastest(lambda: screen_static(wl, kw), a.repeat)
    alone["start_transfer_s"], (driver, info) = fastest(
        lambda: searching.start_driver(plan, legal, store=store, tkey=tkey, key_values=st.NEW_KEY, where=wl.name,
                                       width=16), a.repeat)  # fmt: skip
    empty = open_store(tmp / "empty.db")
    alone["start_cold_s"], _ = fastest(
        lambda: searching.start_driver(plan, legal, store=empty, tkey=tkey, key_values=st.NEW_KEY, where=wl.name,
                                       width=16), a.repeat)  # fmt: skip
    tried = [CandidateRecord(c, Status.MEASURED, synthetic_ms(c), None) for c in driver.next_batch()]
    illegal = [CandidateRecord(c, v.status, None, v.reason) for c, v in screened.verdict.items()]

    def write(recs: list[CandidateRecord]) -> float:
        (tmp / "w.db").unlink(missing_ok=True)
        st.copy_store(tmp / "three.db", tmp / "w.db")
        w = open_store(tmp / "w.db")
        t = time.perf_counter()
        w.record(tkey, recs, recs[0].config)
        took = time.perf_counter() - t
        w.close()
        return took

    for name, recs in (("store_write", tried), ("store_write_all", tried + illegal)):
        alone[f"{name}_s"] = round(min(write(recs) for _ in range(a.repeat)), 4)
        alone[f"{name}_records"] = len(recs)
    if a.fresh > 0:
        fresh = fresh_runs(a.fresh, tmp / "three.db", tmp)
        for who in ("transfer", "cold"):
            alone[f"fresh_start_{who}_s"] = fresh[f"fresh_start_{who}_s"]
            same = all(r["batches"] == result[who]["batches"] and r["winner"] == result[who]["winner"]
                       for r in fresh[f"fresh_{who}_runs"])  # fmt: skip
            alone[f"fresh_{who}_as_in_process"] = same
        result["fresh"] = fresh
    result["alone"] = alone
    result["transfer_info"] = info.get("transfer")
    print(f"alone (fastest of {a.repeat}): {json.dumps(alone)}")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "transfer_setup.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

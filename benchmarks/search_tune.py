"""Search in the loop on the GPU: a Hopper matmul space of 1,672 configs, default search vs exhaustive.

    PYTHONPATH=src python benchmarks/search_tune.py --out DIR [--quick] [--exhaustive-keys 1|3] [--only transfer]
        [--descriptors host|device]

The space is ``examples/matmul_tma_wide.py``'s with ``num_ctas=1`` and ``maxnreg`` in {none, 168}: 2,000
legal configs before the screen (tiles, ``GROUP_M``, epilogue subtiling, warp specialization, warps,
stages, a register cap). ``--descriptors host`` (the default) tunes it on
``matmul_tma_host_kernel``, whose A, B and C are host ``TensorDescriptor``s shaped per config by the workload's
``pre_hook`` (tutorial 09's fastest form: 0.989-0.991 of cuBLAS against 0.975-0.976 for descriptors made on the
device, on an H200); warp specialization fails to compile over host descriptors, so that space is the
1,672 configs without it. ``--descriptors device``: the 2,000-config space on ``matmul_tma_kernel``. Every engine runs as its own
``tritune tune`` process with an EMPTY Triton cache (a fresh ``TRITON_CACHE_DIR``) and its own store:

1. ``exhaustive``: ``--strategy exhaustive`` (tritune's own race over every legal config) at 4096^3 only by
   default: compiling 2,000 configs takes minutes, and the whole run must fit in ~8 minutes on an H200
   with 16 cores (``--exhaustive-keys 3`` times all three keys);
2. ``search``: the default (no flag: the space is above the search threshold), keys 4096^3, 8192x8192x4096
   and 4096x4096x8192 in one process;
3. ``transfer``: a new key, 6144^3, into the store of step 2 (its 3 tuned keys seed the search);
4. ``cold_new``: the same new key with an empty store (the cold search it is compared to).

**The new key's comparison is fair.** After step 2, its Triton cache is copied once into a snapshot; steps
3 and 4 each start from their own copy of that snapshot (``--new-key-cache shared``): a new key arrives on a
machine that tuned the other three, both searches may reuse what the 3-key search compiled (the matmul's
binaries do not depend on M, N, K beyond their divisibility by 16), and neither sees what the other compiled.
With ``--new-key-cache both`` (the default) the transfer and the cold search also run each from an EMPTY
cache (``transfer_empty``, ``cold_empty``), and both ratios are printed. With ``--new-key-process both`` (the
default) or ``warm`` they also run each in a WARM process (``transfer_warm``, ``cold_new_warm``, from the
snapshot): before ``tritune tune`` runs in it, the process launches the kernel once at 4096^3 with that key's
stored winner and calls cuBLAS once (:func:`warm_child`), as a process serving the kernel has when a new key
arrives. Both processes are warmed alike, so the ratio is the key's own cost without the once-per-process
imports and initializations a fresh process pays in its first key (Triton's code generator, ~0.2 s on the
H200 host; cuBLAS's start, ~0.12 s), which weigh more on the short transfer than on the cold search. (The cold search's seed is the 3-key
search's, so its first batches are the ones step 2 compiled for 4096^3: from the snapshot it compiles little.)

The arguments are drawn on the GPU (``--args device``, :func:`search_args`): ``matmul_tma_args`` draws them
on the CPU, ~0.5 s per key at 6144^3, a cost of the workload and not of tuning, that both the cold search and
the transfer would pay (``--args cpu`` keeps it). Each key's ``setup`` phases (arguments, oracle, static
screen, the search's start) and ``after_s`` (results and the store's write) are printed with its batches.

Then, in this process, an interleaved re-measurement (rounds in rotating order, tritune's event timer, L2
flushed): at 4096^3 the search winner, the exhaustive run's 3 fastest configs and ``torch.matmul``
(cuBLAS); at 6144^3 the transfer winner and the cold search's winner. It prints and writes to
``DIR/search_tune.json``:

* ``search wall / exhaustive wall`` at 4096^3 (each engine's in-process wall for the key; target <= 0.2);
* ``quality``: search winner time / best of the exhaustive top 3, re-measured (target <= 1.02);
* ``vs cuBLAS``: cuBLAS time / search winner time at 4096^3 (target >= 0.98), from the interleaved rounds and
  pair by pair (:func:`paired_ratio`: both calls of a pair at one clock);
* ``transfer wall / cold search wall`` at 6144^3 (target <= 0.25) and the transfer winner's quality
  against the cold search's winner (<= 1.02).

``--quick`` re-measures in 8 rounds instead of 16. ``--only transfer`` runs steps 2-4 and the 6144^3
re-measurement only (no exhaustive race: about 80 s on the H200). Each tune's JSON result and log are kept
in DIR (``SEARCH_PROFILE=1``: the transfer once more under cProfile, after the measured runs, its top
functions by cumulative time in ``DIR/transfer_prof-profile.txt``), and each key's phases (store and setup, every batch's compile and race, the strategy's asks, the
final race) are in ``search_tune.json`` and printed, with every config a transfer or cold search measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import matmul_tma_wide as wide  # noqa: E402

import tritune  # noqa: E402
from tritune.workload import output_tensor  # noqa: E402


def search_args(key: Mapping[str, int], device: str) -> tuple[Any, ...]:
    """``matmul_tma_args``' arguments (the same shapes, scale and strides), drawn on ``device`` by a seeded
    generator there instead of on the CPU (module docstring); ``SEARCH_ARGS=cpu``: the example's own."""
    if device == "cpu" or os.environ.get("SEARCH_ARGS", "device") == "cpu":
        return wide.matmul_tma_args(key, device)  # type: ignore[no-any-return]
    import matmul_tma
    import torch
    import triton

    triton.set_allocator(matmul_tma._scratch)
    m, n, k = key["M"], key["N"], key["K"]
    gen = torch.Generator(device=device).manual_seed(0)
    a = (torch.randn(m, k, generator=gen, device=device) / k**0.25).to(torch.float16)
    b = (torch.randn(k, n, generator=gen, device=device) / k**0.25).to(torch.float16)
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    return (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))


def search_host_args(key: Mapping[str, int], device: str) -> tuple[Any, ...]:
    """:func:`search_args`' tensors as host ``TensorDescriptor``s (``matmul_tma_host_kernel``'s arguments): their
    block shapes are set per config by the workload's ``pre_hook`` (``set_descriptor_blocks``)."""
    from matmul_tma import as_host_descriptors

    return as_host_descriptors(search_args(key, device))  # type: ignore[no-any-return]


SEARCH_GRID = {**wide.WIDE_GRID, "num_ctas": [1], "maxnreg": [None, 168]}
SEARCH_SPACE = tritune.Space(SEARCH_GRID, constraints=wide.CONSTRAINTS)
SEARCH_HOST_SPACE = tritune.Space(SEARCH_GRID, constraints=wide.HOST_CONSTRAINTS)
KEYS = wide.WIDE_KEYS  # 4096^3, 8192x8192x4096, 4096x4096x8192
NEW_KEY = {"M": 6144, "N": 6144, "K": 6144}

def _search_workload(host: bool) -> tritune.Workload:
    """The benchmark's space on the kernel with host descriptors (shaped by the ``pre_hook``) or device ones."""
    return wide.make_workload("matmul_search_host" if host else "matmul_search", KEYS, wide.persistent_grid,
                              host=host, configs=SEARCH_HOST_SPACE if host else SEARCH_SPACE,
                              args=search_host_args if host else search_args)  # fmt: skip


matmul_search = _search_workload(host=False)
matmul_search_host = _search_workload(host=True)

#: ``--descriptors``: the kernel's descriptors made on the device (``matmul_search``) or passed from the host
#: (``matmul_search_host``: tutorial 09's fastest form, 1.5% faster on the H200).
WORKLOADS = {"device": matmul_search, "host": matmul_search_host}


def workload() -> tritune.Workload:
    """The workload this run tunes (``--descriptors``; the child processes get it by ``SEARCH_WORKLOAD``)."""
    return WORKLOADS[os.environ.get("SEARCH_WORKLOAD", "host")]


def key_arg(key: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in key.items())


def warm_child(cfg_id: str, cli: Sequence[str]) -> int:
    """The warm process (``--new-key-process warm``): first what a process that already runs the kernel has
    done, the kernel launched once at the first tuned key with ``cfg_id`` (its stored winner: Triton's compiler
    imported, the launcher loaded) and one cuBLAS call, then ``tritune tune`` ``cli`` in this process."""
    import torch

    from tritune.cli.main import main as tritune_main

    w = workload()
    cfg = next((c for c in w.space.configs() if c.id == cfg_id), None)
    if cfg is None:
        raise SystemExit(f"search_tune.py --child-warm: {cfg_id} is not a config of the benchmark's space")
    args = w.make_args(KEYS[0], "cuda")
    launch(KEYS[0], cfg, args)()
    torch.matmul(output_tensor(args[0])[:256, :256], output_tensor(args[1])[:256, :256])
    torch.cuda.synchronize()
    return tritune_main(list(cli))


def tune_process(name: str, out: Path, keys: Sequence[Mapping[str, int]], store: Path, *extra: str,
                 cache_from: str | None = None, args: str = "device", profile: bool = False,
                 warm: tritune.Config | None = None) -> dict[str, Any]:  # fmt: skip
    """One ``tritune tune`` process with an empty Triton cache, or a copy of ``cache_from`` (another run's
    cache); its JSON result, process wall, per-key walls and the cache directory it used. ``warm``: the
    process first launches the kernel with this config and calls cuBLAS (:func:`warm_child`)."""
    cache = tempfile.mkdtemp(prefix=f"tcache-{name}-")
    if cache_from is not None:
        shutil.copytree(cache_from, cache, dirs_exist_ok=True)
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "SEARCH_ARGS": args}
    env.pop("TRITUNE_SEARCH", None)
    prof = [sys.executable, "-m", "cProfile", "-o", str(out / f"{name}.prof")] if profile else [sys.executable]
    head = [__file__, "--child-warm", warm.id] if warm is not None else ["-m", "tritune"]
    cmd = [*prof, *head, "tune", __file__, "--workload", workload().name, "--quiet",
           "--store", str(store), "--json", str(out / f"{name}.json"), *extra]  # fmt: skip
    for k in keys:
        cmd += ["--key", key_arg(k)]
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    with open(out / f"{name}.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - t0
    if profile and (out / f"{name}.prof").exists():  # the top of the profile as text (the .prof stays too)
        import io
        import pstats

        text = io.StringIO()
        st = pstats.Stats(str(out / f"{name}.prof"), stream=text).sort_stats("cumulative")
        st.print_stats(80)
        # Inside the key: what its batches' loads, checks and first timings call (the .prof is not kept).
        for fn in ("tune_key", "compile_and_race", "load_binary", "check_candidate", "_warm_up", "measure"):
            st.print_callees(fn)
        st.sort_stats("tottime").print_stats(40)
        (out / f"{name}-profile.txt").write_text(text.getvalue())
    doc = json.loads((out / f"{name}.json").read_text()) if (out / f"{name}.json").exists() else {"workloads": []}
    keyed = []
    for w in doc["workloads"]:
        best = tritune.Config.from_json(w["winner"]) if w.get("winner") else None
        measured = sorted(
            ((c["measurement"]["median_ms"], tritune.Config.from_json(c["config"]))
             for c in w["candidates"] if c["status"] == "measured" and c.get("measurement")),
            key=lambda t: t[0],
        )  # fmt: skip
        phases = phase_summary(w)
        keyed.append({"key": w["key"], "wall_s": w.get("wall_s"), "winner": best, "search": w.get("search"),
                      "top": [c for _, c in measured[:3]], "winner_ms": measured[0][0] if measured else None,
                      "measured": len(measured), "phases": phases,
                      "times": [[c.id, round(t, 5)] for t, c in measured]})  # fmt: skip
        s = w.get("search") or {}
        print(f"   {w['key']}: {w.get('wall_s')} s, winner {best.id if best else None}, "
              f"{len(measured)} measured" + (f", searched {s.get('evaluated')} ({s.get('stopped')})" if s else ""),
              flush=True)  # fmt: skip
        if phases:
            print(f"      phases: {json.dumps(phases, default=str)}", flush=True)
    print(f"   rc={rc} process wall {wall:.1f} s", flush=True)
    return {"rc": rc, "process_wall_s": round(wall, 2), "keys": keyed, "cache": cache}


def copy_store(src: Path, dst: Path) -> None:
    """A copy of a SQLite store, WAL included (SQLite's backup API, not a file copy)."""
    import sqlite3

    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


def phase_summary(w: Mapping[str, Any]) -> dict[str, Any]:
    """Where one key's wall went: each batch's seconds and compile phase, the strategy's asks (those proposed
    while a batch compiles are inside its seconds too), the final race, the race's device time, and the rest
    outside the batches (the key's setup: store reads, screen, arguments, oracle, the strategy's first ask)."""
    ph = w.get("phases") or {}
    batches = ph.get("batches") or []
    race = w.get("race") or {}
    final = ph.get("final_race") or {}
    check = ph.get("check_race") or {}
    inside = (sum(float(b.get("s") or 0) for b in batches) + float(final.get("s") or 0)
              + float(check.get("s") or 0))  # asks: some in both  # fmt: skip
    wall = w.get("wall_s")
    return {"setup": ph.get("setup"), "after_s": ph.get("after_s"), "after_parts": ph.get("after_parts"),
            "batches": [{k: b.get(k) for k in ("configs", "s", "compiled_s", "prepare_s", "raced_s", "leader")}
                        for b in batches],
            "prepare": ph.get("prepare"),
            "first_race": ph.get("first_race"), "ask_s": ph.get("ask_s"), "final_race": final or None,
            "check_race": check or None,
            "race_device_s": race.get("device_s"), "race_stop": race.get("stop"),
            "outside_batches_s": round(float(wall) - inside, 3) if wall is not None else None}  # fmt: skip


def interleave(fns: Mapping[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Median ms of each contestant over ``rounds`` rounds in rotating order (tritune's event timer)."""
    from tritune.bench import EventTimer

    timer = EventTimer()
    timer.warm_device(0.2)
    names = list(fns)
    rows: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            rows[n].append(timer.measure(fns[n], budget_s=0.05).median_ms)
    return {n: statistics.median(v) for n, v in rows.items()}


class Plain:
    """CUDA events around single calls after a 256 MB memset , optionally with a
    GPU spin between the memset and the start event; the median of ``reps`` calls."""

    def __init__(self, pad_us: float = 0.0) -> None:
        self.buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        self.pad_cycles = 0
        if pad_us > 0:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1_000_000)
            s.record()
            torch.cuda._sleep(1_000_000)
            e.record()
            e.synchronize()
            self.pad_cycles = int(pad_us * 1_000_000 / max(s.elapsed_time(e) * 1e3, 1.0))

    def __call__(self, fn: Any, reps: int = 20) -> float:
        fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.buf.zero_()
            if self.pad_cycles:
                torch.cuda._sleep(self.pad_cycles)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def paired(a: Any, b: Any, pairs: int, pad_us: float = 20.0) -> tuple[list[float], list[float]]:
    """Times of ``a`` and ``b`` in ``pairs`` adjacent pairs (order alternating), each call after a 256 MB memset
    and a ``pad_us`` spin, in batches of 50 pairs between synchronizations."""
    plain = Plain(pad_us=pad_us)
    a(), b()
    ta: list[float] = []
    tb: list[float] = []
    done = 0
    while done < pairs:
        n = min(50, pairs - done)
        evs = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(n)]
        for i, (s0, e0, s1, e1) in enumerate(evs):
            first, second = (a, b) if (done + i) % 2 == 0 else (b, a)
            for fn, s, e in ((first, s0, e0), (second, s1, e1)):
                plain.buf.zero_()
                torch.cuda._sleep(plain.pad_cycles)
                s.record()
                fn()
                e.record()
        torch.cuda.synchronize()
        for i, (s0, e0, s1, e1) in enumerate(evs):
            x, y = s0.elapsed_time(e0), s1.elapsed_time(e1)
            if (done + i) % 2:
                x, y = y, x
            ta.append(x)
            tb.append(y)
        done += n
    return ta, tb


def _paired_ratio(a: Any, b: Any, pairs: int) -> tuple[float, list[float], float, list[float], list[float]]:
    """``b``'s time / ``a``'s, pair by pair (:func:`paired`): the median ratio, its 99% interval (ranks of the
    median) and that interval's coverage, and both contestants' times."""
    from tritune.bench import median_ci_ranks

    t_a, t_b = paired(a, b, pairs)
    r = sorted(y / x for x, y in zip(t_a, t_b))
    lo, hi, cover = median_ci_ranks(len(r), 0.99)
    return statistics.median(r), [r[lo], r[hi]], cover, t_a, t_b


def paired_ratio(ours: Callable[[], None], blas: Callable[[], None], pairs: int = 400) -> dict[str, Any]:
    """cuBLAS time / ``ours`` pair by pair (:func:`paired`: adjacent calls, alternating order, each after a flush
    and a spin): both calls of a pair run at one clock, which a GPU at its power limit moves by up to 10% between
    rounds under a 4096^3 matmul (H200). The median and its 99% interval."""
    median, ci99, _, t_ours, t_blas = _paired_ratio(ours, blas, pairs)
    return {"median": median, "ci99": ci99, "pairs": pairs,
            "ours_ms": statistics.median(t_ours), "cublas_ms": statistics.median(t_blas)}  # fmt: skip


def launch(key: Mapping[str, int], cfg: tritune.Config, args: Any) -> Callable[[], None]:
    from matmul_vs_cublas import launcher

    return launcher(workload(), cfg, key, args)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory for the JSON results and logs")
    ap.add_argument("--quick", action="store_true", help="8 interleaved rounds instead of 16")
    ap.add_argument("--descriptors", choices=sorted(WORKLOADS), default="host",
                    help="host (default): the kernel takes host TensorDescriptors shaped per config by the "
                    "workload's pre_hook; device: it makes them itself (matmul_search)")  # fmt: skip
    ap.add_argument("--exhaustive-keys", type=int, choices=(1, 3), default=1)
    ap.add_argument("--only", choices=("transfer",), help="transfer: the 3-key search, the new key's transfer and "
                    "cold search and their interleaved re-measurement only (no exhaustive race)")  # fmt: skip
    ap.add_argument("--new-key-cache", choices=("both", "shared", "empty"), default="both",
                    help="the Triton cache the new key's transfer and cold search each start from: a copy of one "
                    "snapshot of the 3-key search's (shared, as on a machine that tuned them), an empty one, or "
                    "both pairs (module docstring)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=1, help="run each new-key pair (transfer, cold) this many times; "
                    "every ratio is printed, and their median")  # fmt: skip
    ap.add_argument("--args", choices=("device", "cpu"), default="device",
                    help="draw the matmul's arguments on the GPU (default) or on the CPU as matmul_tma_args does")
    ap.add_argument("--new-key-process", choices=("both", "fresh", "warm"), default="both",
                    help="the new key's transfer and cold search each in a fresh process (as `tritune tune` "
                    "runs), in a warm one (the kernel already launched, cuBLAS used: a process serving the "
                    "kernel meets a new key), or both pairs (module docstring)")  # fmt: skip
    ap.add_argument("--transfer-variant", metavar="SPEC",
                    help="also run, in every pair after its transfer and from the same store copy and cache, a "
                    "transfer with `tritune tune --strategy SPEC` (surrogate:cached_next=true): an A/B against the "
                    "default transfer, its wall over the same cold search's")  # fmt: skip
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child-warm"]:
        return warm_child(argv[1], argv[2:])
    a = ap.parse_args(argv)
    os.environ["SEARCH_WORKLOAD"] = a.descriptors  # this process and every tune process it starts
    import torch

    from tritune.bench.provenance import provenance

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stores = Path(tempfile.mkdtemp(prefix="search-stores-"))
    print(f"space: {len(workload().space.configs())} legal configs before the screen ({workload().name})",
          flush=True)  # fmt: skip
    t0 = time.perf_counter()
    runs: dict[str, Any] = {}
    if a.only != "transfer":
        runs["exhaustive"] = tune_process("exhaustive", out, KEYS[: a.exhaustive_keys], stores / "ex.db",
                                          "--strategy", "exhaustive")  # fmt: skip
    runs["search"] = tune_process("search", out, KEYS, stores / "search.db", args=a.args)
    # The new key is tuned where the 3 keys were: the transfer and the cold search each start from their own
    # copy of ONE snapshot of the search run's Triton cache, taken now (neither sees the other's compiles);
    # with --new-key-cache both/empty, each also from an empty cache. The store of the transfer runs is a copy
    # of the 3-key search's, so the two transfers start from the same 3 tuned keys.
    snapshot = tempfile.mkdtemp(prefix="tcache-snapshot-")
    shutil.copytree(runs["search"]["cache"], snapshot, dirs_exist_ok=True)
    pairs: list[tuple[str, str | None]] = []
    if a.new_key_process != "warm":
        pairs += [("", snapshot)] if a.new_key_cache == "shared" else [("_empty", None)] \
            if a.new_key_cache == "empty" else [("", snapshot), ("_empty", None)]  # fmt: skip
    warm_cfg = runs["search"]["keys"][0]["winner"] if runs["search"]["keys"] else None
    if a.new_key_process != "fresh" and warm_cfg is not None:
        pairs.append(("_warm", snapshot))  # both processes warmed alike (warm_child), from the snapshot
    # --repeat: each pair again, in order (transfer, cold, transfer, cold, ...), as rows of their own
    pairs = [(sfx + (f"_r{i + 1}" if i else ""), cache) for i in range(a.repeat) for sfx, cache in pairs]
    for suffix, cache in pairs:
        db = stores / f"transfer{suffix}.db"
        copy_store(stores / "search.db", db)
        warm = warm_cfg if "_warm" in suffix else None
        runs[f"transfer{suffix}"] = tune_process(f"transfer{suffix}", out, [NEW_KEY], db, cache_from=cache,
                                                 args=a.args, warm=warm)  # fmt: skip
        runs[f"cold_new{suffix}"] = tune_process(f"cold_new{suffix}", out, [NEW_KEY], stores / f"cold{suffix}.db",
                                                 cache_from=cache, args=a.args, warm=warm)  # fmt: skip
        if a.transfer_variant:  # the A/B: the same 3 tuned keys, the same cache snapshot, the variant's strategy
            copy_store(stores / "search.db", stores / f"variant{suffix}.db")
            runs[f"variant{suffix}"] = tune_process(f"variant{suffix}", out, [NEW_KEY], stores / f"variant{suffix}.db",
                                                    "--strategy", a.transfer_variant, cache_from=cache,
                                                    args=a.args, warm=warm)  # fmt: skip
    if os.environ.get("SEARCH_PROFILE") and pairs and pairs[0][0] in ("", "_warm"):  # once more under cProfile
        copy_store(stores / "search.db", stores / "transfer_prof.db")  # (its wall is the profiler's; not a result)
        tune_process("transfer_prof", out, [NEW_KEY], stores / "transfer_prof.db", cache_from=snapshot,
                     args=a.args, profile=True, warm=warm_cfg if pairs[0][0] == "_warm" else None)  # fmt: skip
    rounds = 8 if a.quick else 16
    main_pair = pairs[0][0] if pairs else ""
    ex, se = (runs[n]["keys"] if n in runs else [] for n in ("exhaustive", "search"))
    result: dict[str, Any] = {"space": len(workload().space.configs()), "workload": workload().name, "rounds": rounds}
    if ex and se and ex[0]["winner"] and se[0]["winner"]:
        key = KEYS[0]
        args = workload().make_args(key, "cuda")
        fns = {f"exhaustive#{i + 1}": launch(key, c, args) for i, c in enumerate(ex[0]["top"])}
        fns["search"] = launch(key, se[0]["winner"], args)
        fns["cublas"] = lambda: torch.matmul(output_tensor(args[0]), output_tensor(args[1]), out=output_tensor(args[2]))
        ms = interleave(fns, rounds)
        best_ex = min(v for n, v in ms.items() if n.startswith("exhaustive#"))
        result["key_4096"] = {
            "ms": ms,
            "wall_ratio": se[0]["wall_s"] / ex[0]["wall_s"],
            "quality": ms["search"] / best_ex,
            "vs_cublas": ms["cublas"] / ms["search"],
            "vs_cublas_paired": paired_ratio(fns["search"], fns["cublas"]),
            "search_winner": se[0]["winner"].id,
            "exhaustive_winner": ex[0]["winner"].id,
            "search": se[0]["search"],
        }
        if len(ex) == 3:  # --exhaustive-keys 3: the whole runs, 3 keys each (the search's keys 2-3 transfer)
            result["three_keys_wall_ratio"] = sum(k["wall_s"] for k in se) / sum(k["wall_s"] for k in ex)
    pair_rows = {sfx: (runs[f"transfer{sfx}"]["keys"], runs[f"cold_new{sfx}"]["keys"]) for sfx, _ in pairs}
    pair_rows = {sfx: (t, c) for sfx, (t, c) in pair_rows.items() if t and c and t[0]["winner"] and c[0]["winner"]}
    if pair_rows:  # every winner of the new key, re-measured interleaved in one set of rounds
        args = workload().make_args(NEW_KEY, "cuda")
        fns = {}
        variants = {sfx: runs[f"variant{sfx}"]["keys"] for sfx in pair_rows
                    if runs.get(f"variant{sfx}", {}).get("keys") and runs[f"variant{sfx}"]["keys"][0]["winner"]}
        for sfx, (t, c) in pair_rows.items():
            fns[f"transfer{sfx}"] = launch(NEW_KEY, t[0]["winner"], args)
            fns[f"cold{sfx}"] = launch(NEW_KEY, c[0]["winner"], args)
            if sfx in variants:
                fns[f"variant{sfx}"] = launch(NEW_KEY, variants[sfx][0]["winner"], args)
        ms = interleave(fns, rounds)
        for sfx, v in variants.items():
            c = pair_rows[sfx][1]
            result[f"variant{sfx}"] = {
                "strategy": a.transfer_variant, "wall_ratio": v[0]["wall_s"] / c[0]["wall_s"],
                "wall_s": v[0]["wall_s"], "cold_wall_s": c[0]["wall_s"],
                "quality": ms[f"variant{sfx}"] / min(ms[f"variant{sfx}"], ms[f"cold{sfx}"]),
                "vs_transfer": ms[f"variant{sfx}"] / ms[f"transfer{sfx}"], "search": v[0]["search"],
                "phases": v[0]["phases"], "times": v[0]["times"]}  # fmt: skip
        for sfx, (t, c) in pair_rows.items():
            result[f"new_key{sfx}"] = {
                "cache": ("an empty cache" if "_empty" in sfx else "a copy of the 3-key search's cache snapshot")
                + (", in a warm process (the kernel launched, cuBLAS used)" if "_warm" in sfx else "")
                + (f" (repeat {sfx.rsplit('_r', 1)[1]})" if "_r" in sfx else ""),
                "ms": {n: v for n, v in ms.items() if n in (f"transfer{sfx}", f"cold{sfx}")},
                "wall_ratio": t[0]["wall_s"] / c[0]["wall_s"], "transfer_wall_s": t[0]["wall_s"],
                "cold_wall_s": c[0]["wall_s"],
                "quality": ms[f"transfer{sfx}"] / min(ms[f"transfer{sfx}"], ms[f"cold{sfx}"]),
                "transfer": t[0]["search"], "cold": c[0]["search"], "transfer_phases": t[0]["phases"],
                "cold_phases": c[0]["phases"], "transfer_times": t[0]["times"], "cold_top_times": c[0]["times"][:10]}
    total = time.perf_counter() - t0
    k4, nk = result.get("key_4096"), result.get(f"new_key{main_pair}")
    print("\n== search vs exhaustive (targets: wall <= 0.2, quality <= 1.02, cuBLAS >= 0.98; new key <= 0.25)")
    if k4:
        print(f"4096^3: search wall / exhaustive wall = {k4['wall_ratio']:.3f}; quality {k4['quality']:.3f}; "
              f"cuBLAS / search winner = {k4['vs_cublas']:.3f}; paired, {k4['vs_cublas_paired']['pairs']} pairs: "
              f"{k4['vs_cublas_paired']['median']:.3f} (99% interval {k4['vs_cublas_paired']['ci99'][0]:.3f}-"
              f"{k4['vs_cublas_paired']['ci99'][1]:.3f})")  # fmt: skip
    if "three_keys_wall_ratio" in result:
        print(f"3 keys: search wall / exhaustive wall = {result['three_keys_wall_ratio']:.3f}")
    for sfx, _ in pairs:
        r = result.get(f"new_key{sfx}")
        if r is None:
            print(f"6144^3 new key ({sfx or 'snapshot'}): a run failed, no ratio")
            continue
        xf = (r["transfer"] or {}).get("transfer") or {}  # the transfer's start: its opening batch and winners
        print(f"6144^3 new key after 3 tuned, each from {r['cache']}: transfer wall / cold search wall = "
              f"{r['wall_ratio']:.3f} ({r['transfer_wall_s']} s / {r['cold_wall_s']} s); quality vs the cold "
              f"search's winner {r['quality']:.3f} (transfer stopped: {(r['transfer'] or {}).get('stopped')}, "
              f"{(r['transfer'] or {}).get('evaluated')} configs; opening batch {xf.get('first')} for "
              f"{len(xf.get('keys') or [])} tuned keys, {len(set(xf.get('warm') or []))} distinct winners)")  # fmt: skip
        v = result.get(f"variant{sfx}")
        if v is not None:
            print(f"   variant {v['strategy']}: wall / the same cold search's = {v['wall_ratio']:.3f} "
                  f"({v['wall_s']} s); quality vs the cold winner {v['quality']:.3f}, its time / the default "
                  f"transfer winner's {v['vs_transfer']:.3f} (stopped: {(v['search'] or {}).get('stopped')}, "
                  f"{(v['search'] or {}).get('evaluated')} configs; batches "
                  f"{[(b['configs'], b['s'], b['compiled_s']) for b in v['phases']['batches']]})")  # fmt: skip
        for who in ("transfer", "cold"):
            ph = r[f"{who}_phases"]
            print(f"   {who}: setup {json.dumps(ph.get('setup'))}, batches "
                  f"{[(b['configs'], b['s'], b['compiled_s'], b.get('prepare_s')) for b in ph['batches']]} (configs, "
                  f"s, compiled_s, prepare_s), prepare {json.dumps(ph.get('prepare'))}, "
                  f"check race {json.dumps(ph.get('check_race'))}, "
                  f"final race {(ph.get('final_race') or {}).get('s')} s, after {ph.get('after_s')} s "
                  f"{json.dumps(ph.get('after_parts'))}, outside "
                  f"batches {ph['outside_batches_s']} s, asks {ph['ask_s']} s")  # fmt: skip
    for kind in sorted({sfx.split("_r")[0] for sfx, _ in pairs}):  # the repeats of each kind of pair together
        for row, label, least in (("new_key", "transfer", 2), ("variant", f"variant {a.transfer_variant}", 1)):
            rows = [result[f"{row}{sfx}"] for sfx, _ in pairs
                    if sfx.split("_r")[0] == kind and f"{row}{sfx}" in result]  # fmt: skip
            if len(rows) < least:
                continue
            ratios = sorted(r["wall_ratio"] for r in rows)
            result[f"{row}{kind}_repeats"] = {"wall_ratios": ratios, "median": statistics.median(ratios),
                                              "qualities": [r["quality"] for r in rows]}  # fmt: skip
            print(f"new key {kind or 'snapshot'}, {label}: {len(rows)} runs, / cold "
                  f"{[round(x, 3) for x in ratios]} (median {statistics.median(ratios):.3f}, <= 0.25 in "
                  f"{sum(x <= 0.25 for x in ratios)}); qualities {[round(r['quality'], 3) for r in rows]}")  # fmt: skip
    print(f"total {total:.0f} s")
    doc = {"provenance": provenance(command=" ".join(sys.argv)), "total_s": round(total, 1), "result": result,
           "runs": {n: {**r, "keys": [{**k, "winner": k["winner"].id if k["winner"] else None,
                                       "top": [c.id for c in k["top"]]} for k in r["keys"]]}
                    for n, r in runs.items()}}  # fmt: skip
    (out / "search_tune.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0 if nk and (k4 or a.only == "transfer") else 1


if __name__ == "__main__":
    sys.exit(main())

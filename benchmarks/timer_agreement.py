"""Issue 16: why two timers disagree on cuBLAS at 4096^3 (session 14's search: cuBLAS 0.2092 ms, the winner 0.2171,
0.964; session 15's probe: cuBLAS 0.1861, a near-identical config 0.2050, 0.908). Every timer below times the same
two contestants on the same inputs in one process, in rotating order over ``--rounds`` rounds:

* ``cublas``: ``torch.matmul(a, b, out=c)``; ``triton``: ``--config`` (default: session 14's search winner) of
  ``benchmarks/search_tune.py``'s workload, launched as its interleaved re-measurement launches it.
* ``tritune``: ``EventTimer().measure(fn, budget_s=0.05)`` (what ``search_tune.py``'s ``interleave`` reads: a
  2xL2 memset, a GPU spin of at least 20 us, then the events around one call); ``tritune_noflush``: the same
  without the flush.
* ``probe``: ``matmul_probe.py``'s ``Timer`` (a 256 MB memset, then the events around one call, no spin);
  ``probe_pad``: the same with a 20 us spin between the memset and the start event (isolates the spin).
* ``do_bench``: ``triton.testing.do_bench(fn, return_mode="median")`` (its own 256 MB flush).
* ``b2b``: 20 calls back to back between two events, no flush (the warm, pipelined throughput).

Then the **paired** measurement (``--pairs``, default 400): each pair is one call of each contestant, in
alternating order, each after a 256 MB memset and a 20 us spin, each between its own events, all queued
back to back; the ratio is taken pair by pair (cuBLAS time / Triton time), so both calls of a pair run at the same
clock, whatever the GPU's power limit does to the clock between pairs. The median ratio and its 99% interval
(ranks of the median, :func:`tritune.bench.median_ci_ranks`).

Also the SM clock and power from ``nvidia-smi`` before and after each round (a power-capped GPU lowers its
clock under a long tensor-core load, more for one kernel than another). Writes ``timer_agreement.json``.

    PYTHONPATH=src python3 benchmarks/timer_agreement.py --out DIR [--rounds 8] [--config ID]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
import triton  # noqa: E402
from _timing import Plain, paired_ratio  # noqa: E402
from matmul_vs_cublas import launcher, parse_config  # noqa: E402
from search_tune import matmul_search  # noqa: E402

from tritune.bench import EventTimer  # noqa: E402
from tritune.bench.provenance import provenance  # noqa: E402

WINNER_S14 = ("BLOCK_K=64,BLOCK_M=128,BLOCK_N=256,EPILOGUE_SUBTILE=2,GROUP_M=16,WARP_SPECIALIZE=0,num_warps=8,"
              "num_stages=3,maxnreg=168")  # fmt: skip


def smi() -> dict[str, float] | None:
    """The SM clock (MHz), power (W) and temperature (C) of GPU 0, or None without nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                              "--format=csv,noheader,nounits", "-i", "0"], capture_output=True, text=True,
                             timeout=10).stdout.strip()  # fmt: skip
        sm, pw, t = (float(x) for x in out.split(","))
        return {"sm_mhz": sm, "power_w": pw, "temp_c": t}
    except Exception:
        return None


def back_to_back(fn: Any, calls: int = 20) -> float:
    fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--config", default=WINNER_S14)
    ap.add_argument("--pairs", type=int, default=400)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    key = {"M": a.size, "N": a.size, "K": a.size}
    args = matmul_search.make_args(key, "cuda")
    cfg = parse_config(a.config)
    fns = {"triton": launcher(matmul_search, cfg, key, args),
           "cublas": lambda: torch.matmul(args[0], args[1], out=args[2])}  # fmt: skip
    ref = torch.matmul(args[0].float(), args[1].float())
    fns["triton"]()
    torch.cuda.synchronize()
    err = float((args[2].float() - ref).abs().max())
    ev, ev_nf, plain, plain_pad = EventTimer(), EventTimer(flush_l2=False), Plain(), Plain(pad_us=20.0)
    ev.warm_device(0.5)
    timers = {
        "tritune": lambda f: ev.measure(f, budget_s=0.05).median_ms,
        "tritune_noflush": lambda f: ev_nf.measure(f, budget_s=0.05).median_ms,
        "probe": plain,
        "probe_pad": plain_pad,
        "do_bench": lambda f: float(triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")),
        "b2b": back_to_back,
    }
    pairs = [(t, c) for t in timers for c in fns]
    rows: dict[str, list[float]] = {f"{t}/{c}": [] for t, c in pairs}
    clocks: list[dict[str, Any]] = []
    for r in range(a.rounds):
        before = smi()
        for t, c in pairs[r % len(pairs) :] + pairs[: r % len(pairs)]:
            rows[f"{t}/{c}"].append(float(timers[t](fns[c])))
        clocks.append({"round": r, "before": before, "after": smi()})
        print(f"round {r}: " + "  ".join(f"{k} {v[-1]:.4f}" for k, v in rows.items()), flush=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    flops = 2 * a.size**3
    summary = {t: {"cublas_ms": med[f"{t}/cublas"], "triton_ms": med[f"{t}/triton"],
                   "cublas_over_triton": med[f"{t}/cublas"] / med[f"{t}/triton"],
                   "cublas_tflops": flops / med[f"{t}/cublas"] / 1e9,
                   "triton_tflops": flops / med[f"{t}/triton"] / 1e9} for t in timers}  # fmt: skip
    print(f"\n{a.size}^3 fp16, config {cfg.id} (max |err| vs fp32 {err:.2e}), median of {a.rounds} rounds:")
    print(f"{'timer':18s} {'cuBLAS ms':>10s} {'triton ms':>10s} {'cuBLAS/triton':>14s}")
    for t, s in summary.items():
        print(f"{t:18s} {s['cublas_ms']:10.4f} {s['triton_ms']:10.4f} {s['cublas_over_triton']:14.3f}")
    print(
        "clocks (sm MHz, W) per round:",
        [(c["after"] or {}).get("sm_mhz") for c in clocks],
        [(c["after"] or {}).get("power_w") for c in clocks],
    )
    before = smi()
    median, ci99, cover, t_tri, t_blas = paired_ratio(fns["triton"], fns["cublas"], a.pairs)
    after = smi()
    pair = {"pairs": a.pairs, "cublas_over_triton_median": median,
            "ci99": ci99, "coverage": cover, "cublas_ms_median": statistics.median(t_blas),
            "triton_ms_median": statistics.median(t_tri), "clocks_before": before, "clocks_after": after,
            "cublas_ms": t_blas, "triton_ms": t_tri}  # fmt: skip
    print(f"paired, {a.pairs} pairs: cuBLAS / triton median {pair['cublas_over_triton_median']:.3f} (99% interval "
          f"{ci99[0]:.3f}-{ci99[1]:.3f}); medians cuBLAS {pair['cublas_ms_median']:.4f} ms, triton "
          f"{pair['triton_ms_median']:.4f} ms; clocks {before} -> {after}")  # fmt: skip
    (a.out / "timer_agreement.json").write_text(json.dumps(
        {"provenance": provenance(), "size": a.size, "config": cfg.id, "max_abs_err": err, "rounds": rows,
         "summary": summary, "clocks": clocks, "paired": pair, "command": " ".join(sys.argv)}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

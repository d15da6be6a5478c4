"""Do a race's first looks read slow? Per-look times of a transfer's opening configs, after an idle gap (issue 16).

    PYTHONPATH=src python3 benchmarks/first_looks.py [--gaps 0,0.3,1.5] [--rounds 6] [--warm flush|kernel]
        [--warm-s 0.05] [--out FILE]

On the GPU, in this process: the search benchmark's Hopper matmul (``search_tune.py``'s host-descriptor kernel) at
6144^3, the 8 configs of a transfer's opening there (the tuned keys' two winners first, as the opening orders them;
``OPENING``), each compiled and launched once. Then, per ``--gaps`` value G: the tuner's timer warms the GPU as
tuning's does (``warm_if_idle``: 50 ms of flushes), the GPU idles for G seconds (a key's loads and checks sit there),
and ``--rounds`` rounds time every config once each, in order, with the race's budgets (5 ms a look, 2 ms of
warm-up at a config's first look, 1 ms later), as the race's first rounds do. Printed per look: its median over the
config's median of the last half of the rounds. ``--warm kernel --warm-s S`` warms with the first config's own
launches for S seconds instead (after the gap, right before the looks); the JSON has each look's time since the
looks began. On the H100s of session 25 some openings read both tuned winners,
timed first, 12-16% slow, while other openings of the same keys confirmed them within 1%; this shows whether the
first looks after a gap are to blame.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

KEY = {"M": 6144, "N": 6144, "K": 6144}
_C = "BLOCK_K=64,BLOCK_M={bm},BLOCK_N={bn},EPILOGUE_SUBTILE={e},GROUP_M={g},WARP_SPECIALIZE=0,num_warps=8,num_stages={s}"
#: A transfer's opening at 6144^3 on the H100 (session 25, call 1): the tuned keys' winners first.
OPENING = [
    _C.format(bm=128, bn=256, e=2, g=16, s=4),
    _C.format(bm=128, bn=256, e=1, g=16, s=3),
    _C.format(bm=128, bn=256, e=2, g=16, s=3),
    _C.format(bm=128, bn=256, e=1, g=8, s=3),
    _C.format(bm=128, bn=256, e=1, g=16, s=3) + ",maxnreg=168",
    _C.format(bm=128, bn=256, e=2, g=16, s=4) + ",maxnreg=168",
    _C.format(bm=128, bn=256, e=2, g=8, s=4),
    _C.format(bm=256, bn=128, e=2, g=16, s=4),
]


def parse(cid: str):  # type: ignore[no-untyped-def]
    """A config from its id (``NAME=value,...``; num_warps, num_stages and maxnreg are launch options)."""
    import tritune

    kv = dict(p.split("=") for p in cid.split(","))
    launch = {k: int(kv.pop(k)) for k in ("num_warps", "num_stages", "maxnreg") if k in kv}
    return tritune.Config({k: int(v) for k, v in kv.items()}, **launch)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gaps", default="0,0.3,1.5", help="idle seconds between the warm-up and the first look")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warm", choices=("flush", "kernel"), default="flush")
    ap.add_argument("--warm-s", type=float, default=0.05)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()

    import search_tune  # the benchmark's workload
    import torch

    from tritune.adapters.kernel import as_jit
    from tritune.bench.event import EventTimer
    from tritune.bench.timer import TimerMeasure
    from tritune.engine import job
    from tritune.engine.timing import warm_if_idle
    from tritune.measure import resolve_policy

    wl = search_tune.matmul_search_host
    configs = [parse(c) for c in OPENING]
    args = wl.make_args(KEY, "cuda")
    kw = wl.caller_kwargs(KEY)
    jit = as_jit(wl.kernel)

    def make_fn(cfg):  # type: ignore[no-untyped-def]  # as tune_key's make_fn
        grid = wl.grid_for(cfg, KEY)
        cargs, ckw = wl.hooked(cfg, args, kw)
        opts = {**ckw, **cfg.kwargs, **cfg.launch_options()}
        launcher = jit[grid]
        return lambda: launcher(*cargs, **opts)

    t0 = time.perf_counter()
    for c in configs:  # compile and load each once (the transfer's binaries come from Triton's cache)
        make_fn(c)()
    torch.cuda.synchronize()
    print(f"compiled and launched {len(configs)} configs in {time.perf_counter() - t0:.1f} s", flush=True)
    timer = EventTimer.for_policy(resolve_policy(None))  # the tuner's default timer (tune.session._timer)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "key": KEY, "configs": OPENING,
           "runs": []}  # fmt: skip
    for gap in [float(g) for g in a.gaps.split(",")]:
        time.sleep(2.0)  # idle, as a fresh tuning process before its key
        job._last_busy[0] = float("-inf")
        if a.warm == "flush":
            warm_if_idle(timer, a.warm_s)  # what the tuner's timer does when it is built (ahead, beside the setup)
            time.sleep(gap)
        else:
            time.sleep(gap)
            fn = make_fn(configs[0])
            end = time.perf_counter() + a.warm_s
            while time.perf_counter() < end:
                for _ in range(10):
                    fn()
                torch.cuda.synchronize()
        measure = TimerMeasure(timer, make_fn, rel_tol=0.01, warmup_s=0.002)
        looks: list[list[float]] = [[] for _ in configs]
        at: list[list[float]] = [[] for _ in configs]
        start = time.perf_counter()
        for _ in range(a.rounds):
            for i, c in enumerate(configs):
                m = measure(c, 0.005)
                looks[i].append(m.median_ms)  # type: ignore[union-attr]
                at[i].append(round(time.perf_counter() - start, 4))
        half = a.rounds // 2
        ref = [statistics.median(x[half:]) for x in looks]
        rel = [[round(t / r, 3) for t in x] for x, r in zip(looks, ref)]
        print(f"gap {gap} s, warm {a.warm} {a.warm_s} s: each look / the config's median of rounds "
              f"{half + 1}-{a.rounds}; the looks took {time.perf_counter() - start:.3f} s")
        for i, c in enumerate(OPENING):
            print(f"  {ref[i]:.4f} ms  {rel[i]}  {c}")
        out["runs"].append({"gap_s": gap, "warm": a.warm, "warm_s": a.warm_s, "looks_ms": looks, "relative": rel,
                            "at_s": at})  # fmt: skip
    if a.out is not None:
        a.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

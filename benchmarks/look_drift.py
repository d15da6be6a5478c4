"""How much of a race's error is common drift? Estimators replayed on recorded GPU looks (issue 16).

    python3 benchmarks/look_drift.py benchmarks/results/2026-12-06-gpu-s25/*/first_looks*.json

Input: ``benchmarks/first_looks.py``'s JSON (8 configs of one kernel and key timed round-robin, one look each per
round, for many rounds: real GPU looks). Reference: each config's median over ALL rounds, relative to the others'
(round-robin over the whole run, so every config saw the same moments). From the first ``R`` rounds only, as a race
sees them, two estimators of each config's time relative to the field:

- ``raw``: the median of its looks (what the race compares today, samples merged across rounds);
- ``round``: the median over rounds of its look divided by that round's median look over the configs (drift
  common to the configs cancels within a round);
- ``rescaled`` (drops only): ``raw``, a dropped config's look then divided by the GPU's level at that moment: the
  median, over the other configs' looks nearest to it in time (as many as there are of them), of each look over that
  config's median over the rounds seen, what the race does at its end (:mod:`tritune.engine.race`, "Drift").

A third case replays a race's early drop: the configs the first round put in its slower half keep that one look
(``raw``) or that look over its round's median (``round``), the others use the first ``R`` rounds.

Printed per run and R: the root-mean-square error (percent) of every pair's log ratio against the reference, and
the pick's regret: the reference time of the config each estimator ranks first over the reference best.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path


def estimates(looks: list[list[float]], rounds: int, mode: str, dropped: frozenset[int] = frozenset()) -> list[float]:
    """Log level of each config from its first ``rounds`` looks (a dropped config: its first look only)."""
    n = len(looks)
    out = []
    for c in range(n):
        use = 1 if c in dropped else rounds
        if mode == "rescaled":  # the race's correction (engine.race, "Drift"): a dropped config's first look over
            # the GPU's level then, the median over the survivors' looks nearest in time (as many as survivors) of
            # each look over that survivor's median over the rounds seen
            mine = statistics.median(math.log(x) for x in looks[c][:use])
            if c in dropped:
                alive = [k for k in range(n) if k not in dropped]
                ref = {k: statistics.median(math.log(x) for x in looks[k][:rounds]) for k in alive}
                seen = [(r * n + k, math.log(looks[k][r]) - ref[k]) for k in alive for r in range(rounds)]
                near = sorted(seen, key=lambda v: abs(v[0] - c))[: len(alive)]  # c's look: round 0, position c
                mine -= statistics.median(v for _, v in near)
            out.append(mine)
        elif mode == "raw":
            out.append(statistics.median(math.log(x) for x in looks[c][:use]))
        else:
            rel = [math.log(looks[c][r]) - statistics.median(math.log(looks[k][r]) for k in range(n))
                   for r in range(use)]  # fmt: skip
            out.append(statistics.median(rel))
    return out


def score(est: list[float], ref: list[float]) -> tuple[float, float]:
    """(RMS error of the pairs' log ratios in percent, the pick's regret: its reference over the best's)."""
    n = len(est)
    errs = [((est[i] - est[j]) - (ref[i] - ref[j])) ** 2 for i in range(n) for j in range(i + 1, n)]
    pick = min(range(n), key=lambda i: est[i])
    return 100 * math.sqrt(sum(errs) / len(errs)), math.exp(ref[pick] - min(ref))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--rounds", default="1,2,3,5,8")
    a = ap.parse_args()
    prefixes = [int(r) for r in a.rounds.split(",")]
    totals: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for f in a.files:
        d = json.loads(f.read_text())
        for run in d["runs"]:
            looks = run["looks_ms"]
            n, total = len(looks), len(looks[0])
            ref = [statistics.median(math.log(x) for x in looks[c]) for c in range(n)]
            first = [math.log(looks[c][0]) for c in range(n)]
            slow_half = frozenset(sorted(range(n), key=lambda c: first[c])[n // 2:])
            line = [f"{f.name} gap {run['gap_s']} s, {total} rounds:"]
            for r in prefixes:
                if r > total:
                    continue
                for mode in ("raw", "round", "rescaled"):
                    for label, dropped in (("", frozenset()), ("+drop", slow_half)):
                        if mode == "rescaled" and not dropped:
                            continue  # the same as raw without drops
                        s = score(estimates(looks, r, mode, dropped), ref)
                        totals.setdefault((mode + label, r), []).append(s)
                        line.append(f"R{r} {mode}{label} {s[0]:.2f}%/{s[1]:.3f}")
            print("  ".join(line))
    print("\nmean over runs: RMS pair error (%) / mean pick regret, by estimator and rounds seen")
    for (name, r), vals in sorted(totals.items(), key=lambda t: (t[0][1], t[0][0])):
        print(f"  R{r:<2} {name:14} {statistics.mean(v[0] for v in vals):6.2f}%  "
              f"{statistics.mean(v[1] for v in vals):.4f}  ({len(vals)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

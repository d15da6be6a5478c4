"""The transfer's opening batch, replayed (issue 16): how big must it be to keep a new key's quality?

    PYTHONPATH=src python3 benchmarks/transfer_opening.py [--families 2] [--seeds 3] [--noise 0.01] [--out DIR]
        [--rules per_key] [--variants nocheck,default]

ALL TIMES ARE SYNTHETIC: the fitted families of ``benchmarks/landscapes/fitted.py`` (4 related keys, sizes 1, 2,
4, 8, per recorded landscape, their structure sampled from the recorded H200 landscapes), replayed with
multiplicative noise per look. Per family, per seed and per choice of the new key, it runs what ``tritune tune``
runs for 3 keys then a 4th (``search_tune.py --only transfer`` on the H200): the first key a cold default
search, each later key the default transfer from the keys before it (:func:`tritune.engine.plan.make_driver`,
the tuning driver with its opening batch and ``stopped: confirmed``), then the tuner's final race
(:func:`tritune.engine.finals.replay_final_race`) picks and its pick is what the next key sees as the stored
winner. The new key's pick is judged on its TRUE (recorded, noise-free) time over the landscape's best.

Rules of the opening batch's size (``make_driver(opening=...)``), each used for all 4 keys of a run:
``per_key`` 2 x tuned keys + 2 (tuning's rule, :func:`tritune.engine.plan.first_batch_size`), ``distinct``
2 x distinct winners + 2 (proposed in issue 16, rejected on these numbers), and fixed sizes. Printed per rule: the new key's quality (median, p90, worst, share > 1.02) and configs measured.
``--variants nocheck,default,nofinal1`` runs each rule as tuning ran before session 25, with the tuner's check race
after an unconfirmed opening (:meth:`tritune.search.SearchDriver.check_field`, tuning's default), and with it and no
final race after a transfer confirmed by its opening batch (rejected); ``--variants old,cached`` with the transfer's
``cached_next`` off and on (session 18), and
``uncached`` counts the new key's configs that no tuned key measured: compiles, on a machine whose Triton cache
holds the tuned keys' binaries (``compiles``: the share of runs with a batch that holds one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "landscapes"))

from fitted import families  # type: ignore[import-not-found]  # noqa: E402

from tritune.config import Config  # noqa: E402
from tritune.engine import plan as searching  # noqa: E402
from tritune.engine.finals import replay_check_race, replay_final_race  # noqa: E402
from tritune.landscape import Landscape  # noqa: E402
from tritune.outcome import Status  # noqa: E402
from tritune.search import KeyResults  # noqa: E402
from tritune.search.registry import DEFAULT  # noqa: E402
from tritune.search.simulate import ReplayEvaluator, replay_space  # noqa: E402

WIDTH = 16  # the H200 host's compile pool
Rule = Callable[[Sequence[KeyResults]], "int | None"]


def distinct_winners(near: Sequence[KeyResults]) -> int:
    """How many different winners the tuned keys picked."""
    return len({w for nb in near if (w := nb.winner()) is not None})


RULES: dict[str, Rule] = {
    "per_key": lambda near: searching.first_batch_size(len(near), WIDTH),  # tuning's rule
    "distinct": lambda near: max(1, min(WIDTH, 2 * distinct_winners(near) + 2)),
    "fixed4": lambda near: 4,
    "fixed6": lambda near: 6,
}


class _Told:
    """A replayed look as the driver reads a Measurement: median and interval."""

    def __init__(self, t: float, ci: tuple[float, float]) -> None:
        self.median_ms, (self.ci_low_ms, self.ci_high_ms) = t, ci


def tune_key(land: Landscape, near: list[KeyResults], rule: Rule, *, noise: float, seed: int,
             cached_next: bool | None = None, check: bool = True, final_after_one: str = "on",
             transfer_options: str = "") -> dict[str, Any]:  # fmt: skip
    """One key as ``tritune tune`` searches it by default (cold without ``near``, transfer with), then the final race.

    ``cached_next``: the transfer's option of that name (None: its default). ``check``: the tuner's check race
    after an unconfirmed opening (:func:`tritune.engine.finals.replay_check_race`; off: tuning before it).
    ``final_after_one``: ``"off"`` runs no final race after a search of one batch (a transfer confirmed by its
    opening): the opening's race picks alone (replayed in session 25 and rejected). ``transfer_options``: more
    options of the transfer's strategy (``"tile_per_warp=true"``)."""
    _, illegal = replay_space(land)
    bad = set(illegal)
    legal = [c for c in land.configs if c not in bad]
    opts = ([f"cached_next={str(cached_next).lower()}"] if cached_next is not None else []) + (
        [transfer_options] if transfer_options else [])
    spec = DEFAULT if not near or not opts else f"{DEFAULT}:{','.join(opts)}"
    plan = searching.SearchPlan(spec, None, "replay: the default search")  # these spaces are < 512: forced
    opening = rule(near) if near else None
    driver, _ = searching.make_driver(plan, legal, width=WIDTH, key_values=dict(land.key), near=near, seed=seed,
                                         where=land.kernel, opening=opening)  # fmt: skip
    ev = ReplayEvaluator(land, noise=noise, seed=seed)
    first = None
    # What the neighbours measured: on the machine that tuned them, Triton's cache holds these binaries; any
    # other config this key measures is a compile (``uncached``), and a batch holding one waits for it.
    recorded = {c for nb in near for c, t in nb.times.items() if t is not None}
    uncached = compile_batches = batches = 0
    checked: Config | None = None
    while not driver.done:
        batch = driver.next_batch()
        if not batch:
            break
        first = len(batch) if first is None else first
        batches += 1
        new = sum(c not in recorded for c in batch)
        uncached += new
        compile_batches += new > 0
        for c in batch:
            status, t, ci = ev(c)
            driver.record(c, status if status is not Status.MEASURED or t is None else
                          ((status, t) if ci is None else _Told(t, ci)))  # fmt: skip
        if check:
            checked = replay_check_race(land, driver, noise=noise, seed=seed)
    seen = [(o.config, o.time_ms) for o in driver.history if o.ok and o.time_ms is not None]
    final: list[Config] = []
    pick: Config | None
    if checked is not None:
        pick = checked
    elif batches == 1 and final_after_one == "off":  # the rejected variant: the opening's race picks alone
        pick = min(seen, key=lambda t: t[1])[0]
    else:
        pick, final = replay_final_race(land, seen, noise=noise, seed=seed)
    # Configs raced, a proxy for the device time (each race gives a config about the same budget): the batches'
    # configs, the check race's field and the final race's.
    raced = len(driver.history) + len(driver.checked or ()) + len(final)
    assert pick is not None and land.best.time_ms
    point = land.lookup(pick)
    assert point is not None and point.time_ms is not None
    times = {o.config: (o.time_ms if o.ok else None) for o in driver.history}
    return {"quality": point.time_ms / land.best.time_ms, "measured": len(driver.history), "first": first,
            "stopped": driver.why_stopped, "results": KeyResults(dict(land.key), times, pick),
            "distinct": distinct_winners(near), "uncached": uncached, "compile_batches": compile_batches,
            "batches": batches, "checked": driver.checked is not None, "raced": raced}  # fmt: skip


#: ``--variants``: the transfer's ``cached_next`` and the tuner's check race per variant (``old``: the continuation
#: before session 18; ``nocheck``: tuning before session 25, no check race after an unconfirmed opening;
#: ``nofinal1``: the check race, and no final race after a search of one batch, rejected in session 25; ``tpw``:
#: the transfer's surrogate reading the tile per warp, as the cold search's does since session 24).
VARIANTS: dict[str, tuple[bool | None, bool, str, str]] = {
    "default": (None, True, "on", ""), "old": (False, False, "on", ""), "cached": (True, False, "on", ""),
    "nocheck": (None, False, "on", ""),  # tuning before session 25: no check race
    "nofinal1": (None, True, "off", ""),  # the check race, and no final race after a search of one batch (rejected)
    "tpw": (None, True, "on", "tile_per_warp=true"),  # the transfer's model reads the tile per warp too
}


def run(fams: list[list[Landscape]], seeds: int, noise: float, rules: Sequence[str] = tuple(RULES),
        variants: Sequence[str] = ("default",)) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """Rows per ``rule`` (``rule/variant`` for a variant other than ``default``), each used for all 4 keys of a run."""
    names = [(r, v, r if v == "default" else f"{r}/{v}") for r in rules for v in variants]
    out: dict[str, list[dict[str, Any]]] = {label: [] for _, _, label in names}
    for f, fam in enumerate(fams):
        for new in range(len(fam)):
            order = [fam[j] for j in range(len(fam)) if j != new] + [fam[new]]
            for seed in range(seeds):
                for name, variant, label in names:
                    near: list[KeyResults] = []
                    r: dict[str, Any] = {}
                    for land in order:
                        cached_next, check, final_after_one, transfer_options = VARIANTS[variant]
                        r = tune_key(land, near, RULES[name], noise=noise, seed=seed, cached_next=cached_next,
                                     check=check, final_after_one=final_after_one,
                                     transfer_options=transfer_options)  # fmt: skip
                        near.append(r["results"])
                    out[label].append({"family": f, "kernel": order[-1].kernel, "new_key": dict(order[-1].key),
                                      "seed": seed, **{k: v for k, v in r.items() if k != "results"}})  # fmt: skip
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    q = sorted(r["quality"] for r in rows)
    return {"runs": len(rows), "quality_median": statistics.median(q), "quality_p90": q[int(0.9 * (len(q) - 1))],
            "quality_worst": q[-1], "over_1.02": sum(x > 1.02 for x in q) / len(q),
            "measured_mean": statistics.mean(r["measured"] for r in rows),
            "first_mean": statistics.mean(r["first"] for r in rows),
            "confirmed": sum(r["stopped"] == "confirmed" for r in rows) / len(rows),
            "checked": sum(r["checked"] for r in rows) / len(rows),
            "raced_mean": statistics.mean(r["raced"] for r in rows),
            "uncached_mean": statistics.mean(r["uncached"] for r in rows),
            "compile_batches_mean": statistics.mean(r["compile_batches"] for r in rows),
            "any_compile": sum(r["compile_batches"] > 0 for r in rows) / len(rows),
            "after_second": sum(r["batches"] == 2 for r in rows) / len(rows),
            "distinct_winners_mean": statistics.mean(r["distinct"] for r in rows)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", type=int, default=2, help="fitted families per recorded landscape")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.01, help="relative spread of one look (SYNTHETIC)")
    ap.add_argument("--only", default=None, help="recorded landscape names containing this (e.g. matmul)")
    ap.add_argument("--rules", default=",".join(RULES), help=f"opening-size rules, of {', '.join(RULES)}")
    ap.add_argument("--variants", "--cached-next", dest="variants", default="default",
                    help=f"variants of {', '.join(VARIANTS)} (comma-separated; see VARIANTS)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    fams = families(4, a.families, ROOT / "benchmarks" / "landscapes")
    if a.only:
        fams = [f for f in fams if a.only in f[0].kernel]
    rules, variants = a.rules.split(","), a.variants.split(",")
    if bad := [r for r in rules if r not in RULES] + [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown rule or variant: {', '.join(bad)}")
    out = run(fams, a.seeds, a.noise, rules, variants)
    print(f"SYNTHETIC replay: {len(fams)} fitted families x 4 new keys x {a.seeds} seeds, noise {a.noise}, "
          f"width {WIDTH}; 3 keys tuned then the 4th by transfer; new key's quality = true time / true best")  # fmt: skip
    summary = {name: summarize(rows) for name, rows in out.items()}
    print(f"{'rule':16} {'runs':>4} {'first':>5} {'measured':>8} {'raced':>6} {'uncached':>8} {'compiles':>8} "
          f"{'checked':>7} {'confirmed':>9} {'2nd':>5} {'distinct':>8} {'q med':>6} {'q p90':>6} {'q worst':>7} "
          f"{'>1.02':>6}")  # fmt: skip
    for name, s in summary.items():
        print(f"{name:16} {s['runs']:4d} {s['first_mean']:5.2f} {s['measured_mean']:8.2f} {s['raced_mean']:6.2f} "
              f"{s['uncached_mean']:8.2f} {s['any_compile']:8.2f} {s['checked']:7.2f} {s['confirmed']:9.2f} "
              f"{s['after_second']:5.2f} "
              f"{s['distinct_winners_mean']:8.2f} {s['quality_median']:6.3f} {s['quality_p90']:6.3f} "
              f"{s['quality_worst']:7.3f} {s['over_1.02']:6.2f}")  # fmt: skip
    print("raced: configs raced (batches, check race, final race: a proxy of device time); uncached: configs "
          "measured that no tuned key measured (compiles); compiles: share of runs with a batch holding one; "
          "checked: share of runs with a check race; 2nd: share of runs that stopped after their second batch")  # fmt: skip
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "transfer_opening.json").write_text(json.dumps({"summary": summary, "rows": out}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

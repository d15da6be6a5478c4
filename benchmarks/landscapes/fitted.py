"""SYNTHETIC landscapes sampled from models FITTED to the recorded H200 landscapes. Not measurements.

For each real landscape, :func:`fit` estimates log(time) as a sum of per-axis effects and pairwise
interactions (ridge regression on one-hot values and value pairs) plus a residual roughness (the
per-config part no smooth model explains). :func:`sample` draws a new landscape over the same configs
(the same failures: a space keeps its illegal corners) from that model:

* each axis's effect is scaled by ``exp(N(0, 0.3))`` and, with probability 0.35, mirrored or rolled,
  so the optimum moves to other values;
* interactions are scaled by ``exp(N(0, 0.4))``, the roughness by a factor in [0.5, 2];
* ``compress`` shrinks every gap (structure and roughness together) towards the best, which makes many
  near-ties; ``floor`` adds a fixed time that every config pays (a launch), so gaps shrink relative to
  the total. A short-kernel variant (the GELU-at-2^20 kind of landscape, a ~6 us kernel) uses both:
  the top configs then sit within one or two percent, as close as timing noise.

    python benchmarks/landscapes/fitted.py --out /tmp/fitted      # write the set search_eval.py uses
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

DEVICE = "synthetic (fitted to H200 landscapes)"
#: A residual above this (attention's pairwise fit leaves 40%) is structure the model misses, not
#: per-config roughness; sampled roughness starts from at most this.
ROUGHNESS_CAP = 0.08
HERE = Path(__file__).parent


def recorded(folder: Path = HERE) -> list[tuple[str, Landscape]]:
    """The recorded landscapes in ``folder`` by name: every ``*.json`` and ``*.json.gz`` (large recordings are
    kept gzipped), in name order."""
    out = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")], key=lambda p: p.name):
        if path.suffix == ".gz":
            with gzip.open(path, "rt") as f:
                out.append((path.name[: -len(".json.gz")], Landscape.from_json(json.load(f), source=str(path))))
        else:
            out.append((path.stem, Landscape.load(path)))
    return out


@dataclass(frozen=True)
class FittedModel:
    """log(time) = bias + main[a][value] + pair[(a, b)][(va, vb)] + roughness, per real landscape."""

    source: Landscape
    axes: tuple[str, ...]
    values: tuple[tuple[object, ...], ...]
    coords: np.ndarray  # (configs measured, axes) value positions
    bias: float
    main: tuple[np.ndarray, ...]
    pairs: dict[tuple[int, int], np.ndarray]
    roughness: float


def _coords(land: Landscape) -> tuple[tuple[str, ...], tuple[tuple[object, ...], ...], list[list[int]]]:
    dicts = [p.config.as_dict() for p in land.points]
    axes = tuple(sorted({k for d in dicts for k in d if len({repr(e.get(k)) for e in dicts}) > 1}))
    values = tuple(tuple(sorted({d.get(a) for d in dicts}, key=repr)) for a in axes)
    rows = [[values[j].index(d.get(a)) for j, a in enumerate(axes)] for d in dicts]
    return axes, values, rows


def fit(land: Landscape, alpha: float = 0.3) -> FittedModel:
    """Fit per-axis effects and pairwise interactions of log(time) on the measured configs."""
    axes, values, rows = _coords(land)
    measured = [i for i, p in enumerate(land.points) if p.status is Status.MEASURED and p.time_ms]
    coords = np.array([rows[i] for i in range(len(land.points))], dtype=np.int64)
    y = np.log([land.points[i].time_ms or 1.0 for i in measured])
    cols: list[np.ndarray] = []
    layout: list[tuple[str, int, int, int]] = []  # kind, a, b, width
    for a, vals in enumerate(values):
        cols.append(np.eye(len(vals))[coords[measured, a]])
        layout.append(("main", a, a, len(vals)))
    for a in range(len(axes)):
        for b in range(a + 1, len(axes)):
            w = len(values[a]) * len(values[b])
            cols.append(np.eye(w)[coords[measured, a] * len(values[b]) + coords[measured, b]])
            layout.append(("pair", a, b, w))
    x = np.hstack(cols)
    mu = float(y.mean())
    w = np.linalg.solve(x.T @ x + alpha * np.eye(x.shape[1]), x.T @ (y - mu))
    resid = y - mu - x @ w
    main: list[np.ndarray] = []
    pairs: dict[tuple[int, int], np.ndarray] = {}
    at = 0
    for kind, a, b, width in layout:
        part = w[at : at + width]
        at += width
        if kind == "main":
            main.append(part)
        else:
            pairs[(a, b)] = part.reshape(len(values[a]), len(values[b]))
    # Roughness from the faster half only: the slow tail holds register-spill cliffs, which are
    # structure the pairwise model cannot express, not per-config noise.
    fast = y <= np.median(y)
    return FittedModel(land, axes, values, coords, mu, tuple(main), pairs, float(resid[fast].std()))


def sample(
    model: FittedModel,
    seed: int,
    *,
    compress: float = 1.0,
    floor: float = 0.0,
    label: str = "",
    size: int | None = None,
    drift: float = 0.15,
) -> Landscape:
    """A new SYNTHETIC landscape over the model's configs (see the module docstring).

    ``size`` makes one member of a family of keys: landscapes of one seed share the sampled structure,
    and each size drifts every effect by ``exp(N(0, drift))`` and draws its own roughness, as one
    kernel's landscapes at several problem sizes do.
    """
    rng = np.random.default_rng(seed)
    main = []
    for eff in model.main:
        e = eff * math.exp(rng.normal(0, 0.3))
        if len(e) > 2 and rng.random() < 0.35:
            e = e[::-1] if rng.random() < 0.5 else np.roll(e, int(rng.integers(1, len(e))))
        main.append(e)
    pairs = {k: v * math.exp(rng.normal(0, 0.4)) for k, v in model.pairs.items()}
    rough = min(model.roughness, ROUGHNESS_CAP) * float(rng.uniform(0.5, 2.0))
    if size is not None:
        rng = np.random.default_rng([seed, size])
        main = [
            e * math.exp(rng.normal(0, drift)) + rng.normal(0, drift * float(np.std(e)), len(e)) for e in main
        ]
        pairs = {k: v * math.exp(rng.normal(0, drift)) for k, v in pairs.items()}
    logt = np.full(len(model.coords), model.bias)
    for a, eff in enumerate(main):
        logt += eff[model.coords[:, a]]
    for (a, b), g in pairs.items():
        logt += g[model.coords[:, a], model.coords[:, b]]
    logt += rng.normal(0, rough, len(logt))
    ok = [i for i, p in enumerate(model.source.points) if p.status is Status.MEASURED and p.time_ms]
    best = float(logt[ok].min())
    times = np.exp(best + compress * (logt - best))
    times = times + floor * float(np.exp(best))
    points = []
    for i, p in enumerate(model.source.points):
        if i in set(ok):
            points.append(LandscapePoint(p.config, Status.MEASURED, round(float(times[i]), 7)))
        else:
            points.append(LandscapePoint(p.config, p.status, None, p.reason))
    name = f"{model.source.kernel}~{label or 'fit'}{seed}"
    key = dict(model.source.key)
    if size is not None:
        key["size"] = size
    land = Landscape.from_points(name, DEVICE, key, points)
    land.provenance = {
        "synthetic": True,
        "generator": "benchmarks/landscapes/fitted.py",
        "fitted_to": model.source.kernel,
        "seed": seed,
        "compress": compress,
        "floor": floor,
        "roughness": rough,
        "size": size,
    }
    return land


def families(keys: int = 4, per_landscape: int = 2, folder: Path = HERE) -> list[list[Landscape]]:
    """Families of ``keys`` related landscapes (sizes 1, 2, 4, ...) per recorded landscape, for transfer."""
    out = []
    for _, land in recorded(folder):
        model = fit(land)
        for k in range(per_landscape):
            out.append([sample(model, 500 + k, label="fam", size=2**j) for j in range(keys)])
    return out


#: Variants per real landscape: (label, compress, floor). "short" imitates a ~6 us kernel.
VARIANTS = (("fit", 1.0, 0.0), ("tie", 0.4, 0.0), ("short", 0.25, 1.5))


def generate(per_variant: int = 2, folder: Path = HERE, first_seed: int = 100) -> list[Landscape]:
    """``per_variant`` landscapes of each variant for every recorded landscape in ``folder``."""
    out = []
    for _, land in recorded(folder):
        model = fit(land)
        for v, (label, compress, floor) in enumerate(VARIANTS):
            for k in range(per_variant):
                out.append(
                    sample(model, first_seed + 97 * v + k, compress=compress, floor=floor, label=label)
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-variant", type=int, default=2)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for land in generate(args.per_variant):
        land.write(args.out / f"{land.kernel.replace('~', '_')}.json")
    print(f"wrote {len(list(args.out.glob('*.json')))} SYNTHETIC landscapes to {args.out}")


if __name__ == "__main__":
    main()

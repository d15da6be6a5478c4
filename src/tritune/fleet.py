"""Choices across a fleet: every autotuner a run reached and how each key was decided, recorded per rank, merged
by majority into a pinned table, and checked alike across the ranks of a job.

* :func:`choices` lists every decorated kernel of this process (decorator or switch) and each key's choice with how
  it was made (``timed``, ``store``, ``pretuned``, ``pinned``, ...) and its store key (GPU, Triton version, kernel
  source hash, measurement policy, numerics).
* :func:`record_choices` writes them (``tritune.choices/1``) with the run's provenance: GPU, Triton, torch and the
  versions of the libraries whose kernels were tuned. ``$TRITUNE_RECORD=path`` records at exit (``{rank}`` in the
  path becomes the rank).
* :func:`merge_recordings` (``tritune pin merge``) takes any number of recordings and writes a pinned table in the
  ``tritune.store/1`` format: per store key, the config most recordings chose; a tie goes to the config chosen by the
  recording of the lowest rank (then the earliest file). Each winner carries its votes; the table carries the
  recordings' provenance. Used as ``pretuned=`` with ``pinned=True`` (``$TRITUNE_PINNED=1``), it decides every key it
  holds and nothing is timed; an entry made for another GPU, Triton version or kernel source is not served (its
  store key differs), and :func:`stale` says what changed since the table was made.
* :func:`check_choices` (collective) compares the ranks' choices by digest and raises ``DistributedError`` naming
  the kernels and keys on which ranks differ; call it at a point every rank reaches (every N steps, on request).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tritune.config import Config
from tritune.decorator.autotuned import REACHED, Autotuned
from tritune.device import gpu_unavailable_reason
from tritune.errors import ConfigError, DistributedError

#: The recording format's name.
RECORDING = "tritune.choices/1"


def autotuners() -> list[Autotuned]:
    """Every decorated kernel alive in this process, by name."""
    return sorted(REACHED, key=lambda t: t.info.name)


def choices(kernels: Iterable[Autotuned] | None = None) -> list[dict[str, Any]]:
    """Every key of every decorated kernel of this process (or of ``kernels``) that has a choice: the kernel, the
    key as Triton shows it, the config, how it was chosen and the store key it was chosen for. Sorted, so two ranks'
    lists compare."""
    interp = gpu_unavailable_reason() is not None
    out = []
    for tuned in autotuners() if kernels is None else sorted(kernels, key=lambda t: t.info.name):
        for key, choice in tuned.tuned_keys().items():
            tkey = tuned.tuner.tuning_key(tuned, key, interpreter=interp)
            out.append({"kernel": tuned.info.name, "key": repr(tuned.key_spec.public(key)),
                        "tuning_key": tkey.to_json(), "config": choice.config.to_json(), "source": choice.source})  # fmt: skip
    return sorted(out, key=lambda c: (c["kernel"], c["key"], json.dumps(c["tuning_key"], sort_keys=True)))


def digest(entries: Sequence[dict[str, Any]] | None = None) -> str:
    """sha256 of the (kernel, key, config) triples of ``entries`` (default: :func:`choices`)."""
    rows = [(c["kernel"], c["key"], Config.from_json(c["config"]).id) for c in (entries if entries is not None
                                                                               else choices())]  # fmt: skip
    return hashlib.sha256(json.dumps(sorted(rows)).encode()).hexdigest()


def provenance() -> dict[str, Any]:
    """What a recording was made with: host, rank, GPU, Triton, torch, Python, and the versions of the packages whose
    kernels this process decorated (a kernel's top-level package, when it is installed)."""
    from importlib import metadata

    import triton

    from tritune._version import __version__

    libs: dict[str, str] = {}
    for tuned in autotuners():
        top = (getattr(tuned.info, "module", None) or getattr(tuned.base_fn, "__module__", "") or "").split(".")[0]
        if top and top not in libs and top not in ("__main__", "tritune"):
            try:
                libs[top] = metadata.version(top)
            except metadata.PackageNotFoundError:
                pass
    gpu = None
    if gpu_unavailable_reason() is None:
        import torch

        gpu = torch.cuda.get_device_name()
    import torch

    return {"host": socket.gethostname(), "rank": _rank(), "gpu": gpu, "triton": triton.__version__,
            "torch": torch.__version__, "python": sys.version.split()[0], "tritune": __version__, "libraries": libs,
            "recorded_at": time.time()}  # fmt: skip


def record_choices(path: str | Path, kernels: Iterable[Autotuned] | None = None) -> Path:
    """Write this process's :func:`choices` (of every kernel, or of ``kernels``) with its :func:`provenance` to
    ``path`` (``{rank}`` becomes the rank)."""
    from tritune.paths import write_output

    p = Path(str(path).replace("{rank}", str(_rank())))
    doc = {"format": RECORDING, "provenance": provenance(), "choices": choices(kernels)}
    return write_output(p, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def merge_recordings(paths: Sequence[str | Path]) -> dict[str, Any]:
    """A pinned table (a ``tritune.store/1`` document) from ``paths``' recordings (module docstring: the rule)."""
    from tritune.store.exchange import FORMAT
    from tritune.store.records import now

    docs = []
    for i, p in enumerate(paths):
        doc = json.loads(Path(p).read_text())
        if doc.get("format") != RECORDING:
            raise ConfigError(f"{p}: not a {RECORDING} recording (tritune.fleet.record_choices writes them)")
        docs.append((int(doc.get("provenance", {}).get("rank") or 0), i, doc))
    votes: dict[str, dict[str, Any]] = {}
    for rank, order, doc in sorted(docs, key=lambda d: (d[0], d[1])):
        for c in doc["choices"]:
            tkey = json.dumps(c["tuning_key"], sort_keys=True)
            slot = votes.setdefault(tkey, {"key": c["tuning_key"], "counts": {}, "first": {}})
            cid = Config.from_json(c["config"]).id
            slot["counts"][cid] = slot["counts"].get(cid, 0) + 1
            slot["first"].setdefault(cid, (rank, order, c["config"]))
    entries = []
    for slot in votes.values():
        best = max(slot["counts"].values())
        tied = [cid for cid, n in slot["counts"].items() if n == best]
        pick = min(tied, key=lambda cid: slot["first"][cid][:2])
        cfg = slot["first"][pick][2]
        entries.append({"key": slot["key"], "winner": {
            "config": cfg, "time_ms": None, "ties": [],
            "provenance": {"votes": dict(sorted(slot["counts"].items())), "recordings": len(docs),
                           "rule": "majority; a tie goes to the lowest rank's choice"},
            "recorded_at": now()}, "candidates": [
            {"config": cfg, "status": "not_timed", "time_ms": None, "measurement": None,
             "reason": f"pinned: chosen by {best} of {sum(slot['counts'].values())} recordings",
             "provenance": {"pinned": True}, "recorded_at": now()}]})  # fmt: skip
    entries.sort(key=lambda e: json.dumps(e["key"], sort_keys=True))
    return {"format": FORMAT, "pinned": True, "provenance": [d["provenance"] for _, _, d in docs],
            "exported_at": now(), "entries": entries}  # fmt: skip


def stale(table: str | Path) -> list[str]:
    """What differs between the run that made a merged ``table`` and this process: Triton, torch or a library's
    version, or the GPU (one line each; empty when nothing did). A key whose kernel source changed is not served
    from the table at all (its store key differs)."""
    doc = json.loads(Path(table).read_text())
    here = provenance()
    out = []
    for made in doc.get("provenance") or []:
        for name in ("triton", "torch", "gpu"):
            if made.get(name) and here.get(name) and made[name] != here[name]:
                out.append(f"{table}: made with {name} {made[name]}, this run has {here[name]}")
        for lib, v in (made.get("libraries") or {}).items():
            now_v = here["libraries"].get(lib)
            if now_v and now_v != v:
                out.append(f"{table}: made with {lib} {v}, this run has {now_v}")
    return sorted(set(out))


def check_choices(group: Any = None, *, timeout_s: float | None = None) -> str:
    """Collective: every rank's choices must be alike (the digest of :func:`choices`); raises ``DistributedError``
    naming, for each rank that differs from rank 0, the kernels and keys where it chose otherwise. Returns the
    digest."""
    from tritune.ranks.group import resolve_group

    tg = resolve_group(group, timeout_s)
    mine = choices()
    everyone = tg.all_gather((digest(mine), mine), "choices", "compare the ranks' choices", timeout_s)
    ref_digest, ref = everyone[0]
    bad = []
    for r, (d, theirs) in enumerate(everyone):
        if d == ref_digest:
            continue
        a = {(c["kernel"], c["key"]): Config.from_json(c["config"]).id for c in ref}
        b = {(c["kernel"], c["key"]): Config.from_json(c["config"]).id for c in theirs}
        diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        shown = "; ".join(f"{k} {key}: rank 0 {a.get((k, key))}, rank {r} {b.get((k, key))}" for k, key in diff[:5])
        bad.append(f"{tg.describe(r)} differs on {len(diff)} key(s): {shown}")
    if bad:
        raise DistributedError("the ranks did not choose alike: " + "; ".join(bad))
    return str(ref_digest)


def record_at_exit_from_environment() -> None:
    """``$TRITUNE_RECORD=path``: record this process's choices when it exits."""
    path = os.environ.get("TRITUNE_RECORD", "").strip()
    if path:
        atexit.register(_record_quietly, path)


def _record_quietly(path: str) -> None:
    try:
        record_choices(path)
    except Exception as e:  # at exit: say it, never raise
        print(f"tritune: $TRITUNE_RECORD={path}: could not record the choices: {e}", file=sys.stderr)


def _rank() -> int:
    from tritune.ranks.group import rank_and_world

    return rank_and_world()[0]


def configs_of(entries: Iterable[dict[str, Any]]) -> list[Config]:
    """The configs of recorded choices."""
    return [Config.from_json(c["config"]) for c in entries]

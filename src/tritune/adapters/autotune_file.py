"""Triton's autotuning results on disk, read and written exactly as ``Autotuner.check_disk_cache`` does.

With ``cache_results=True`` (or ``TRITON_CACHE_AUTOTUNING=1``), Triton keeps each new key's timings in
``<cache dir>/<base32 of a SHA-256>/<kernel>.autotune.json`` (``{"key": [...], "configs_timings": [[config.__dict__,
timing], ...]}``) through its cache manager (so ``TRITON_CACHE_DIR`` and ``TRITON_CACHE_MANAGER`` decide where), and a
later process with the same Triton, backend, kernel source, environment, key and pruned configs reads it instead
of benchmarking. Libraries ship configs built from these files (flash-linear-attention's export scripts read every
``*.autotune.json`` under the cache directory), so tritune writes them too, in addition to its own store.

The hash and the names come from the installed ``triton.runtime.autotuner`` module, the one whose
``check_disk_cache`` they mirror (the same in Triton 3.6 through 3.9).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AutotuneFile:
    """One key's ``*.autotune.json``: ``manager`` is Triton's cache manager for its directory."""

    manager: Any
    name: str

    def load(self) -> dict[Any, Any] | None:
        """``{triton.Config: timing}`` as Triton reads the file (new ``Config(**fields)`` objects, in the file's
        order), or None when there is no file."""
        import triton

        path = self.manager.get_file(self.name)
        if not path:
            return None
        with open(path) as f:
            rows = json.load(f)["configs_timings"]
        return {triton.Config(**fields): timing for fields, timing in rows}

    def save(self, key: tuple[Any, ...], rows: Sequence[tuple[Mapping[str, Any], Any]]) -> None:
        """Write ``rows`` (each config's fields, as ``config.__dict__``, and its timing) under ``key``, as Triton
        writes them (its cache manager replaces the file atomically)."""
        self.manager.put(json.dumps({"key": key, "configs_timings": list(rows)}), self.name, binary=False)


def autotune_file(jit_fn: Any, key: tuple[Any, ...], configs: Sequence[Any]) -> AutotuneFile | None:
    """The file Triton keeps for ``key`` of the kernel ``jit_fn`` benchmarked over ``configs`` (the pruned list, in
    order), or None where Triton keeps none: an empty key, a config with a ``pre_hook`` (it cannot be saved), a
    kernel without Triton's source hash (``cache_key``), or no active driver to name the target."""
    if not key or any(getattr(c, "pre_hook", None) for c in configs):
        return None
    import triton.runtime.autotuner as at
    from triton.compiler.compiler import make_backend

    source = getattr(jit_fn, "cache_key", None)
    if source is None:
        return None
    try:
        backend = make_backend(at.driver.active.get_current_target()).hash()
    except RuntimeError:  # no active driver: nothing Triton could have written or could read
        return None
    env_vars = at.get_cache_invalidating_env_vars()
    parts = [at.triton_key(), backend, source, str(sorted(env_vars.items())), str(key)] + [str(c) for c in configs]
    digest = hashlib.sha256("-".join(parts).encode("utf-8")).hexdigest()
    return AutotuneFile(at.get_cache_manager(digest), f"{jit_fn.__name__[:150]}.autotune.json")

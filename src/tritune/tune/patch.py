"""The process-wide switch: Triton's autotuner names resolve to tritune's engine.

``tritune.patch_triton()`` rebinds ``triton.autotune``, ``triton.runtime.autotune``,
``triton.runtime.autotuner.autotune``, ``triton.runtime.Autotuner`` and
``triton.runtime.autotuner.Autotuner`` to :func:`~tritune.tune.triton_api.triton_autotune` and
:class:`~tritune.tune.triton_api.TritonAutotuner`. Code that looks these names up after the call (a library
imported afterwards, a subclass defined afterwards) gets tritune's engine; objects made before keep Triton's.
``unpatch_triton()`` puts Triton's back; ``patched_triton()`` is the context-manager form;
``TRITUNE_PATCH_TRITON=1`` patches at ``import tritune``; ``python -m tritune run script.py`` runs a script
with the switch on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["is_patched", "patch_triton", "patched_triton", "unpatch_triton"]

#: (module name, attribute, which replacement) for every place Triton exposes its autotuner.
_SITES = (
    ("triton", "autotune", "autotune"),
    ("triton.runtime", "autotune", "autotune"),
    ("triton.runtime.autotuner", "autotune", "autotune"),
    ("triton.runtime", "Autotuner", "Autotuner"),
    ("triton.runtime.autotuner", "Autotuner", "Autotuner"),
)
_saved: dict[tuple[str, str], Any] = {}


def _module(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


def is_patched() -> bool:
    return bool(_saved)


def patch_triton() -> None:
    """Make Triton's autotuner names use tritune's engine, for code that looks them up from now on.

    Idempotent. Every kernel tuned through them gets the store, the screen before launch, the race and the
    fast dispatch; ``triton.Config`` and ``triton.heuristics`` stay Triton's own.
    """
    from tritune.tune.triton_api import TritonAutotuner, triton_autotune

    if _saved:
        return
    new = {"autotune": triton_autotune, "Autotuner": TritonAutotuner}
    for mod, attr, which in _SITES:
        m = _module(mod)
        if hasattr(m, attr):
            _saved[(mod, attr)] = getattr(m, attr)
            setattr(m, attr, new[which])


def unpatch_triton() -> None:
    """Put Triton's own autotuner back (objects made while patched keep tritune's engine). Idempotent."""
    for (mod, attr), value in list(_saved.items()):
        setattr(_module(mod), attr, value)
    _saved.clear()


@contextmanager
def patched_triton() -> Iterator[None]:
    """``with tritune.patched_triton(): import some_library`` — patched inside, as before afterwards."""
    was = is_patched()
    patch_triton()
    try:
        yield
    finally:
        if not was:
            unpatch_triton()


def patch_from_environment() -> None:
    """``TRITUNE_PATCH_TRITON=1`` (or true/yes/on) patches at ``import tritune``."""
    if os.environ.get("TRITUNE_PATCH_TRITON", "").strip().lower() in ("1", "true", "yes", "on"):
        patch_triton()

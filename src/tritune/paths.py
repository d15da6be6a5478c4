"""Where tritune keeps its own files: one user cache directory, for the default store and the Triton key memo."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``<user cache dir>/tritune`` (platformdirs; ``$XDG_CACHE_HOME/tritune`` or ``~/.cache/tritune`` where platformdirs is not installed)."""
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("tritune"))
    except ImportError:  # as platformdirs on Linux: $XDG_CACHE_HOME when set (the device has no platformdirs)
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "tritune"

"""Where tritune keeps its own files: one user cache directory, for the default store and the Triton key memo."""

from __future__ import annotations

from pathlib import Path


def user_cache_dir() -> Path:
    """``<user cache dir>/tritune`` (platformdirs; ``~/.cache/tritune`` where platformdirs is not installed)."""
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("tritune"))
    except ImportError:
        return Path.home() / ".cache" / "tritune"

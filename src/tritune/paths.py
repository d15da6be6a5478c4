"""Where tritune keeps its own files (one user cache directory), and the one way it writes an output file.

Every output a command writes (``--json``, ``--record``, ``tritune cache export``, a report's HTML and
figures) goes through :func:`write_output`: the bytes go to a new temporary file in the same folder, which is
then renamed over the destination. A rename replaces the name itself, so a symlink at the destination is never
followed (another user's ``/tmp/result.json`` link cannot make you overwrite the file it points at), and a
reader never sees half a file. Before that, :func:`output_problem` refuses a destination that is a symlink, a
directory, anything but a regular file (``/dev/full`` is not replaced by a JSON file, even as root), or an
existing source file (``.py``, ``README``...).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from tritune.errors import OutputPathError

#: Suffixes of files an output never overwrites: a workload's or a project's own sources.
SOURCE_SUFFIXES = frozenset(
    {".py", ".pyi", ".pyx", ".ipynb", ".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".sh", ".toml",
     ".cfg", ".ini", ".md", ".rst"}
)  # fmt: skip
#: Names (before any suffix, any case) of project files an output never overwrites.
SOURCE_NAMES = frozenset({"readme", "license", "licence", "copying", "makefile", "dockerfile", "notice"})


def user_cache_dir() -> Path:
    """``<user cache dir>/tritune`` (platformdirs; ``$XDG_CACHE_HOME/tritune`` or ``~/.cache/tritune`` where platformdirs is not installed)."""
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("tritune"))
    except ImportError:  # as platformdirs on Linux: $XDG_CACHE_HOME when set (the device has no platformdirs)
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "tritune"


def is_source_file(path: Path) -> bool:
    """Whether ``path``'s name is that of a source file (by suffix, or a README/LICENSE-like name)."""
    name = path.name.lower()
    return path.suffix.lower() in SOURCE_SUFFIXES or name.split(".", 1)[0] in SOURCE_NAMES


def output_problem(path: Path) -> str | None:
    """Why an output must not replace what is at ``path`` (judged without following a symlink), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink; outputs never follow one: remove it or give another file name"
    if stat.S_ISDIR(st.st_mode):
        return f"{path} is a directory; give a file name such as {path / 'result.json'}"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file (a device, pipe or socket); give a file name"
    if is_source_file(path):
        return f"{path}: refusing to overwrite an existing {path.suffix or path.name} file; give a new file name"
    return None


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_output(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` as described in the module docstring; returns the path.

    Raises :class:`~tritune.errors.OutputPathError` (an OSError) for a refused destination, OSError when the
    folder cannot take the file; nothing at ``path`` changes then.
    """
    p = Path(path)
    problem = output_problem(p)
    if problem is not None:
        raise OutputPathError(problem)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    folder = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)  # O_EXCL | O_NOFOLLOW, 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # as a file opened for writing would have been made
            os.fsync(f.fileno())
        problem = output_problem(p)  # checked again just before the rename, which replaces only the name
        if problem is not None:
            raise OutputPathError(problem)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p

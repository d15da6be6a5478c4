"""Which of a library's autotuners have a space derived from their kernel's source, and how large.

For every ``triton.autotune`` kernel defined in the given packages (and their subpackages), the space
:func:`tritune.space.derive_space` finds with the kernel's own configs' parameters left to it (the caller passes
every other argument), and with no sizes to bound it; or why there is none. ``widen="derived"`` adds that space,
bounded by each call's sizes, to the kernel's list (``docs/spaces.md``). Runs on a CPU (with
``TRITON_INTERPRET=1`` for libraries that look for a GPU at import):

  TRITON_INTERPRET=1 PYTHONPATH=<site>:src python3 benchmarks/derivable.py liger_kernel.ops fla.modules
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Iterator
from typing import Any

from triton.runtime.autotuner import Autotuner

from tritune.adapters.kernel import unwrap_jit
from tritune.space import derive_space
from tritune.space.derive import heuristics_of


def autotuners(packages: list[str]) -> Iterator[tuple[str, Any]]:
    """(module.name, autotuner) for every Triton autotuner defined at module level in ``packages``, once each; a
    module that does not import is skipped (named on stderr)."""
    seen: set[int] = set()
    for root in packages:
        pkg = importlib.import_module(root)
        names = [root]
        if hasattr(pkg, "__path__"):
            names += [m.name for m in pkgutil.walk_packages(pkg.__path__, root + ".")]
        for name in names:
            try:
                mod = importlib.import_module(name)
            except Exception as e:  # a module that needs what this machine lacks
                print(f"# {name}: not imported ({type(e).__name__})", file=sys.stderr)
                continue
            for attr, value in vars(mod).items():
                if isinstance(value, Autotuner) and id(value) not in seen:
                    seen.add(id(value))
                    yield f"{name}.{attr}", value


def derivation(tuner: Any) -> tuple[int | None, str]:
    """The size of the kernel's derived space with its configs' parameters left free, or None and why not."""
    left = {n for c in tuner.configs for n in c.kwargs} | heuristics_of(tuner.fn)
    passed = [a for a in unwrap_jit(tuner.fn).arg_names if a not in left]
    d = derive_space(tuner.fn, passed=passed)
    return (None, d.reason or "") if d.space is None else (len(d.space), "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("packages", nargs="+", help="packages to walk (liger_kernel.ops, fla.modules, flag_gems.ops)")
    args = p.parse_args(argv)
    rows = [(name, len(t.configs), *derivation(t)) for name, t in autotuners(args.packages)]
    print("| autotuner | configs written | derived space | why none |")
    print("|---|---|---|---|")
    for name, written, size, why in rows:
        print(f"| {name} | {written} | {'-' if size is None else size} | {why} |")
    sizes = [s for _, _, s, _ in rows if s is not None]
    span = f" ({min(sizes)}-{max(sizes)} configs)" if sizes else ""
    print(f"{len(sizes)} of {len(rows)} autotuners have a derived space{span}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

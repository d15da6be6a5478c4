"""Triton's ``triton_key()`` in a fresh process: Triton's own function against tritune's memo of it (issue #16).

Each sample is a fresh interpreter that imports Triton and tritune, then times one call of
``triton.runtime.cache.triton_key()`` (imports not counted): ``original`` with ``TRITUNE_TRITON_KEY_MEMO=0``,
``memo_first`` with an empty memo (the original's hash plus the fingerprint and the write; once), ``memo`` with
the memo warm (install + fingerprint + read). The memo file lives in a temporary ``XDG_CACHE_HOME``, so the
user's own is untouched. Every sample must return the same key. Medians over ``--repeats``; the ratio is
memo / original.

    PYTHONPATH=src python3 benchmarks/triton_key_memo.py [--repeats 7] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, time
import triton, triton.runtime.cache as c
import tritune.adapters.triton_key as tk
t = time.perf_counter()
tk.install_triton_key_memo()
key = c.triton_key()
dt = time.perf_counter() - t
m = tk.installed_triton_key_memo()
fp_s = None
if m is not None:
    t = time.perf_counter()
    tk.triton_files_fingerprint(m.root, m.cache_file, m.version)
    fp_s = time.perf_counter() - t
print(json.dumps({"s": dt, "source": m.source if m else "off", "fingerprint_s": fp_s, "key": key,
                  "triton": triton.__version__}))
"""


def sample(cache_home: str, memo_on: bool) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "XDG_CACHE_HOME": cache_home, "TRITUNE_TRITON_KEY_MEMO": "1" if memo_on else "0"}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True,
                         timeout=600)  # fmt: skip
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as home:
        sample(home, False)  # warms the page cache with libtriton.so, as a machine in use has it
        first = sample(home, True)
        assert first["source"] == "computed", first["source"]
        original = [sample(home, False) for _ in range(a.repeats)]
        memo = [sample(home, True) for _ in range(a.repeats)]
    keys = {r["key"] for r in [first, *original, *memo]}
    assert len(keys) == 1, "the memo returned another key than Triton's function"
    assert all(r["source"] == "memo" for r in memo), [r["source"] for r in memo]
    med = {name: statistics.median(float(r["s"]) for r in rows)  # type: ignore[arg-type]
           for name, rows in (("original", original), ("memo", memo))}  # fmt: skip
    fp = statistics.median(float(r["fingerprint_s"]) for r in memo)  # type: ignore[arg-type]
    prov = {"triton": first["triton"], "python": platform.python_version(), "cpu": platform.processor() or "cpu",
            "cores": os.cpu_count(), "repeats": a.repeats, "command": " ".join(sys.argv)}  # fmt: skip
    print(f"# triton_key in a fresh process, {prov}")
    print(f"original (Triton's hash)      {med['original'] * 1e3:9.2f} ms  (samples {[round(float(r['s']) * 1e3, 1) for r in original]})")  # type: ignore[arg-type]
    print(f"memo, first process (cold)    {float(first['s']) * 1e3:9.2f} ms  (hash + fingerprint + write)")  # type: ignore[arg-type]
    print(f"memo, warm                    {med['memo'] * 1e3:9.2f} ms  (samples {[round(float(r['s']) * 1e3, 2) for r in memo]})")  # type: ignore[arg-type]
    print(f"  of which the fingerprint    {fp * 1e3:9.2f} ms")
    print(f"ratio memo / original         {med['memo'] / med['original']:9.4f}  (saves {(med['original'] - med['memo']) * 1e3:.1f} ms a process)")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "triton_key_memo.json").write_text(json.dumps(
            {"provenance": prov, "original_s": med["original"], "memo_s": med["memo"], "memo_first_s": first["s"],
             "fingerprint_s": fp, "ratio": med["memo"] / med["original"],
             "original_samples_s": [r["s"] for r in original], "memo_samples_s": [r["s"] for r in memo]}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""FlagGems', Liger-Kernel's and fla's own tests for the tuned ops, once under Triton's autotuner and once under tritune's.

The test files are the libraries' own, carried unedited under ``--ref`` (``bash benchmarks/fetch.sh libtests`` gathers
them; they are never committed). Each engine runs every suite in its own process tree with its own empty Triton
cache, tritune store and FlagGems tuning cache; the tritune side runs ``python -m tritune run -m pytest``, the
process-wide switch. The two engines run side by side (correctness only: no timing is compared), each within
``--budget-s``. Printed: per suite and engine, passed / failed / errors / skipped, and every test whose outcome
differs between the engines. A suite whose files or imports are missing is reported as not run, with the reason.

  PYTHONPATH=src:/tmp/site python3 benchmarks/libtests.py --ref .ref/libtests --out /tmp/res/libtests
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENGINES = ("triton", "tritune")
OUTCOME = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


@dataclass(frozen=True)
class Suite:
    """One pytest invocation: run in ``ref/root``, needing ``imports`` to be importable there."""

    name: str
    root: str
    args: tuple[str, ...]
    imports: tuple[str, ...]
    files: tuple[str, ...] = field(default=())


SUITES = (
    Suite("flag_gems blas (mm, addmm, bmm; quick shapes)", "flag_gems",
          ("tests/test_blas_ops.py", "--mode", "quick", "-k", "test_accuracy_mm or test_accuracy_addmm or test_accuracy_bmm"),
          ("flag_gems", "numpy"), ("tests/test_blas_ops.py",)),
    Suite("flag_gems mm, Hopper host-TMA path (fp16 15x160x1024)", "flag_gems",
          ("tests/test_blas_ops.py", "-k", "test_accuracy_mm and False-dtype0-15-160-1024"),
          ("flag_gems", "numpy"), ("tests/test_blas_ops.py",)),
    Suite("flag_gems norms (layer_norm, rms_norm, batch_norm; quick)", "flag_gems",
          ("tests/test_norm_ops.py", "--mode", "quick", "-k",
           "test_accuracy_layernorm or test_accuracy_rmsnorm or test_accuracy_batch_norm"),
          ("flag_gems", "numpy"), ("tests/test_norm_ops.py",)),
    Suite("flag_gems softmax, argmin (quick)", "flag_gems",
          ("tests/test_reduction_ops.py", "--mode", "quick", "-k", "test_accuracy_softmax or test_accuracy_argmin"),
          ("flag_gems", "numpy"), ("tests/test_reduction_ops.py",)),
    Suite("flag_gems sum_dim (quick)", "flag_gems",
          ("tests/test_general_reduction_ops.py", "--mode", "quick", "-k", "test_accuracy_sum_dim"),
          ("flag_gems", "numpy"), ("tests/test_general_reduction_ops.py",)),
    Suite("liger dyt (autotuned fwd/bwd)", "liger_kernel",
          ("test/transformers/test_dyt.py", "-k", "4096 or 1023"),
          ("liger_kernel", "transformers", "tokenizers"), ("test/transformers/test_dyt.py",)),
    Suite("liger mlp / swiglu (autotuned, host descriptors)", "liger_kernel",
          ("test/transformers/test_mlp.py", "-k", "test_correctness_inference_mode and 2-256-256-512"),
          ("liger_kernel", "transformers", "tokenizers"), ("test/transformers/test_mlp.py",)),
    # fla's tests compare each chunked kernel (forward and backward) with fla's recurrent reference, per shape; every
    # shape is a new key that Triton tunes for minutes on the chunked ops, so these run each op's first shape only
    Suite("fla norms (LayerNorm, RMSNorm fwd/bwd)", "fla",
          ("tests/modules/test_layernorm.py::test_layernorm", "tests/modules/test_layernorm.py::test_rmsnorm"),
          ("fla", "einops", "transformers"), ("tests/modules/test_layernorm.py",)),
    Suite("fla delta rule, chunked fwd/bwd (first shape)", "fla",
          ("tests/ops/test_delta.py::test_chunk", "-k", "B1-T63"), ("fla", "einops"), ("tests/ops/test_delta.py",)),
    Suite("fla retention, chunked fwd/bwd (first shape)", "fla",
          ("tests/ops/test_retention.py::test_chunk", "-k", "B1-T63"), ("fla", "einops"), ("tests/ops/test_retention.py",)),
    Suite("fla GLA, chunked fwd/bwd (first shape)", "fla",
          ("tests/ops/test_gla.py::test_chunk", "-k", "B1-T63"), ("fla", "einops"), ("tests/ops/test_gla.py",)),
)


def missing(suite: Suite, ref: Path) -> str | None:
    """Why ``suite`` cannot run here (its files or a module it imports are absent), else None."""
    root = ref / suite.root
    absent = [f for f in suite.files if not (root / f).is_file()]
    if absent:
        return f"test files not carried: {', '.join(str(root / f) for f in absent)} (run bash benchmarks/fetch.sh libtests)"
    code = "import importlib.util, sys; print(','.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
    p = subprocess.run([sys.executable, "-c", code, "pytest", *suite.imports], capture_output=True, text=True,
                       cwd=root, timeout=120)  # fmt: skip
    gone = p.stdout.strip()
    if gone or p.returncode:
        return f"not importable on this machine: {gone or p.stderr.strip()[-300:]} (carry their wheels in .whl/libtests)"
    return None


def selected(suite: Suite, words: list[str]) -> bool:
    """Whether ``--suites`` picks ``suite``: a library's folder names all its suites and only those (``fla`` is not
    ``flag_gems``); another word picks the suites whose name contains it."""
    roots = {s.root for s in SUITES}
    return any(suite.root == w if w in roots else w in suite.name for w in words)


def run_engine(engine: str, suites: list[Suite], ref: Path, out: Path, deadline: float) -> dict[str, Any]:
    """Run ``suites`` one after another under ``engine``; outcomes per test id, counts, time, log path."""
    scratch = Path(tempfile.mkdtemp(prefix=f"libtests_{engine}_"))
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(scratch / "triton-cache")
    env["TRITUNE_STORE"] = str(scratch / "tritune-store")
    env["FLAGGEMS_CACHE_DIR"] = str(scratch / "flaggems-cache")
    env.pop("TRITON_INTERPRET", None)
    env.pop("TRITUNE_PATCH_TRITON", None)
    head = [sys.executable, "-m", "pytest"] if engine == "triton" else [sys.executable, "-m", "tritune", "run", "-m", "pytest"]
    results: dict[str, Any] = {}
    for i, suite in enumerate(suites):
        left = deadline - time.time()
        log = out / f"{engine}_{i}.log"
        if left < 5:
            results[suite.name] = {"ran": False, "why": "not run: the engine's --budget-s was spent"}
            continue
        # live logging (fla's pyproject turns it on) puts a test's outcome lines below its id: off, so that each
        # outcome stays on its test's line
        cmd = [*head, "-p", "no:cacheprovider", "-o", "log_cli=false", "-v", "-rs", *suite.args]
        t0 = time.time()
        with log.open("w") as f:
            f.write(" ".join(cmd) + "\n")
            f.flush()
            try:
                rc: int | None = subprocess.run(cmd, cwd=ref / suite.root, env=env, stdout=f, stderr=subprocess.STDOUT,
                                                timeout=left).returncode  # fmt: skip
            except subprocess.TimeoutExpired:
                rc = None
        outcomes = {}
        for line in log.read_text(errors="replace").splitlines():
            m = OUTCOME.match(line)
            if m:
                outcomes[m.group(1)] = m.group(2)
        counts = {k: sum(1 for v in outcomes.values() if v == k) for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
        results[suite.name] = {"ran": True, "rc": rc, "timed_out": rc is None, "wall_s": round(time.time() - t0, 1),
                               "counts": counts, "outcomes": outcomes, "log": str(log)}  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ref", type=Path, default=Path(".ref/libtests"), help="the carried test files")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--budget-s", type=float, default=210.0, help="wall seconds per engine (they run side by side)")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--suites", default="", help="run only these comma-separated suites: a library's folder under "
                   "--ref (flag_gems, liger_kernel, fla) selects its suites, any other word the suites whose name "
                   "contains it (e.g. 'norms'); the others are listed as not run")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    ref = args.ref.resolve()
    runnable, skipped = [], {}
    words = [w for w in args.suites.split(",") if w]
    for s in SUITES:
        why = missing(s, ref)
        if words and not selected(s, words):
            why = f"not selected (--suites {args.suites})"
        if why is None:
            runnable.append(s)
        else:
            skipped[s.name] = why
    engines = [e for e in ENGINES if e in args.engines.split(",")]
    deadline = time.time() + args.budget_s
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda e=e: results.__setitem__(e, run_engine(e, runnable, ref, args.out, deadline)))
               for e in engines]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = {"suites": [s.name for s in SUITES], "not_run": skipped, "engines": results,
              "python": sys.version.split()[0]}  # fmt: skip
    (args.out / "libtests.json").write_text(json.dumps(report, indent=1))
    print("| suite | engine | passed | failed | errors | skipped | wall s | note |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {e: {"PASSED": 0, "FAILED": 0, "ERROR": 0, "SKIPPED": 0} for e in engines}
    for s in SUITES:
        if s.name in skipped:
            print(f"| {s.name} | - | - | - | - | - | - | NOT RUN: {skipped[s.name]} |")
            continue
        for e in engines:
            r = results[e][s.name]
            if not r["ran"]:
                print(f"| {s.name} | {e} | - | - | - | - | - | {r['why']} |")
                continue
            c = r["counts"]
            for k in totals[e]:
                totals[e][k] += c[k]
            note = "TIMED OUT (counts so far)" if r["timed_out"] else ("" if r["rc"] in (0, 5) else f"pytest rc {r['rc']}")
            if not r["outcomes"] and r["rc"] not in (0, 5):
                errs = [ln for ln in Path(r["log"]).read_text(errors="replace").splitlines() if ln.startswith("E ")]
                note += f"; no test ran: {errs[-1][1:].strip()[:160] if errs else 'see ' + r['log']}"
            print(f"| {s.name} | {e} | {c['PASSED']} | {c['FAILED']} | {c['ERROR']} | {c['SKIPPED']} | {r['wall_s']} | {note} |")
    for e in engines:
        t = totals[e]
        print(f"total {e}: passed {t['PASSED']}, failed {t['FAILED']}, errors {t['ERROR']}, skipped {t['SKIPPED']}")
    if len(engines) == 2:
        differ = []
        for s in runnable:
            a, b = results[engines[0]][s.name], results[engines[1]][s.name]
            for tid in sorted(set(a.get("outcomes", {})) & set(b.get("outcomes", {}))):
                if a["outcomes"][tid] != b["outcomes"][tid]:
                    differ.append(f"{tid}: {engines[0]} {a['outcomes'][tid]}, {engines[1]} {b['outcomes'][tid]}")
        print(f"tests whose outcome differs between the engines: {len(differ)}")
        for d in differ[:40]:
            print("  " + d)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Triton's tutorials 03 (matmul) and 06 (fused attention), unchanged, plain and under ``python -m tritune run``.

GPU only. The tutorial files are not part of tritune: put ``03-matrix-multiplication.py`` and
``06-fused-attention.py`` (from the installed Triton's release; ``bash benchmarks/fetch.sh tutorials`` writes them into
``.ref/tutorials``) in a folder and pass it:

  PYTHONPATH=src python3 benchmarks/tutorials_check.py TUTORIAL_DIR --out results/tutorials

Each run is a fresh process with its own empty Triton cache and tritune store: once as
``python benchmarks/tutorials_check.py --child`` (Triton's autotuner), once as
``python -m tritune run benchmarks/tutorials_check.py --child`` (tritune's engine, process-wide).
The child imports each tutorial file as a module without editing it (``real_libraries.load_tutorial``, which
real_libraries.py's ``tut_`` ops use too); only the plotting benchmark that tutorial 03 runs at import
(``triton.testing.perf_report(...).run``) is replaced by a no-op during the import. It then calls the tutorials'
own functions on seeded inputs:

- 03: ``matmul(a, b)`` and ``matmul(a, b, activation="leaky_relu")`` (the activation is a helper
  defined after the autotuned kernel);
- 06: ``attention(q, k, v, causal, sm_scale[, warp_specialize])`` forward and backward, with host
  tensor descriptors (the tutorial's choice on an H100/H200: a ``Config.pre_hook`` sets their
  block shapes) and with device-side descriptors (``supports_host_descriptor`` replaced by
  ``lambda: False`` on the imported module).

The parent compares each output of the tritune run with the plain run (and with torch), prints a
table and writes ``results.json`` with provenance into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from real_libraries import load_tutorial  # the one loader of the tutorial files, shared with the tut_ ops

MODES = ("plain", "tritune")
TOL = {"03": (1e-2, 0.0), "06": (1e-2, 1e-2)}  # (atol, rtol): the tutorials' own checks use atol 1e-2


def _case_03(mod: Any, torch: Any, activation: str) -> dict[str, Any]:
    outs = {}
    for m, n, k in ((512, 512, 512), (1000, 768, 1536)):
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn((m, k), device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16, generator=g)
        c = mod.matmul(a, b, activation=activation) if activation else mod.matmul(a, b)
        ref = torch.matmul(a, b)
        if activation == "leaky_relu":
            ref = torch.where(ref >= 0, ref, 0.01 * ref)
        outs[f"{m}x{n}x{k}"] = c
        outs[f"{m}x{n}x{k}:torch"] = ref
    return outs


def _case_06(mod: Any, torch: Any, host: bool) -> dict[str, Any]:
    flag = "supports_host_descriptor" if hasattr(mod, "supports_host_descriptor") else "supports_tma"
    real = getattr(mod, flag)
    if not host:
        setattr(mod, flag, lambda: False)
    try:
        z, h, n_ctx, d = 2, 4, 1024, 64
        g = torch.Generator(device="cuda").manual_seed(20)
        q, k, v = (
            (torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16, generator=g) * 0.5).requires_grad_()
            for _ in range(3)
        )
        dout = torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16, generator=g)
        params = list(inspect.signature(mod._attention.forward).parameters)[1:]  # after ctx
        args: list[Any] = [q, k, v, True, 0.5]
        if "warp_specialize" in params:
            args.append(False)
        out = mod.attention(*args)
        out.backward(dout)
        mask = torch.tril(torch.ones((n_ctx, n_ctx), device="cuda")) == 0
        p = torch.matmul(q, k.transpose(2, 3)) * 0.5
        p[:, :, mask] = float("-inf")
        ref = torch.matmul(torch.softmax(p.float(), dim=-1).half(), v)
        return {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad, "out:torch": ref.detach(),
                "flag": f"{flag}={'as is' if host else 'False'}"}
    finally:
        setattr(mod, flag, real)


def child_main(tutorials: Path, out: Path) -> int:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, Any] = {}
    mods: dict[str, Any] = {}
    plan = [
        ("03_matmul", "03", lambda m: _case_03(m, torch, "")),
        ("03_matmul_leaky_relu", "03", lambda m: _case_03(m, torch, "leaky_relu")),
        ("06_attention_host_desc", "06", lambda m: _case_06(m, torch, True)),
        ("06_attention_device_desc", "06", lambda m: _case_06(m, torch, False)),
    ]
    files = {"03": "03-matrix-multiplication.py", "06": "06-fused-attention.py"}
    for name, tut, run in plan:
        rec: dict[str, Any] = {}
        try:
            if tut not in mods:
                mods[tut] = load_tutorial(tutorials / files[tut], f"tutorial_{tut}")
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            res = run(mods[tut])
            torch.cuda.synchronize()
            rec["first_call_s"] = time.perf_counter() - t0
            rec["flag"] = res.pop("flag", None)
            path = out / f"{name}.pt"
            torch.save({k: v.detach().cpu() for k, v in res.items()}, path)
            rec.update(ok=True, output=str(path))
        except Exception as e:
            rec.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000], trace=traceback.format_exc()[-4000:])
        cases[name] = rec
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    return 0


def _run_mode(mode: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(scratch / mode / "triton-cache")
    env["TRITUNE_STORE"] = str(scratch / mode / "tritune-store")
    env.pop("TRITON_INTERPRET", None)
    here = str(Path(__file__).resolve())
    child = [here, "--child", str(args.tutorials), "--out", str(args.out / mode)]
    cmd = [sys.executable, *child] if mode == "plain" else [sys.executable, "-m", "tritune", "run", *child]
    t0 = time.perf_counter()
    with (args.out / f"{mode}.log").open("w") as log:
        p = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout)
    res: dict[str, Any] = {"rc": p.returncode, "wall_s": time.perf_counter() - t0, "command": cmd}
    cases = args.out / mode / "cases.json"
    res["cases"] = json.loads(cases.read_text()) if cases.exists() else {}
    if p.returncode != 0 and not res["cases"]:
        res["error"] = f"exited {p.returncode}; see {args.out / (mode + '.log')}"
    return res


def _compare(name: str, plain: dict[str, Any], tuned: dict[str, Any]) -> dict[str, Any]:
    import torch

    if not (plain.get("ok") and tuned.get("ok")):
        return {"equal": None}
    a, b = torch.load(plain["output"]), torch.load(tuned["output"])
    atol, rtol = TOL[name[:2]]
    rows = {}
    for key in a:
        if key.endswith(":torch"):
            continue
        got = {"max_abs_diff_vs_plain": float((a[key].float() - b[key].float()).abs().max())}
        try:
            torch.testing.assert_close(b[key], a[key], atol=atol, rtol=rtol)
            got["equal_to_plain"] = True
        except AssertionError:
            got["equal_to_plain"] = False
        ref = b.get(f"{key}:torch")
        if ref is not None:
            got["max_abs_diff_vs_torch"] = float((b[key].float() - ref.float()).abs().max())
        rows[key] = got
    return {"equal": all(r["equal_to_plain"] for r in rows.values()), "tensors": rows}


def parent_main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tutorials_check_"))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    runs = {m: _run_mode(m, args, scratch) for m in MODES}
    names = sorted(set(runs["plain"]["cases"]) | set(runs["tritune"]["cases"]))
    table = {n: _compare(n, runs["plain"]["cases"].get(n, {}), runs["tritune"]["cases"].get(n, {})) for n in names}
    prov = {"date": started, "command": " ".join([sys.executable, *sys.argv]), "versions": _versions()}
    (args.out / "results.json").write_text(json.dumps({"provenance": prov, "runs": runs, "compare": table}, indent=1))
    print(f"# tutorials, {prov['versions']}, {started}")
    print("| case | plain | tritune | equal | first call plain s | first call tritune s | ratio |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for n in names:
        p, t = runs["plain"]["cases"].get(n, {}), runs["tritune"]["cases"].get(n, {})
        ps, ts = p.get("first_call_s"), t.get("first_call_s")
        ratio = f"{ts / ps:.2f}" if ps and ts else "-"
        print(f"| {n} | {'ok' if p.get('ok') else 'FAIL'} | {'ok' if t.get('ok') else 'FAIL'} | "
              f"{table[n]['equal']} | {ps or 0:.2f} | {ts or 0:.2f} | {ratio} |")
        for mode, r in (("plain", p), ("tritune", t)):
            if r.get("error"):
                print(f"|   {mode} error: {r['error'][:300]} |")
        ok = ok and bool(table[n]["equal"])
    for m in MODES:
        if runs[m].get("error"):
            print(f"{m}: {runs[m]['error']}")
    return 0 if ok and names else 1


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for mod in ("torch", "triton"):
        try:
            out[mod] = str(__import__(mod).__version__)
        except Exception:
            out[mod] = None
    from tritune.bench.provenance import gpu_and_driver

    out["gpu"], out["driver"] = gpu_and_driver()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tutorials", type=Path, help="folder holding 03-matrix-multiplication.py and 06-fused-attention.py")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--timeout", type=int, default=240, help="seconds per run (plain, tritune)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.tutorials = args.tutorials.resolve()
    args.out = args.out.resolve()
    if args.child:
        return child_main(args.tutorials, args.out)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())

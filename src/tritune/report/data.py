"""Reading a result for reporting: timings, throughput, winners, groups and parameter influence.

Every reader here tolerates missing optional fields and ignores unknown ones, so a report can be made from
any verify, screen, tune (or simulate) JSON that follows the :mod:`tritune.results` shape.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritune.bench.ties import TieReport
from tritune.config import Config
from tritune.errors import ReportInputError
from tritune.results import CandidateResult, RunResult, WorkloadResult


@dataclass(frozen=True)
class Timing:
    """The part of a measurement a report shows: the median and its confidence interval, in ms."""

    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    n: int | None = None
    stop: str | None = None


@dataclass(frozen=True)
class Ceilings:
    """Hardware ceilings measured on the device and recorded in the result (never datasheet numbers)."""

    copy_gbps: float | None
    matmul_tflops: float | None
    device: str


def load_result(path: str | Path) -> RunResult:
    """Read a result JSON written by tritune; a clear :class:`ReportInputError` when it cannot be read."""
    return parse_result(read_json(path), source=str(path))


def read_json(path: str | Path) -> Any:
    """The parsed JSON at ``path``; a clear :class:`ReportInputError` when it cannot be read."""
    p = Path(path)
    if p.is_dir():
        raise ReportInputError(f"{p}: is a directory; pass the JSON that tritune verify/screen/tune/simulate wrote")
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise ReportInputError(
            f"{p}: no such file; pass the JSON that tritune verify/screen/tune wrote"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportInputError(f"{p}: cannot be read ({e})") from None
    except json.JSONDecodeError as e:
        raise ReportInputError(
            f"{p}: not JSON ({e}); pass the JSON that tritune verify/screen/tune wrote"
        ) from None


def parse_result(data: Any, *, source: str = "result") -> RunResult:
    """A :class:`RunResult` from parsed JSON, naming the file and the field when the shape is wrong."""
    if not isinstance(data, Mapping):
        raise ReportInputError(f"{source}: a tritune result is a JSON object, got {type(data).__name__}")
    if "command" not in data:
        raise ReportInputError(f"{source}: no 'command' field; this is not a result written by tritune")
    workloads = data.get("workloads", [])
    if not isinstance(workloads, list):
        raise ReportInputError(f"{source}: 'workloads' must be a list")
    fixed = []
    for i, w in enumerate(workloads):
        if not isinstance(w, Mapping) or "name" not in w or not isinstance(w.get("candidates"), list):
            raise ReportInputError(f"{source}: workloads[{i}] needs 'name' and a 'candidates' list")
        fixed.append({"key": {}, **w})  # a missing key means the workload has a single, unnamed key
    try:
        return RunResult.from_json({**data, "workloads": fixed})
    except (KeyError, ValueError, TypeError) as e:
        raise ReportInputError(f"{source}: malformed result ({type(e).__name__}: {e})") from None


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def timing_of(c: CandidateResult) -> Timing | None:
    """The candidate's timing, or ``None`` when it has no usable measurement."""
    m = c.extra.get("measurement")
    if not isinstance(m, Mapping):
        return None
    med = _num(m.get("median_ms"))
    if med is None:
        return None
    lo, hi = _num(m.get("ci_low_ms")), _num(m.get("ci_high_ms"))
    n = m.get("n")
    stop = m.get("stop")
    return Timing(
        med,
        med if lo is None else lo,
        med if hi is None else hi,
        n if isinstance(n, int) else None,
        stop if isinstance(stop, str) else None,
    )


def workload_bytes(w: WorkloadResult) -> float | None:
    return _num(w.extra.get("bytes"))


def workload_flops(w: WorkloadResult) -> float | None:
    return _num(w.extra.get("flops"))


def gbps_of(c: CandidateResult, w: WorkloadResult) -> float | None:
    """Achieved GB/s: the recorded ``gbps``, else the workload's bytes over the median time."""
    g = _num(c.extra.get("gbps"))
    if g is not None:
        return g
    t, b = timing_of(c), workload_bytes(w)
    return b / (t.median_ms * 1e-3) / 1e9 if t is not None and b is not None and t.median_ms > 0 else None


def tflops_of(c: CandidateResult, w: WorkloadResult) -> float | None:
    """Achieved TFLOP/s: the recorded ``tflops``, else the workload's flops over the median time."""
    f = _num(c.extra.get("tflops"))
    if f is not None:
        return f
    t, fl = timing_of(c), workload_flops(w)
    return fl / (t.median_ms * 1e-3) / 1e12 if t is not None and fl is not None and t.median_ms > 0 else None


def _as_id(x: Any) -> str | None:
    if isinstance(x, str):
        return x
    if isinstance(x, Mapping):
        try:
            return Config.from_json(x).id
        except ValueError:
            return None
    return None


def winner_id(w: WorkloadResult) -> str | None:
    """The winner's config id, from the recorded ``winner`` (a config JSON or an id)."""
    return _as_id(w.extra.get("winner"))


def measure_sentence(w: WorkloadResult) -> str | None:
    """How the candidates were timed and how a tie was settled, from the result's ``measure`` and ``tie``.

    ``None`` for results that record neither (written before measurement policies existed).
    """
    tie = w.extra.get("tie")
    if isinstance(tie, dict):
        try:
            return f"timed {tie.get('measure', w.extra.get('measure', '?'))}: {TieReport.from_json(tie).describe()}"
        except (KeyError, TypeError, ValueError):
            pass
    measure = w.extra.get("measure")
    return f"timed {measure} (measurement policy; part of the store key)" if isinstance(measure, str) else None


def tie_ids(w: WorkloadResult) -> list[str]:
    ties = w.extra.get("ties") or []
    return [i for i in (_as_id(t) for t in ties) if i is not None] if isinstance(ties, list) else []


def winner(w: WorkloadResult) -> CandidateResult | None:
    """The winning candidate: the recorded winner, else the fastest measured one (``None`` if none)."""
    wid = winner_id(w)
    if wid is not None:
        for c in w.candidates:
            if c.config.id == wid:
                return c
    timed = [c for c in w.candidates if c.status.ok and timing_of(c) is not None]
    return min(timed, key=lambda c: timing_of(c).median_ms) if timed else None  # type: ignore[union-attr]


def groups_of(w: WorkloadResult) -> list[list[str]]:
    """Groups of bit-identical outputs, as lists of config ids."""
    groups = w.extra.get("groups") or []
    if not isinstance(groups, list):
        return []
    out = []
    for g in groups:
        if isinstance(g, list):
            ids = [i for i in (_as_id(x) for x in g) if i is not None]
            if ids:
                out.append(ids)
    return out


def ceilings_of(result: RunResult) -> Ceilings | None:
    c = result.extra.get("ceilings")
    if not isinstance(c, Mapping):
        return None
    cg, mt = _num(c.get("copy_gbps")), _num(c.get("matmul_tflops"))
    if cg is None and mt is None:
        return None
    return Ceilings(cg, mt, str(c.get("device") or "unknown device"))


def key_label(key: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in key.items()) or "(no key)"


def varied_params(configs: Iterable[Config]) -> dict[str, list[Any]]:
    """Parameters (meta-parameters and launch options) that take two or more values, values sorted."""
    seen: dict[str, set[Any]] = {}
    for c in configs:
        for k, v in c.as_dict().items():
            seen.setdefault(k, set()).add(v)
    return {k: sorted(vs, key=_sort_key) for k, vs in seen.items() if len(vs) >= 2}


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, str(v))


def influence(candidates: Sequence[CandidateResult]) -> list[tuple[str, float]]:
    """Parameters ranked by influence, most influential first, with their spread.

    The rule: for each parameter p and each of its values v, take the best (lowest) median time over all
    measured candidates with p = v. The spread of p is max_v best(v) / min_v best(v): how much slower the
    best config gets when p is set to its worst value. A parameter that does not matter has spread 1.
    Only parameters with at least two measured values are ranked; ties are broken by name.
    """
    timed = [
        (c.config, t.median_ms) for c in candidates if (t := timing_of(c)) is not None and t.median_ms > 0
    ]
    out = []
    for p in varied_params(c for c, _ in timed):
        best: dict[Any, float] = {}
        for cfg, ms in timed:
            v = cfg.as_dict()[p]
            best[v] = min(ms, best.get(v, math.inf))
        if len(best) >= 2:
            out.append((p, max(best.values()) / min(best.values())))
    return sorted(out, key=lambda x: (-x[1], x[0]))


def group_letters(w: WorkloadResult) -> dict[str, str]:
    """config id -> group letter (A, B, ...): candidates with the same letter wrote bit-identical outputs."""
    letters = string.ascii_uppercase
    out = {}
    for i, g in enumerate(groups_of(w)):
        tag = letters[i] if i < len(letters) else f"G{i + 1}"
        for cid in g:
            out[cid] = tag
    return out


def agreement_sentence(w: WorkloadResult) -> str:
    """With no oracle: that candidates were compared with each other, and how they split into agreement groups."""
    groups = w.extra.get("agreement_groups") or []
    head = "NO ORACLE: the candidates were compared with each other, not checked against expected values"
    if not groups:
        return f"{head}; none ran to completion"
    if len(groups) == 1:
        return f"{head}; all {len(groups[0])} that ran agree within atol/rtol (one agreement group)"
    sizes = ", ".join(str(len(g)) for g in groups)
    return (
        f"{head}; they DISAGREE: {len(groups)} agreement groups of sizes {sizes}. At least one group is wrong "
        "and nothing here says which: give the workload an oracle"
    )


def bitwise_sentence(w: WorkloadResult) -> str:
    """One sentence on the bit-identity of this key's outputs, from ``bitwise_identical`` and ``groups``."""
    groups = groups_of(w)
    flag = w.extra.get("bitwise_identical")
    if not groups and flag is None:
        return "bit-identity not recorded"
    if flag is True or len(groups) == 1:
        n = len(groups[0]) if groups else 0
        return f"all {n} compared candidates wrote bit-identical outputs" if n else "bitwise identical"
    sizes = ", ".join(str(len(g)) for g in groups)
    return f"outputs differ bitwise: {len(groups)} groups of sizes {sizes}"


def search_sentence(w: WorkloadResult) -> str | None:
    """What a searched key searched, measured and why it stopped (None when every legal config was raced)."""
    s = w.extra.get("search")
    if not isinstance(s, dict):
        return None
    text = (f"searched with {s.get('strategy')} ({s.get('why')}): budget {s.get('budget')}, "
            f"{s.get('evaluated')} of {s.get('space')} legal configs tried in batches of {s.get('width')} "
            f"({s.get('measured')} measured, {s.get('failed')} failed)")  # fmt: skip
    if s.get("resumed"):
        text += f", {s['resumed']} more from the store"
    if s.get("transfer"):
        text += f", started from {len(s['transfer'].get('keys', []))} tuned keys' winners"
    text += f"; stopped: {s.get('stopped')}"
    if s.get("checked"):
        text += f" (after racing the opening's best and {len(s['checked']) - 1} more again)"
    return text

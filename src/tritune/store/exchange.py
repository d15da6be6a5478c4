"""Export and import: the ``tritune.store/1`` JSON format a kernel library can ship.

::

    {"format": "tritune.store/1", "tritune": "0.1.0", "exported_at": 1764419400.0,
     "entries": [
      {"key": {"kernel": "gelu", "source_hash": "...", "triton_version": "3.6.0", "device": "NVIDIA H200",
               "capability": "cuda:90", "env_hash": "...", "key": {"n": 4096}, "buckets": {"n": "pow2"},
               "dtypes": ["torch.float32", "torch.float32"]},
       "winner": {"config": {...}, "time_ms": 0.0123, "ties": [], "provenance": {}, "recorded_at": 1764419000.0},
       "candidates": [{"config": {...}, "status": "measured", "time_ms": 0.0123, "reason": null,
                       "measurement": {...}, "provenance": {}, "recorded_at": 1764419000.0}, ...]}]}

``winner`` may be ``null``. Fields other than ``format`` and ``entries`` at the top level are
metadata and are ignored on import; inside an entry every field is checked and an unknown one is
an error. Import validates the whole file first and reports each problem with its line and field
path (``line 14, entries[0].candidates[1].status: ...``), then writes nothing if any was found.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from tritune.bucket import from_name
from tritune.config import Config
from tritune.errors import ConfigError, StoreError, StoreSchemaError
from tritune.outcome import Status
from tritune.paths import write_output
from tritune.store.jsonpos import JSONSyntaxError, Located, path_text
from tritune.store.jsonpos import Path as JPath
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, Snapshot, Write

FORMAT = "tritune.store/1"
MAX_REPORTED = 20

# Plausible ranges, checked on import: a value outside them is a damaged or hostile file.
#: Longest string anywhere in the file (a compiler error in a ``reason`` fits easily).
MAX_STRING = 65_536
#: Integers must fit in 64 bits, as SQLite and Triton hold them.
INT_RANGE = (-(2**63), 2**63 - 1)
#: No kernel launch is timed at more than an hour.
MAX_TIME_MS = 3_600_000.0
#: ``recorded_at`` is a unix time between 1970 and 2100.
TIME_RANGE = (0.0, 4_102_444_800.0)
_WARPS = {1, 2, 4, 8, 16, 32, 64}
_LAUNCH_RANGES = {"num_stages": (0, 32), "num_ctas": (1, 16), "maxnreg": (1, 1024)}

_KEY_STR_FIELDS = ("kernel", "source_hash", "triton_version", "device", "capability", "env_hash")
_KEY_FIELDS = {*_KEY_STR_FIELDS, "key", "buckets", "dtypes"}
_CAND_FIELDS = {"config", "status", "time_ms", "reason", "measurement", "provenance", "recorded_at"}
_WIN_FIELDS = {"config", "time_ms", "ties", "provenance", "recorded_at"}


def export_doc(snapshots: list[Snapshot]) -> dict[str, Any]:
    """The export document of ``snapshots`` (see the module docstring)."""
    from tritune._version import __version__
    from tritune.store.records import now

    entries = [
        {
            "key": key.to_json(),
            "winner": None if winner is None else winner.to_json(),
            "candidates": [c.to_json() for c in cands],
        }
        for key, winner, cands in snapshots
    ]
    return {"format": FORMAT, "tritune": __version__, "exported_at": now(), "entries": entries}


def write_export(snapshots: list[Snapshot], dest: str | Path | IO[str]) -> int:
    """Write ``snapshots`` as JSON to a path (:func:`tritune.paths.write_output`: atomically, never through a
    symlink, never over a source file or a device) or a text stream."""
    text = json.dumps(export_doc(snapshots), indent=1, allow_nan=False) + "\n"
    if isinstance(dest, (str, Path)):
        write_output(dest, text)
    else:
        dest.write(text)
    return len(snapshots)


class _Checker:
    """Collects ``(path, message)`` problems while turning a located document into writes."""

    def __init__(self, doc: Located) -> None:
        self.doc = doc
        self.problems: list[tuple[JPath, str]] = []

    def bad(self, path: JPath, msg: str) -> None:
        self.problems.append((path, msg))

    def obj(self, v: Any, path: JPath, allowed: set[str] | None, required: tuple[str, ...] = ()) -> bool:
        if not isinstance(v, dict):
            self.bad(path, f"expected an object, got {_kind(v)}")
            return False
        ok = True
        for name in required:
            if name not in v:
                self.bad(path, f"missing field {name!r}")
                ok = False
        if allowed is not None:
            for name in v:
                if name not in allowed:
                    self.bad((*path, name), f"unknown field; expected one of {sorted(allowed)}")
                    ok = False
        return ok

    def typed(
        self, v: dict[str, Any], name: str, path: JPath, test: Callable[[Any], bool], what: str
    ) -> bool:
        if name in v and not test(v[name]):
            self.bad((*path, name), f"expected {what}, got {_kind(v[name])}")
            return False
        return True

    def config(self, v: Any, path: JPath) -> Config | None:
        try:
            cfg = Config.from_json(v)
        except ConfigError as e:
            self.bad(path, str(e))
            return None
        ok = True
        if cfg.num_warps not in _WARPS:
            self.bad((*path, "num_warps"), f"{cfg.num_warps} is not a power of two from 1 to 64")
            ok = False
        for name, (lo, hi) in _LAUNCH_RANGES.items():
            val = getattr(cfg, name)
            if val is not None and not lo <= val <= hi:
                self.bad((*path, name), f"{val} is outside {lo}..{hi}")
                ok = False
        return cfg if ok else None

    def timestamp(self, v: dict[str, Any], path: JPath) -> bool:
        t = v.get("recorded_at")
        if not self.typed(v, "recorded_at", path, lambda x: x is None or _number(x), "a number or null"):
            return False
        if t is not None and not TIME_RANGE[0] <= t <= TIME_RANGE[1]:
            self.bad((*path, "recorded_at"), f"{t!r} is not a unix time between 1970 and 2100")
            return False
        return True

    def key(self, v: Any, path: JPath) -> TuningKey | None:
        if not self.obj(v, path, _KEY_FIELDS, _KEY_STR_FIELDS):
            return None
        ok = all(self.typed(v, f, path, lambda x: isinstance(x, str) and bool(x), "a non-empty string")
                 for f in _KEY_STR_FIELDS)  # fmt: skip
        ok &= self.typed(v, "key", path, lambda x: isinstance(x, dict), "an object of key values")
        ok &= self.typed(v, "buckets", path, lambda x: isinstance(x, dict), "an object of bucket names")
        ok &= self.typed(v, "dtypes", path, lambda x: isinstance(x, list) and all(isinstance(s, str) for s in x),
                         "a list of strings")  # fmt: skip
        for name, val in v.get("key", {}).items() if isinstance(v.get("key"), dict) else ():
            if isinstance(val, (dict, list)):
                self.bad((*path, "key", name), f"expected a number, string, bool or null, got {_kind(val)}")
                ok = False
        for name, b in v.get("buckets", {}).items() if isinstance(v.get("buckets"), dict) else ():
            try:
                if not isinstance(b, str):
                    raise ConfigError(f"expected a bucket name, got {_kind(b)}")
                from_name(b)
            except ConfigError as e:
                self.bad((*path, "buckets", name), str(e))
                ok = False
        if not ok:
            return None
        try:
            return TuningKey.from_json(v)
        except ConfigError as e:
            self.bad(path, str(e))
            return None

    def candidate(self, v: Any, path: JPath) -> CandidateRecord | None:
        if not self.obj(v, path, _CAND_FIELDS, ("config", "status")):
            return None
        cfg = self.config(v["config"], (*path, "config"))
        ok = cfg is not None
        status = None
        if v["status"] in {s.value for s in Status}:
            status = Status(v["status"])
        else:
            self.bad((*path, "status"), f"{v['status']!r} is not a status; expected one of "
                     + ", ".join(s.value for s in Status))  # fmt: skip
            ok = False
        t = v.get("time_ms")
        if t is not None and not _number(t):
            self.bad((*path, "time_ms"), f"expected a number or null, got {_kind(t)}")
            ok = False
        elif status is Status.MEASURED and (t is None or not 0 <= t <= MAX_TIME_MS):
            self.bad(
                (*path, "time_ms"), f"a measured candidate needs 0 <= time_ms <= {MAX_TIME_MS:g}, got {t!r}"
            )
            ok = False
        elif status is not None and status is not Status.MEASURED and t is not None:
            self.bad((*path, "time_ms"), f"only measured candidates carry a time; status is {status.value}")
            ok = False
        ok &= self.typed(v, "reason", path, lambda x: x is None or isinstance(x, str), "a string or null")
        ok &= self.typed(
            v, "measurement", path, lambda x: x is None or isinstance(x, dict), "an object or null"
        )
        ok &= self.typed(v, "provenance", path, lambda x: isinstance(x, dict), "an object")
        ok &= self.timestamp(v, path)
        if not ok or cfg is None or status is None:
            return None
        try:
            return CandidateRecord(cfg, status, t, v.get("reason"), v.get("measurement"),
                                   v.get("provenance", {}), v.get("recorded_at"))  # fmt: skip
        except StoreError as e:
            self.bad(path, str(e))
            return None

    def entry(self, v: Any, path: JPath, seen: dict[str, int]) -> Write | None:
        if not self.obj(v, path, {"key", "winner", "candidates"}, ("key", "candidates")):
            return None
        key = self.key(v["key"], (*path, "key"))
        if key is not None:
            if key.digest in seen:
                self.bad((*path, "key"), f"the same key as entries[{seen[key.digest]}]")
            seen.setdefault(key.digest, path[-1])  # type: ignore[arg-type]
        cands_v = v["candidates"]
        if not isinstance(cands_v, list):
            self.bad((*path, "candidates"), f"expected a list, got {_kind(cands_v)}")
            return None
        cands: dict[Config, CandidateRecord] = {}
        for i, cv in enumerate(cands_v):
            c = self.candidate(cv, (*path, "candidates", i))
            if c is not None:
                if c.config in cands:
                    self.bad((*path, "candidates", i, "config"), f"config {c.config.id} is listed twice")
                cands[c.config] = c
        winner, ties, prov, rec_at = self.winner(v.get("winner"), (*path, "winner"), cands)
        if key is None or len(cands) != len(cands_v):
            return None
        try:
            return Write(key, tuple(cands.values()), winner, ties, prov, rec_at)
        except StoreError as e:
            self.bad(path, str(e))
            return None

    def winner(
        self, v: Any, path: JPath, cands: Mapping[Config, CandidateRecord]
    ) -> tuple[Config | None, tuple[Config, ...], dict[str, Any], float | None]:
        none: tuple[None, tuple[Config, ...], dict[str, Any], None] = (None, (), {}, None)
        if v is None or not self.obj(v, path, _WIN_FIELDS, ("config",)):
            return none
        cfg = self.config(v["config"], (*path, "config"))
        ties: list[Config] = []
        if not isinstance(v.get("ties", []), list):
            self.bad((*path, "ties"), f"expected a list of configs, got {_kind(v['ties'])}")
        else:
            for i, tv in enumerate(v.get("ties", [])):
                t = self.config(tv, (*path, "ties", i))
                if t is not None:
                    ties.append(t)
                    if t not in cands:
                        self.bad((*path, "ties", i), f"tie {t.id} is not among this entry's candidates")
        ok = self.typed(v, "provenance", path, lambda x: isinstance(x, dict), "an object")
        ok &= self.timestamp(v, path)
        ok &= self.typed(v, "time_ms", path, lambda x: x is None or _number(x), "a number or null")
        if cfg is None or not ok:
            return none
        if cfg not in cands:
            self.bad((*path, "config"), f"winner {cfg.id} is not among this entry's candidates")
            return none
        if v.get("time_ms") != cands[cfg].time_ms:
            self.bad(
                (*path, "time_ms"),
                f"{v.get('time_ms')!r} differs from the candidate's {cands[cfg].time_ms!r}",
            )
        return cfg, tuple(ties), dict(v.get("provenance", {})), v.get("recorded_at")


def _number(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return INT_RANGE[0] <= x <= INT_RANGE[1]
    return isinstance(x, float) and math.isfinite(x)


def _implausible(v: Any, path: JPath, bad: Callable[[JPath, str], None]) -> None:
    """Report every string too long and number out of range anywhere in ``v``."""
    if isinstance(v, dict):
        for k, x in v.items():
            if len(k) > MAX_STRING:
                bad(path, f"a field name of {len(k)} characters (at most {MAX_STRING})")
            elif not _unicode(k):
                bad(path, "a field name that is not valid Unicode text (a lone surrogate such as \\ud800)")
            _implausible(x, (*path, k), bad)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _implausible(x, (*path, i), bad)
    elif isinstance(v, str):
        if len(v) > MAX_STRING:
            bad(path, f"a string of {len(v)} characters (at most {MAX_STRING})")
        elif not _unicode(v):
            bad(path, "not valid Unicode text (a lone surrogate such as \\ud800)")
    elif isinstance(v, (int, float)) and not isinstance(v, bool) and not _number(v):
        shown = f"an integer of {len(str(abs(v)))} digits" if isinstance(v, int) else "a number"
        bad(path, f"{shown} out of range (integers must fit in 64 bits, floats must be finite)")


def _unicode(s: str) -> bool:
    """Whether ``s`` is text UTF-8 can hold: JSON's ``\\ud800`` escapes make strings no file or database can."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(v: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a bool", type(None): "null"}
    return names.get(type(v), "a number" if _number(v) else type(v).__name__)


def parse_export(text: str, source: str = "<export>") -> list[Write]:
    """Validate export ``text`` and return its writes; StoreSchemaError lists every problem by line."""
    try:
        doc = Located(text)
    except JSONSyntaxError as e:
        raise StoreSchemaError(
            f"{source}: line {e.line} column {e.column}: not valid JSON: {e.msg}"
        ) from None
    chk = _Checker(doc)
    top = doc.value
    writes: list[Write] = []
    _implausible(top, (), chk.bad)  # when it finds anything, the checks below would only add noise
    if not chk.problems and chk.obj(top, (), None, ("format", "entries")):
        if top["format"] != FORMAT:
            chk.bad(("format",), f"{top['format']!r} is not a format this tritune reads; expected {FORMAT!r}")
        elif not isinstance(top["entries"], list):
            chk.bad(("entries",), f"expected a list, got {_kind(top['entries'])}")
        else:
            seen: dict[str, int] = {}
            for i, ev in enumerate(top["entries"]):
                w = chk.entry(ev, ("entries", i), seen)
                if w is not None:
                    writes.append(w)
    if chk.problems:
        lines = [f"  line {doc.line(p)}, {path_text(p)}: {m}" for p, m in chk.problems[:MAX_REPORTED]]
        more = len(chk.problems) - MAX_REPORTED
        if more > 0:
            lines.append(f"  ... and {more} more")
        raise StoreSchemaError(
            f"{source}: not a valid {FORMAT} file; nothing was imported:\n" + "\n".join(lines)
        )
    return writes


def load_export(src: str | Path | IO[str], *, trusted: bool = False) -> list[Write]:
    """Read and validate an export file (path or text stream). ``trusted=True`` (a pretuned file, which decides
    what kernels run) reads a path only after the ownership and path checks of
    :func:`tritune.store.safety.read_trusted`."""
    if isinstance(src, (str, Path)):
        try:
            if trusted:
                from tritune.store.safety import read_trusted

                text = read_trusted(Path(src)).decode("utf-8")
            else:
                text = Path(src).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise StoreSchemaError(f"{src}: not a text (UTF-8) file: {e}") from None
        except OSError as e:
            raise StoreSchemaError(f"{src}: cannot read: {e.strerror or e}") from None
        return parse_export(text, str(src))
    return parse_export(src.read(), getattr(src, "name", "<stream>"))

"""``TuningKey``: everything that changes the binary or the timing of one tuning, as a frozen value.

A stored entry is identified by a TuningKey; a candidate inside it by ``(TuningKey, Config)``, the
config in its canonical JSON (``Config.dumps()``). Two keys are equal exactly when their canonical
JSON is equal, and :attr:`TuningKey.digest` is the sha256 of that JSON (never of ``repr()``), so it is
the same in every process, Python version and platform.

Where no GPU is active (``TRITON_INTERPRET=1``, or no driver), keys are made with the device and
capability ``"interpreter"``: entries tuned there never match, and are never matched by, an entry
from a real GPU. ``PretunedStore.resolve`` is the one place that may serve a GPU entry to an
interpreter key, on purpose (a shipped config is the config the interpreter runs).

The measurement policy (:mod:`tritune.measure`: ``cold``, ``warm``, ``graph``) is part of the key:
a winner timed one way is not reused for another. Keys written before policies existed carry no
``measure`` field and were timed cold, so a key without one reads back as ``cold``, the default; and a
``cold`` key writes no ``measure`` field, so its canonical JSON and digest are exactly what they were
before, and stores written then still match.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tritune.errors import ConfigError
from tritune.measure import DEFAULT_POLICY, MeasurePolicy

#: Device and capability recorded when no GPU is active.
INTERPRETER = "interpreter"
#: What a key's winner may compute: any config's bits (``"any"``), or the reference config's (``"exact"``).
NUMERICS = ("any", "exact")

#: Environment variables read on the Python side of Triton that change the code it generates, in
#: addition to the C++ list ``triton._C.libtriton.get_cache_invalidating_env_vars()`` (Triton 3.6-3.9).
PYTHON_CODEGEN_ENV: tuple[str, ...] = (
    "TRITON_DEBUG",
    "TRITON_F32_DEFAULT",
    "TRITON_DEFAULT_FP_FUSION",
    "TRITON_INSTRUMENTATION_MODE",
    "TRITON_KERNEL_OVERRIDE",
    "TRITON_OVERRIDE_DIR",
    "TRITON_OVERRIDE_ARCH",
    "TRITON_MOCK_PTX_VERSION",
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_LIBDEVICE_PATH",
    "PTXAS_OPTIONS",
    "DISABLE_PTXAS_OPT",
    "AMDGCN_ANALYZE_SMALL_TENSOR_RANGE",
    "AMDGCN_SCALARIZE_PACKED_FOPS",
)

_SCALARS = (bool, int, float, str, type(None))


def _scalar(name: str, value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        v = item()
        if isinstance(v, _SCALARS):
            return v
    if type(value).__name__ == "dtype":  # torch.dtype / numpy dtype keys: store their text
        return str(value)
    raise ConfigError(
        f"key value {name}={value!r} has type {type(value).__name__}; a tuning key holds int, float, bool, "
        "str or None values"
    )


def _pairs(field_name: str, value: Any) -> tuple[tuple[str, Any], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    out = []
    for k, v in items:
        if not isinstance(k, str):
            raise ConfigError(f"TuningKey.{field_name} names must be strings, got {k!r}")
        out.append((k, _scalar(k, v)))
    names = [k for k, _ in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"TuningKey.{field_name} repeats a name: {names}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class TuningKey:
    """What one tuning result depends on. ``key`` and ``buckets`` are (name, value) pairs, kept sorted
    (a mapping is accepted too, and becomes sorted pairs).

    >>> k = TuningKey("gelu", "abc", "3.6.0", "NVIDIA H200", "cuda:90", "e3b0", key=(("n", 4096),),
    ...               buckets=(("n", "pow2"),), dtypes=("torch.float32", "torch.float32"))
    >>> k.key_dict, TuningKey.from_json(k.to_json()) == k
    ({'n': 4096}, True)
    """

    #: The kernel's ``__name__`` (for listing; identity comes from ``source_hash``).
    kernel: str
    #: ``KernelInfo.source_hash``: the kernel's and its jitted callees' source. Editing it starts fresh.
    source_hash: str
    #: ``triton.__version__``: another compiler gives another binary.
    triton_version: str
    #: ``torch.cuda.get_device_name()``, or ``"interpreter"`` where no GPU is active.
    device: str
    #: ``"<backend>:<arch>"`` of the active target, e.g. ``"cuda:90"`` or ``"hip:gfx942"``; ``"interpreter"``.
    capability: str
    #: :func:`codegen_env_hash` of the environment variables that change Triton's code generation.
    env_hash: str
    #: The bucketed key values, name -> bucket value (sorted by name).
    key: tuple[tuple[str, Any], ...] = ()
    #: The bucket of each key name, name -> bucket name (``"exact"``, ``"pow2"``, ``"multiple(32)"``).
    buckets: tuple[tuple[str, str], ...] = ()
    #: The argument dtypes as text, in argument order (e.g. ``"torch.float16"``), as Triton keys them.
    dtypes: tuple[str, ...] = field(default=())
    #: How candidates were timed (:class:`~tritune.measure.MeasurePolicy`); absent in old keys = cold.
    measure: MeasurePolicy = DEFAULT_POLICY
    #: ``"any"``, or ``"exact"``: only configs that compute the reference config's bits could win
    #: (:class:`~tritune.engine.options.TuneOptions`); absent in JSON when ``"any"``.
    numerics: str = "any"

    def __post_init__(self) -> None:
        for name in ("kernel", "source_hash", "triton_version", "device", "capability", "env_hash"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"TuningKey.{name} must be a non-empty string, got {getattr(self, name)!r}")
        set_ = object.__setattr__
        set_(self, "key", _pairs("key", self.key))
        buckets = _pairs("buckets", self.buckets)
        for name, b in buckets:
            if not isinstance(b, str):
                raise ConfigError(f"TuningKey.buckets[{name!r}] must be a bucket name, got {b!r}")
        missing = {k for k, _ in self.key} - {k for k, _ in buckets}
        buckets = tuple(sorted((*buckets, *((k, "exact") for k in missing))))
        extra = {k for k, _ in buckets} - {k for k, _ in self.key}
        if extra:
            raise ConfigError(f"TuningKey.buckets names {sorted(extra)} that are not in key")
        set_(self, "buckets", buckets)
        if isinstance(self.dtypes, str) or not all(isinstance(d, str) for d in self.dtypes):
            raise ConfigError(f"TuningKey.dtypes must be a sequence of strings, got {self.dtypes!r}")
        set_(self, "dtypes", tuple(self.dtypes))
        set_(self, "measure", MeasurePolicy.parse(self.measure, where=f"TuningKey({self.kernel}).measure"))
        if self.numerics not in NUMERICS:
            raise ConfigError(f"TuningKey({self.kernel}).numerics={self.numerics!r}: use one of {', '.join(NUMERICS)}")

    @property
    def key_dict(self) -> dict[str, Any]:
        return dict(self.key)

    @property
    def bucket_dict(self) -> dict[str, str]:
        return dict(self.buckets)

    def to_json(self) -> dict[str, Any]:
        """The key as JSON; ``measure`` only when it is not the default (old keys have none, same digest)."""
        d: dict[str, Any] = {
            "kernel": self.kernel,
            "source_hash": self.source_hash,
            "triton_version": self.triton_version,
            "device": self.device,
            "capability": self.capability,
            "env_hash": self.env_hash,
            "key": dict(self.key),
            "buckets": dict(self.buckets),
            "dtypes": list(self.dtypes),
        }
        if self.measure is not DEFAULT_POLICY:
            d["measure"] = self.measure.value
        if self.numerics != "any":
            d["numerics"] = self.numerics
        return d

    def dumps(self) -> str:
        """Canonical JSON text (sorted keys, no spaces): equal keys give equal text."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def digest(self) -> str:
        """sha256 hex of :meth:`dumps`: the key's stable identity across processes."""
        return hashlib.sha256(self.dumps().encode()).hexdigest()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TuningKey:
        fields = ("kernel", "source_hash", "triton_version", "device", "capability", "env_hash")
        unknown = set(d) - {*fields, "key", "buckets", "dtypes", "measure", "numerics"}
        if unknown:
            raise ConfigError(f"unknown TuningKey field(s) {sorted(unknown)}")
        return cls(
            **{f: d[f] for f in fields},
            key=tuple(dict(d.get("key", {})).items()),
            buckets=tuple(dict(d.get("buckets", {})).items()),
            dtypes=tuple(d.get("dtypes", ())),
            measure=MeasurePolicy.parse(d.get("measure", DEFAULT_POLICY.value), where="TuningKey JSON measure"),
            numerics=d.get("numerics", "any"),
        )

    def describe_key(self) -> str:
        """``n=4096 (pow2: 2049..4096)``: the key values and the range each bucket covers."""
        from tritune.bucket import from_name

        parts = []
        for name, value in self.key:
            bname = self.bucket_dict.get(name, "exact")
            if bname == "exact":
                parts.append(f"{name}={value!r}")
            else:
                parts.append(f"{name}={value!r} ({bname}: {from_name(bname).describe(value)})")
        return ", ".join(parts)


def codegen_env() -> dict[str, str]:
    """The set environment variables that change Triton's code generation, name -> value.

    Triton's own list (``get_cache_invalidating_env_vars``, which returns only the set ones with
    normalized values) plus :data:`PYTHON_CODEGEN_ENV` read from ``os.environ``.
    """
    env: dict[str, str] = {}
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars

        env.update({str(k): str(v) for k, v in get_cache_invalidating_env_vars().items()})
    except ImportError:  # pragma: no cover - every supported Triton has it
        pass
    for name in PYTHON_CODEGEN_ENV:
        if name in os.environ and name not in env:
            env[name] = os.environ[name]
    return env


def codegen_env_hash(env: Mapping[str, str] | None = None) -> str:
    """First 16 hex digits of the sha256 of the sorted codegen environment (:func:`codegen_env`)."""
    env = codegen_env() if env is None else env
    text = json.dumps(sorted(env.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def current_device() -> tuple[str, str]:
    """``(device name, capability)`` of the active GPU, or ``("interpreter", "interpreter")`` without one."""
    from tritune.device import gpu_available

    if not gpu_available():
        return (INTERPRETER, INTERPRETER)
    import torch
    from triton.runtime import driver

    target = driver.active.get_current_target()
    return (torch.cuda.get_device_name(), f"{target.backend}:{target.arch}")


def dtypes_of(args: Iterable[Any]) -> tuple[str, ...]:
    """The dtypes of the arguments that have one, as text, in order (what Triton's autotuner keys on)."""
    return tuple(str(a.dtype) for a in args if hasattr(a, "dtype"))


def make_key(
    kernel: Any,
    key: Mapping[str, Any] | None = None,
    *,
    buckets: Mapping[str, str] | None = None,
    dtypes: Iterable[str] = (),
    device: tuple[str, str] | None = None,
    measure: MeasurePolicy | str = DEFAULT_POLICY,
    numerics: str = "any",
) -> TuningKey:
    """The TuningKey of ``kernel`` (a jitted kernel or a ``KernelInfo``) on the current device.

    ``device`` overrides ``(name, capability)``; pass ``(INTERPRETER, INTERPRETER)`` for a no-GPU key
    (what :func:`interpreter_key` does). ``key`` holds bucketed values; ``buckets`` their bucket names.
    """
    import triton

    from tritune.adapters.kernel import KernelInfo

    info = kernel if isinstance(kernel, KernelInfo) else KernelInfo.of(kernel)
    dev, cap = current_device() if device is None else device
    return TuningKey(
        kernel=info.name,
        source_hash=info.source_hash,
        triton_version=triton.__version__,
        device=dev,
        capability=cap,
        env_hash=codegen_env_hash(),
        key=tuple((key or {}).items()),
        buckets=tuple((buckets or {}).items()),
        dtypes=tuple(dtypes),
        measure=MeasurePolicy.parse(measure, where=f"{info.name}: measure"),
        numerics=numerics,
    )


def interpreter_key(
    kernel: Any,
    key: Mapping[str, Any] | None = None,
    *,
    buckets: Mapping[str, str] | None = None,
    dtypes: Iterable[str] = (),
    measure: MeasurePolicy | str = DEFAULT_POLICY,
) -> TuningKey:
    """A TuningKey for a no-GPU context (device and capability ``"interpreter"``), whatever is installed."""
    return make_key(kernel, key, buckets=buckets, dtypes=dtypes, device=(INTERPRETER, INTERPRETER), measure=measure)

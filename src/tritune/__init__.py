"""tritune: autotuning for Triton kernels that screens, verifies, times, searches, stores and dispatches.

``import tritune`` loads what a decorated kernel's cached call needs (the decorator, its keys and dispatch); the
tuning engine, the store, ``verify`` and the workload tools load at their first use.
"""

import os as _os

from tritune import bucket
from tritune._version import __version__
from tritune.adapters.interpreter import snapshot as _snapshot_language
from tritune.api import TritonAutotuner, autotune, patch_triton, patched_triton, unpatch_triton
from tritune.api import patch_from_environment as _patch_from_environment
from tritune.bench import Measurement
from tritune.config import Config
from tritune.decorator.autotuned import Autotuned, Choice, PretunedIgnoredWarning, UntunedWarning
from tritune.errors import (
    CaptureMissError,
    ConfigError,
    IllegalConfigError,
    KernelSpecError,
    NoLegalConfigError,
    StoreCorruptError,
    StoreError,
    StoreSchemaError,
    TimingUnavailableError,
    TrituneError,
    WorkloadError,
)
from tritune.lazy import lazy_names as _lazy_names
from tritune.outcome import Status
from tritune.space import Constraint, Space, constraint, pow2, values

_snapshot_language()  # before any interpreter run patches triton.language

from tritune import bench  # noqa: E402  (a callable module: tritune.bench(fn, ...))

#: Public names loaded at their first use: name -> (module, attribute).
_LAZY = {
    "CandidateResult": ("tritune.results", "CandidateResult"),
    "RaceOptions": ("tritune.engine.race", "RaceOptions"),
    "RunResult": ("tritune.results", "RunResult"),
    "TuneOptions": ("tritune.engine.options", "TuneOptions"),
    "VerifyReport": ("tritune.verify", "VerifyReport"),
    "Workload": ("tritune.workload", "Workload"),
    "WorkloadResult": ("tritune.results", "WorkloadResult"),
    "load_workloads": ("tritune.workload", "load_workloads"),
    "fleet": ("tritune.fleet", ""),  # tritune.fleet.choices(), record_choices(), check_choices()
    "verify": ("tritune.verify", ""),  # a callable module, as ``bench``: tritune.verify(...) runs verify
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

_patch_from_environment()  # TRITUNE_PATCH_TRITON=1
if _os.environ.get("TRITUNE_RECORD"):  # record every choice at exit (tritune.fleet)
    from tritune.fleet import record_at_exit_from_environment as _record_at_exit

    _record_at_exit()

__all__ = [
    "Autotuned",
    "CandidateResult",
    "CaptureMissError",
    "Choice",
    "Config",
    "ConfigError",
    "Constraint",
    "IllegalConfigError",
    "KernelSpecError",
    "Measurement",
    "NoLegalConfigError",
    "PretunedIgnoredWarning",
    "RaceOptions",
    "RunResult",
    "Space",
    "Status",
    "StoreCorruptError",
    "StoreError",
    "StoreSchemaError",
    "TimingUnavailableError",
    "TritonAutotuner",
    "TrituneError",
    "TuneOptions",
    "UntunedWarning",
    "VerifyReport",
    "Workload",
    "WorkloadError",
    "WorkloadResult",
    "__version__",
    "autotune",
    "bench",
    "bucket",
    "constraint",
    "load_workloads",
    "patch_triton",
    "patched_triton",
    "pow2",
    "unpatch_triton",
    "values",
    "verify",
]

"""tritune's exceptions: one small tree, every class under :class:`TrituneError`.

::

    TrituneError
    ├── ConfigError (ValueError)          a Config or Space that cannot be built or read
    ├── WorkloadError (ValueError)        a Workload that is malformed or cannot be loaded
    │   └── WorkloadLoadError             the Python file itself failed to import
    ├── KernelSpecError (ValueError)      a kernel that cannot be built for a target (signature, argument types)
    ├── UnknownTargetError (ValueError)   a target architecture name tritune does not know
    ├── IllegalConfigError (ValueError)   a config rejected before launch, with the reason
    ├── NoLegalConfigError (RuntimeError) every candidate of a kernel was rejected
    ├── TimingUnavailableError (RuntimeError)  timing was asked for where no GPU driver exists
    ├── CaptureMissError (RuntimeError)   a tuning miss while a CUDA graph is being captured
    ├── StoreError                        the persistent store failed
    │   ├── StoreCorruptError             the file at the store path is not a tritune store
    │   │   └── StoreRowError                 one stored row does not decode (damaged)
    │   └── StoreSchemaError (ValueError) an import file that does not match the schema
    ├── SearchError                       a search strategy was misused or is unknown
    ├── ReportInputError (ValueError)     a result JSON that ``tritune report`` cannot read
    ├── OutputPathError (OSError)         an output destination refused: a symlink, a device, a source file
    └── DistributedError (RuntimeError)   multi-rank tuning failed (a rank crashed or timed out)

Every message names the kernel, the config and the fix where they are known.
"""

from __future__ import annotations


class TrituneError(Exception):
    """Base class of every error tritune raises on purpose."""


class ConfigError(TrituneError, ValueError):
    """A Config, parameter or Space that cannot be built, or a JSON config that cannot be read."""


class WorkloadError(TrituneError, ValueError):
    """A Workload that is malformed: a missing field, a key name the kernel lacks, a bad output index."""


class WorkloadLoadError(WorkloadError):
    """A workload file that cannot be imported; the message carries the Python error."""


class KernelSpecError(TrituneError, ValueError):
    """A kernel that cannot be specialized or compiled for a target for reasons outside any one config."""


class UnknownTargetError(TrituneError, ValueError):
    """A target GPU name tritune does not know; the message lists the known ones."""


class IllegalConfigError(TrituneError, ValueError):
    """A config rejected before launch. ``reason`` says which rule rejected it."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class NoLegalConfigError(TrituneError, RuntimeError):
    """Every candidate of a kernel was rejected before launch, so there is nothing to run."""


class TimingUnavailableError(TrituneError, RuntimeError):
    """Timing was requested but no GPU driver is active (for example under ``TRITON_INTERPRET=1``)."""


class CaptureMissError(TrituneError, RuntimeError):
    """A key that has no tuned config was called while a CUDA graph was being captured."""


class StoreError(TrituneError):
    """The persistent store failed."""


class StoreCorruptError(StoreError):
    """The file at the store path is corrupt or is not a tritune store; it is never overwritten."""


class StoreRowError(StoreCorruptError):
    """One row of a store that does not decode (damaged JSON, an unknown status, a bad config); the message names
    the kernel and key. Listings skip such a row and say so; ``tritune cache check`` lists them all."""


class StoreSchemaError(StoreError, ValueError):
    """An import file that does not match the export schema; the message names the line and field."""


class SearchError(TrituneError):
    """A search strategy that is unknown, or misused through its ask/tell interface."""


class ReportInputError(TrituneError, ValueError):
    """A result JSON that ``tritune report`` cannot read; the message names the file and the field."""


class OutputPathError(TrituneError, OSError):
    """An output destination that is never written: a symlink, a directory, a device or other non-regular file,
    or an existing source file. The message names the path and the fix."""


class DistributedError(TrituneError, RuntimeError):
    """Multi-rank tuning failed: a rank crashed, timed out, or the ranks disagreed."""

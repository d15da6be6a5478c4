"""The explicit outcome of a candidate at every stage: never ``inf`` standing in for an error."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """What happened to one candidate config.

    Screening gives ``fits``/``illegal``/``compile_failed``/``compile_timeout``; verification gives
    ``correct``/``incorrect``/``illegal``/``error``, and ``compared`` where no oracle was given (the
    candidate ran and wrote every output; it was only compared with the others: see its agreement group); timing gives ``measured``/``illegal``/``compile_failed``/
    ``compile_timeout``/``launch_failed``/``incorrect``, ``not_timed`` where no GPU timing was possible, and
    ``other_numerics`` for a correct config left out because it computes other bits than the reference
    (``numerics="exact"``).
    """

    FITS = "fits"
    CORRECT = "correct"
    COMPARED = "compared"
    MEASURED = "measured"
    INCORRECT = "incorrect"
    ILLEGAL = "illegal"
    ERROR = "error"
    COMPILE_FAILED = "compile_failed"
    COMPILE_TIMEOUT = "compile_timeout"
    LAUNCH_FAILED = "launch_failed"
    NOT_TIMED = "not_timed"
    #: Correct, but computes other bits than the reference config: not a candidate under ``numerics="exact"``.
    OTHER_NUMERICS = "other_numerics"

    def __str__(self) -> str:
        return self.value

    @property
    def ok(self) -> bool:
        """True for the statuses that mean the candidate is usable."""
        return self in (Status.FITS, Status.CORRECT, Status.MEASURED)

    @property
    def is_failure(self) -> bool:
        """True for the statuses a search strategy is told as failures rather than times."""
        return self in (
            Status.INCORRECT,
            Status.ILLEGAL,
            Status.ERROR,
            Status.COMPILE_FAILED,
            Status.COMPILE_TIMEOUT,
            Status.LAUNCH_FAILED,
            Status.OTHER_NUMERICS,
        )

"""Statistics of one timing: the :class:`Measurement` value and the confidence interval of a median.

The interval is distribution-free: for sorted samples ``x(1) <= ... <= x(n)`` the number of samples
below the true median is Binomial(n, 1/2), so ``[x(j), x(n-j+1)]`` covers the median with probability
``1 - 2 P(B <= j-1)`` whatever the distribution (continuous; ties only make it more conservative).
We pick the largest ``j`` whose coverage is at least the requested confidence. Timings are skewed and
have outliers, which is why we summarize by the median and use order statistics instead of a normal
approximation or a bootstrap (which would need random resampling and more time for the same answer).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal, Protocol

Stop = Literal["converged", "budget"]

#: Above this many samples the binomial tail is found from the normal approximation (exact enough).
_EXACT_LIMIT = 5000


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int, float]:
    """Ranks ``(lo, hi)`` (0-based, into the sorted samples) of the median's interval, and its coverage.

    When ``n`` is too small to reach ``confidence`` at all (n < 6 for 95%), the widest interval,
    ``(0, n-1)``, is returned with the smaller coverage it really has.
    """
    if n < 1:
        raise ValueError("median_ci_ranks needs at least one sample")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha_half = (1.0 - confidence) / 2.0
    if n <= _EXACT_LIMIT:
        # P(B <= m) summed in log space: 0.5**n underflows for n > 1074.
        log_norm = math.lgamma(n + 1) - n * math.log(2.0)
        cdf = 0.0
        m = -1  # largest m with P(B <= m) <= alpha_half
        for i in range(n // 2 + 1):
            pmf = math.exp(log_norm - math.lgamma(i + 1) - math.lgamma(n - i + 1))
            if cdf + pmf > alpha_half * (1.0 + 1e-12):
                break
            cdf += pmf
            m = i
        tail = cdf
    else:
        z = NormalDist().inv_cdf(1.0 - alpha_half)
        m = math.floor(n / 2.0 - z * math.sqrt(n) / 2.0 - 0.5)
        tail = NormalDist(n / 2.0, math.sqrt(n) / 2.0).cdf(m + 0.5)
    if m < 0:
        coverage = 1.0 - 2.0 * 0.5**n
        return 0, n - 1, coverage
    # [x(j), x(n-j+1)] 1-based with j = m + 1  ->  0-based (m, n - 1 - m)
    return m, n - 1 - m, 1.0 - 2.0 * tail


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free ``confidence`` interval of the median of ``samples``."""
    xs = sorted(samples)
    lo, hi, _ = median_ci_ranks(len(xs), confidence)
    return xs[lo], xs[hi]


def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted ``xs`` (numpy's default method)."""
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    t = pos - lo
    return xs[lo] * (1.0 - t) + xs[hi] * t


def _halfwidth(low: float, high: float, median: float) -> float:
    if median <= 0.0:
        return math.inf if high > low else 0.0
    return (high - low) / 2.0 / median


def relative_halfwidth(data: Measurement | Sequence[float], confidence: float = 0.95) -> float:
    """Half the width of the median's interval as a fraction of the median (``inf`` for a median <= 0).

    ``data`` is a Measurement (its own interval is used) or raw samples (interval at ``confidence``).
    """
    if isinstance(data, Measurement):
        return _halfwidth(data.ci_low_ms, data.ci_high_ms, data.median_ms)
    xs = sorted(data)
    lo, hi, _ = median_ci_ranks(len(xs), confidence)
    return _halfwidth(xs[lo], xs[hi], _quantile(xs, 0.5))


@dataclass(frozen=True)
class Measurement:
    """One timing of one callable: its samples (ms per call) and their summary.

    ``stop`` says why sampling ended: ``"converged"`` when the 95% interval of the median was within
    ``rel_tol`` of the median, ``"budget"`` when the time or sample budget ran out first.
    ``calls_per_sample`` is 1 except in CUDA-graph mode, where one sample averages that many calls.
    ``samples`` is empty for a Measurement read back from JSON written without samples.
    """

    samples: tuple[float, ...]
    n: int
    median_ms: float
    mean_ms: float
    min_ms: float
    q1_ms: float
    q3_ms: float
    ci_low_ms: float
    ci_high_ms: float
    stop: Stop
    confidence: float = 0.95
    rel_tol: float = 0.01
    elapsed_s: float = 0.0
    calls_per_sample: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_samples(
        cls,
        samples: Iterable[float],
        *,
        rel_tol: float = 0.01,
        confidence: float = 0.95,
        stop: Stop | None = None,
        min_samples: int = 1,
        elapsed_s: float = 0.0,
        calls_per_sample: int = 1,
        extra: Mapping[str, Any] | None = None,
    ) -> Measurement:
        """Summarize samples; ``stop`` defaults to ``"converged"`` exactly when the interval met ``rel_tol``
        with at least ``min_samples`` samples, else ``"budget"``."""
        data = tuple(float(s) for s in samples)
        if not data:
            raise ValueError("a Measurement needs at least one sample")
        if any(not math.isfinite(s) for s in data):
            raise ValueError("timing samples must be finite numbers (a failure is a Status, not inf)")
        xs = sorted(data)
        n = len(xs)
        median = _quantile(xs, 0.5)
        lo, hi, _ = median_ci_ranks(n, confidence)
        if stop is None:
            met = _halfwidth(xs[lo], xs[hi], median) <= rel_tol
            stop = "converged" if n >= min_samples and met else "budget"
        return cls(
            samples=data,
            n=n,
            median_ms=median,
            mean_ms=math.fsum(xs) / n,
            min_ms=xs[0],
            q1_ms=_quantile(xs, 0.25),
            q3_ms=_quantile(xs, 0.75),
            ci_low_ms=xs[lo],
            ci_high_ms=xs[hi],
            stop=stop,
            confidence=confidence,
            rel_tol=rel_tol,
            elapsed_s=elapsed_s,
            calls_per_sample=calls_per_sample,
            extra=dict(extra or {}),
        )

    # -- derived values ------------------------------------------------------------------------------
    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def rel_halfwidth(self) -> float:
        """Half-width of the median's interval relative to the median."""
        return _halfwidth(self.ci_low_ms, self.ci_high_ms, self.median_ms)

    def converged(self, rel_tol: float | None = None) -> bool:
        """Whether the interval is within ``rel_tol`` (default: this measurement's own) of the median."""
        return self.rel_halfwidth <= (self.rel_tol if rel_tol is None else rel_tol)

    def ci(self, confidence: float) -> tuple[float, float]:
        """The median's interval at another confidence (needs the samples)."""
        if not self.samples:
            raise ValueError("this Measurement was read without its samples; its interval is fixed")
        return median_ci(self.samples, confidence)

    def scaled(self, factor: float, **extra: Any) -> Measurement:
        """This measurement with every time multiplied by ``factor`` (> 0), ``extra`` added to its ``extra``: a
        correction, e.g. for the GPU's drift since the samples were taken (:mod:`tritune.engine.race`)."""
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"a scale factor must be a positive number, got {factor!r}")
        k = float(factor)
        return replace(
            self, samples=tuple(x * k for x in self.samples), median_ms=self.median_ms * k, mean_ms=self.mean_ms * k,
            min_ms=self.min_ms * k, q1_ms=self.q1_ms * k, q3_ms=self.q3_ms * k, ci_low_ms=self.ci_low_ms * k,
            ci_high_ms=self.ci_high_ms * k, extra={**self.extra, **extra},
        )  # fmt: skip

    def merged(self, other: Measurement, *, stop: Stop | None = None, min_samples: int = 1) -> Measurement:
        """One Measurement from both sample sets (same unit: ms per call), elapsed times added."""
        if not self.samples or not other.samples:
            raise ValueError("merging needs the samples of both measurements")
        return Measurement.from_samples(
            self.samples + other.samples,
            rel_tol=self.rel_tol,
            confidence=self.confidence,
            stop=stop,
            min_samples=min_samples,
            elapsed_s=self.elapsed_s + other.elapsed_s,
            calls_per_sample=max(self.calls_per_sample, other.calls_per_sample),
            extra={**self.extra, **other.extra},
        )

    # -- JSON ----------------------------------------------------------------------------------------
    def to_json(self, *, samples: bool = False) -> dict[str, Any]:
        """``{"median_ms","mean_ms","min_ms","q1_ms","q3_ms","ci_low_ms","ci_high_ms","n","stop"}`` plus
        ``confidence``, ``rel_tol``, ``elapsed_s``, ``calls_per_sample``, any ``extra``, and the samples
        when asked for."""
        d: dict[str, Any] = {
            "median_ms": self.median_ms,
            "mean_ms": self.mean_ms,
            "min_ms": self.min_ms,
            "q1_ms": self.q1_ms,
            "q3_ms": self.q3_ms,
            "ci_low_ms": self.ci_low_ms,
            "ci_high_ms": self.ci_high_ms,
            "n": self.n,
            "stop": self.stop,
            "confidence": self.confidence,
            "rel_tol": self.rel_tol,
            "elapsed_s": self.elapsed_s,
            "calls_per_sample": self.calls_per_sample,
        }
        d.update(self.extra)
        if samples:
            d["samples"] = list(self.samples)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Measurement:
        """Read what :meth:`to_json` wrote; unknown fields land in ``extra``."""
        known = {
            "median_ms", "mean_ms", "min_ms", "q1_ms", "q3_ms", "ci_low_ms", "ci_high_ms", "n", "stop",
            "confidence", "rel_tol", "elapsed_s", "calls_per_sample", "samples",
        }  # fmt: skip
        try:
            stop = d["stop"]
            if stop not in ("converged", "budget"):
                raise ValueError(f"stop must be 'converged' or 'budget', got {stop!r}")
            return cls(
                samples=tuple(float(s) for s in d.get("samples", ())),
                n=int(d["n"]),
                median_ms=float(d["median_ms"]),
                mean_ms=float(d["mean_ms"]),
                min_ms=float(d["min_ms"]),
                q1_ms=float(d["q1_ms"]),
                q3_ms=float(d["q3_ms"]),
                ci_low_ms=float(d["ci_low_ms"]),
                ci_high_ms=float(d["ci_high_ms"]),
                stop=stop,
                confidence=float(d.get("confidence", 0.95)),
                rel_tol=float(d.get("rel_tol", 0.01)),
                elapsed_s=float(d.get("elapsed_s", 0.0)),
                calls_per_sample=int(d.get("calls_per_sample", 1)),
                extra={k: v for k, v in d.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed measurement JSON: {e}") from None

    def triton_quantiles(self) -> list[float]:
        """``[median, 20th, 80th percentile]`` ms: what Triton's autotuner asks of ``do_bench`` (``quantiles=(0.5,
        0.2, 0.8)``), from the samples (the median and the quartiles where none were kept)."""
        if not self.samples:
            return [self.median_ms, self.q1_ms, self.q3_ms]
        xs = sorted(self.samples)
        return [self.median_ms, _quantile(xs, 0.2), _quantile(xs, 0.8)]

    def __repr__(self) -> str:
        return (
            f"Measurement(median={self.median_ms:.6g} ms, 95% CI [{self.ci_low_ms:.6g}, {self.ci_high_ms:.6g}], "
            f"n={self.n}, stop={self.stop})"
        )


def overlaps(a: Measurement, b: Measurement) -> bool:
    """Whether the two medians' intervals share any point (the two are not told apart)."""
    return a.ci_low_ms <= b.ci_high_ms and b.ci_low_ms <= a.ci_high_ms


def clearly_slower(a: Measurement, b: Measurement) -> bool:
    """Whether ``a``'s whole interval lies above ``b``'s: ``a`` is slower than ``b`` with confidence."""
    return a.ci_low_ms > b.ci_high_ms


class Interval(Protocol):
    """What :func:`within` reads: a median and its confidence interval (a :class:`Measurement`, or any object
    with these three numbers)."""

    @property
    def median_ms(self) -> float: ...
    @property
    def ci_low_ms(self) -> float: ...
    @property
    def ci_high_ms(self) -> float: ...


def within(a: Interval, b: Interval, rel_tol: float) -> bool:
    """Whether ``a`` is at most ``rel_tol`` slower than ``b`` with confidence: ``a.ci_high <= b.ci_low + rel_tol*b.median``."""
    return a.ci_high_ms <= b.ci_low_ms + rel_tol * b.median_ms

"""Cochran's sample size with finite-population correction (docs/metrics.md#sample-size), standard
library only.

Kept apart from :mod:`reform_core.sampling` so that ``python -m reform_core plan-size`` does
not import numpy, pandas or scipy: the normal quantile is ``statistics.NormalDist().inv_cdf``
(Wichura's AS 241 algorithm, accurate to about 1e-16, the same value as ``scipy.stats.norm.ppf``
to the last digits).
"""

from __future__ import annotations

import math
import numbers
from statistics import NormalDist


def check_int(value, name: str, minimum: int = 0) -> int:
    """``value`` as an int, refused (ValueError naming ``name``) unless an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def cochran_size(population, *, confidence: float = 0.95, p: float = 0.5, margin: float = 0.03) -> int:
    """Sample size by Cochran's formula with finite-population correction.

    ``n0 = z² p (1 − p) / e²`` and ``n = ⌈ n0 / (1 + (n0 − 1) / N) ⌉`` with
    ``z = Φ⁻¹((1 + confidence) / 2)`` (docs/metrics.md#sample-size; ReFormBench, arXiv:2610.19693,
    App. A.3.1; Cochran 1977,
    *Sampling Techniques*, eqs. 4.2 and 4.3).

    Parameters
    ----------
    population : int
        N, the number of disagreements of one evaluated model (0 gives 0).
    confidence : float
        Two-sided confidence level in (0, 1).
    p : float
        Anticipated proportion in (0, 1); 0.5 is the conservative choice.
    margin : float
        Target margin of error e in (0, 1).

    Returns
    -------
    int
        The sample size, never more than ``population``.
    """
    population = check_int(population, "population")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    if not 0 < margin < 1:
        raise ValueError(f"margin must lie in (0, 1), got {margin!r}")
    if population == 0:
        return 0
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    n0 = z * z * p * (1 - p) / (margin * margin)
    n = math.ceil(n0 / (1 + (n0 - 1) / population) - 1e-9)
    return int(min(max(n, 1), population))

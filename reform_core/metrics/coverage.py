"""Catalog coverage and feature-frequency correlation (docs/metrics.md#catalog-coverage,
#feature-frequency-correlation; ReFormBench, arXiv:2610.19693, §4.5, App. A.4).

Frames:

* EXTRACTED — one row per open-extracted feature instance: ``model`` and ``mapping`` in
  ``exact | subtype | composite | uncovered | not_format``.
* ANNOTATIONS — catalog annotations of baseline responses: ``model, question, feature``
  (the BASELINE frame of :mod:`reform_core.frames` has this shape).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from reform_core.frames import require_columns as _require

COVERED = ("exact", "subtype", "composite")
MAPPINGS = COVERED + ("uncovered", "not_format")


def catalog_coverage(
    extracted: pd.DataFrame, *, model: str = "model", mapping: str = "mapping", pooled: str = "Pooled"
) -> pd.DataFrame:
    """Instance coverage = covered / valid extracted instances (ReFormBench App. A.4, Table A4).

    ``exact``, ``subtype`` and ``composite`` count as covered; ``not_format`` instances are
    excluded from the denominator; ``uncovered`` ones stay in it. The pooled row divides
    total covered by total valid instances (not a mean of percentages).

    Returns
    -------
    DataFrame
        ``model, extracted, excluded, valid, covered, uncovered, coverage`` (%), plus the
        ``pooled`` row.
    """
    _require(extracted, [model, mapping], "extracted")
    bad = ~extracted[mapping].isin(MAPPINGS)
    if bad.any():
        raise ValueError(f"column {mapping!r} must be one of {MAPPINGS}; found {extracted.loc[bad, mapping].iloc[0]!r}")
    counts = pd.crosstab(extracted[model].astype(str), extracted[mapping]).reindex(columns=list(MAPPINGS), fill_value=0)
    counts.loc[pooled] = counts.sum()
    out = pd.DataFrame({"model": counts.index})
    out["extracted"] = counts.sum(axis=1).to_numpy()
    out["excluded"] = counts["not_format"].to_numpy()
    out["valid"] = out["extracted"] - out["excluded"]
    out["covered"] = counts[list(COVERED)].sum(axis=1).to_numpy()
    out["uncovered"] = counts["uncovered"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["coverage"] = np.where(
            out["valid"] > 0, 100 * out["covered"] / out["valid"].where(out["valid"] > 0, 1), np.nan
        )
    return out


def feature_frequency(
    annotations: pd.DataFrame,
    *,
    model: str = "model",
    question: str = "question",
    feature: str = "feature",
    features: Sequence[str] | None = None,
    n_questions: int | None = None,
) -> pd.DataFrame:
    """Response-level frequency ``f_m(c) = (1/|Q|) Σ_q 1{c ∈ F_m(q)}`` (ReFormBench eq. 14).

    Each feature counts at most once per (model, question).

    Parameters
    ----------
    annotations : DataFrame
        ANNOTATIONS frame.
    features : sequence of str, optional
        The catalog's features (rows; features never annotated get 0). Default: the
        annotated ones. An annotated feature outside ``features`` raises ValueError.
    n_questions : int, optional
        |Q_common| (e.g. 910). Default: the number of distinct questions annotated.

    Returns
    -------
    DataFrame
        Frequencies in [0, 1], index = feature, columns = models.
    """
    _require(annotations, [model, question, feature], "annotations")
    a = annotations[[model, question, feature]].astype(str).drop_duplicates()
    n = int(n_questions) if n_questions is not None else a[question].nunique()
    if n <= 0:
        raise ValueError(f"n_questions must be positive, got {n}")
    freq = pd.crosstab(a[feature], a[model]) / n
    if features is not None:
        unknown = sorted(set(freq.index) - set(map(str, features)))
        if unknown:
            raise ValueError(f"annotated feature(s) not in the catalog: {unknown[:5]}")
        freq = freq.reindex(list(map(str, features)), fill_value=0.0)
    if (freq > 1).any().any():
        raise ValueError("a frequency exceeds 1: n_questions is smaller than the annotated question count")
    freq.index.name, freq.columns.name = "feature", "model"
    return freq


def frequency_correlation(
    freq: pd.DataFrame, reference: Sequence[str], *, others: Sequence[str] | None = None, pooled: str = "Pooled"
) -> pd.DataFrame:
    """Spearman ρ of feature frequencies against the reference group's mean (ReFormBench
    App. A.4, Table 4).

    Each model in ``others`` is compared with ``f_ref = mean over reference models``; the
    pooled row compares the mean frequency vector of ``others`` (averaged before ranking)
    with ``f_ref``. Ties get average ranks; ρ and its p-value are those of
    ``scipy.stats.spearmanr`` (:func:`spearman`, :func:`spearman_p_value`).

    Parameters
    ----------
    freq : DataFrame
        :func:`feature_frequency` output (features × models).
    reference : sequence of str
        Reference models (the construction models).
    others : sequence of str, optional
        Models to compare (default: every column not in ``reference``).

    Returns
    -------
    DataFrame
        ``model, rho, p_value, features`` (features with frequency > 0, union for the
        pooled row), one row per model of ``others`` plus the ``pooled`` row.
    """
    missing = [m for m in reference if m not in freq.columns]
    if missing or not reference:
        raise ValueError(f"reference models missing from the frequency table: {missing or 'none given'}")
    others = [c for c in freq.columns if c not in reference] if others is None else list(others)
    missing = [m for m in others if m not in freq.columns]
    if missing or not others:
        raise ValueError(f"models to compare missing from the frequency table: {missing or 'none given'}")
    f_ref = freq[list(reference)].mean(axis=1).to_numpy()
    rows = []
    for name, vec, observed in [(m, freq[m].to_numpy(), int((freq[m] > 0).sum())) for m in others] + [
        (pooled, freq[others].mean(axis=1).to_numpy(), int((freq[others] > 0).any(axis=1).sum()))
    ]:
        rho = spearman(vec, f_ref)
        rows.append({"model": name, "rho": rho, "p_value": spearman_p_value(rho, len(vec)), "features": observed})
    return pd.DataFrame(rows)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n along the last axis with ties at their average rank (``scipy.stats.rankdata``'s
    default), vectorised over the leading axes: after a stable sort, every member of a run of
    equal values gets the mean of the run's first and last positions (+1)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    order = np.argsort(x, axis=-1, kind="mergesort")
    s = np.take_along_axis(x, order, axis=-1)
    pos = np.broadcast_to(np.arange(n), x.shape)
    differs = s[..., 1:] != s[..., :-1]
    first = np.concatenate([np.ones(x.shape[:-1] + (1,), bool), differs], axis=-1)
    last = np.concatenate([differs, np.ones(x.shape[:-1] + (1,), bool)], axis=-1)
    start = np.maximum.accumulate(np.where(first, pos, 0), axis=-1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, pos, n - 1), axis=-1), axis=-1), axis=-1)
    ranks = np.empty(x.shape)
    np.put_along_axis(ranks, order, (start + end) / 2 + 1, axis=-1)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ with average ranks for ties (Pearson correlation of the ranks); NaN when
    either vector is constant."""
    return float(spearman_rows(np.asarray(x, dtype=float)[None], np.asarray(y, dtype=float)[None])[0])


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row of ``x`` with the same row of ``y`` (2-D arrays of one shape)."""
    rx, ry = average_ranks(x), average_ranks(y)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    num = (rx * ry).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def spearman_p_value(rho: float, n: int) -> float:
    """Two-sided p-value of Spearman ρ over ``n`` pairs by the t approximation scipy uses:
    t = ρ √((n − 2) / (1 − ρ²)) on n − 2 degrees of freedom, p = P(|T| ≥ |t|) =
    I_{ν/(ν+t²)}(ν/2, ½) (the regularized incomplete beta function, :func:`_betainc`).
    NaN for NaN ρ or n < 3; 0 for |ρ| = 1."""
    if not math.isfinite(rho) or n < 3:
        return float("nan")
    df = n - 2
    if abs(rho) >= 1.0:
        return 0.0
    t2 = rho * rho * df / ((1.0 - rho) * (1.0 + rho))
    return min(1.0, _betainc(df / 2.0, 0.5, df / (df + t2)))


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz;
    Press et al., *Numerical Recipes*, 3rd ed., §6.4), using the symmetry
    I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b
    return front * _beta_fraction(a, b, x) / a


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h

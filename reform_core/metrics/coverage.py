"""Catalog coverage and feature-frequency correlation (SPEC §3; seed 000 §4.5, App. A.4).

Frames:

* EXTRACTED — one row per open-extracted feature instance: ``model`` and ``mapping`` in
  ``exact | subtype | composite | uncovered | not_format``.
* ANNOTATIONS — catalog annotations of baseline responses: ``model, question, feature``
  (the BASELINE frame of :mod:`reform_core.frames` has this shape).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from reform_core.frames import require_columns as _require


COVERED = ("exact", "subtype", "composite")
MAPPINGS = COVERED + ("uncovered", "not_format")


def catalog_coverage(extracted: pd.DataFrame, *, model: str = "model", mapping: str = "mapping", pooled: str = "Pooled") -> pd.DataFrame:
    """Instance coverage = covered / valid extracted instances (seed 000 App. A.4, Table A4).

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
        out["coverage"] = np.where(out["valid"] > 0, 100 * out["covered"] / out["valid"].where(out["valid"] > 0, 1), np.nan)
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
    """Response-level frequency ``f_m(c) = (1/|Q|) Σ_q 1{c ∈ F_m(q)}`` (seed 000 eq. 14).

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


def frequency_correlation(freq: pd.DataFrame, reference: Sequence[str], *, others: Sequence[str] | None = None, pooled: str = "Pooled") -> pd.DataFrame:
    """Spearman ρ of feature frequencies against the reference group's mean (seed 000
    App. A.4, Table 4).

    Each model in ``others`` is compared with ``f_ref = mean over reference models``; the
    pooled row compares the mean frequency vector of ``others`` (averaged before ranking)
    with ``f_ref``. Ties get average ranks (``scipy.stats.spearmanr``).

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
        res = spearmanr(vec, f_ref)
        rows.append({"model": name, "rho": float(res.statistic), "p_value": float(res.pvalue), "features": observed})
    return pd.DataFrame(rows)

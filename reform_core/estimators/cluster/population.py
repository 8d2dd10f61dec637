"""The default estimator's population intervals and its long result frame.

The population interval adds question resampling to the measurement uncertainty: a cluster
bootstrap over questions of the totals ``T_c`` (``docs/estimator.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from reform_core.estimators.cluster.result import ClusterEstimate

BOOT_CHUNK = 256  # population-bootstrap replicates whose question weights are held at once
METRICS = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")


def population_intervals(
    est: "ClusterEstimate", *, n_boot: int = 2000, level: float = 0.95, rng: np.random.Generator | None = None
) -> pd.DataFrame:
    """Intervals that add question resampling to the measurement uncertainty.

    Cluster bootstrap over questions (multinomial weights shared by all models) of the
    per-cluster totals ``T_c`` of :func:`estimate`, each replicate a ratio of weighted sums
    (``Σ_q w_q T_{m,q} / Σ_q w_q D_{m,q}``), plus a normal draw with the variance that the
    spread of ``T_c`` does not carry — the adjudicator-error variance and what the audit's
    composite and Jeffreys floor add to the measurement variance (``floor_variance``); percentile
    intervals (Efron & Tibshirani 1993, §13.3). The population's uncertainty contains the
    measurement's (resampling questions only adds), so the interval reported is the hull of
    that percentile interval and the measurement interval: with few observed clusters the
    measurement interval's t quantile can exceed the bootstrap's spread.

    Returns
    -------
    DataFrame
        ``model, metric, lo, hi, n_valid``.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    nq, nm = len(est.questions), len(est.models)
    num = {k: np.empty((n_boot, nm)) for k in est.totals}  # (B, n_models)
    den = {k: np.empty((n_boot, nm)) for k in est.denominators}
    # the question weights drawn BOOT_CHUNK replicates at a time (the same draws as one call):
    # at 10× the paper (9,100 questions) all 2,000 at once would hold 290 MB
    for b0 in range(0, n_boot, BOOT_CHUNK):
        b1 = min(n_boot, b0 + BOOT_CHUNK)
        wts = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=b1 - b0).astype(float)
        for k, v in est.totals.items():
            num[k][b0:b1] = wts @ v.T
        for k, v in est.denominators.items():
            den[k][b0:b1] = wts @ v.T
    with np.errstate(divide="ignore", invalid="ignore"):
        r = {k: np.where(den[k] > 0, 100 * num[k] / den[k], np.nan) for k in num}
    reps = {
        "tcpr": r["allpass"],
        "constraint_level": r["rows"],
        "r1": r["joint1"],
        "r2": r["joint2"],
        "r3": r["joint3"],
    }
    reps["emcr"] = (r["joint1"] + r["joint2"] + r["joint3"]) / 3
    alpha = 100 * (1 - level) / 2
    meas = est.table.set_index("model")
    out = []
    for metric, rep in reps.items():
        ev = est.error_variance.get(metric)
        fv = (est.floor_variance or {}).get(metric)
        if fv is not None:
            ev = fv if ev is None else ev + fv
        if ev is not None:
            rep = rep + rng.normal(0, 1, rep.shape) * np.sqrt(np.maximum(ev, 0))[None, :]
        for mi, mm in enumerate(est.models):
            col = rep[:, mi]
            ok = ~np.isnan(col)
            lo, hi = np.percentile(col[ok], [alpha, 100 - alpha]) if ok.any() else (np.nan, np.nan)
            m_lo, m_hi = meas.loc[mm, f"{metric}_lo"], meas.loc[mm, f"{metric}_hi"]
            if ok.any() and not np.isnan(m_lo):
                lo, hi = min(lo, m_lo), max(hi, m_hi)
            out.append({"model": mm, "metric": metric, "lo": lo, "hi": hi, "n_valid": int(ok.sum())})
    return pd.DataFrame(out)


def scores_frame(est: "ClusterEstimate", population: pd.DataFrame | None = None) -> pd.DataFrame:
    """The estimate as a long frame ``model, metric, estimate, measurement_lo,
    measurement_hi, population_lo, population_hi`` (the shape every estimator returns)."""
    rows = []
    pop = population.set_index(["model", "metric"]) if population is not None else None
    t = est.table.set_index("model")
    for metric in METRICS:
        for mm in est.models:
            r = {
                "model": mm,
                "metric": metric,
                "estimate": t.loc[mm, metric],
                "measurement_lo": t.loc[mm, f"{metric}_lo"],
                "measurement_hi": t.loc[mm, f"{metric}_hi"],
                "population_lo": np.nan,
                "population_hi": np.nan,
            }
            if pop is not None and (mm, metric) in pop.index:
                r["population_lo"], r["population_hi"] = pop.loc[(mm, metric), "lo"], pop.loc[(mm, metric), "hi"]
            rows.append(r)
    return pd.DataFrame(rows)

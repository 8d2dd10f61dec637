"""The audit's share of the measurement variance: its direct estimate stabilised by a prediction
pooled over the models scored together (:func:`audit_composite`), never below a rate-based floor
(:func:`audit_floor`). Why and how it was measured: ``docs/estimator.md``.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize


def audit_composite(direct: np.ndarray, exposure: np.ndarray) -> np.ndarray:
    """The audit's variance per model: the mean of its direct (design-based) estimate and a
    prediction pooled over the models scored together (``docs/estimator.md``, "The audit's share").

    The direct estimate rests on the few audited agreements whose decision differs from the
    prediction, and like the Wald variance of a Poisson count it moves with the estimate itself.
    A generalized variance function (Wolter 2007, ch. 7) predicts each model's audit variance from
    its ``exposure`` (per agreed label: the variance its audit would have at a both-wrong rate of
    ½, :func:`audit_floor`; a function of the design and the derivatives only) as
    ``Σ_ℓ ρ_ℓ E_m,ℓ`` with ``ρ ≥ 0`` fitted by non-negative least squares across the models. With
    one model scored, or no exposure, it is the direct estimate; a direct estimate below zero
    counts as zero. How the rule was chosen and measured: ``bench/RESULTS.md``, "tuning history".
    """
    direct = np.asarray(direct, dtype=float)
    e = np.asarray(exposure, dtype=float)
    e = e.reshape(len(direct), -1)
    ok = np.isfinite(direct) & np.isfinite(e).all(axis=1)  # a model without a finite variance is left as it is
    if ok.sum() < 2 or not (e[ok] > 0).any():
        return direct
    d = np.maximum(direct[ok], 0.0)
    coef, _ = optimize.nnls(e[ok], d)
    out = direct.copy()
    out[ok] = (d + e[ok] @ coef) / 2.0
    return out


def audit_floor(
    grad, audited, wrong, pi_a, pi_c, row_model, nm, label, *, found: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Rate-based floor for the variance that the audit's corrections add.

    Both-judges-wrong errors are rare, so the design-based variance of the audit terms is zero
    whenever the audit finds none, although the truth may hold a few. Per agreed label ``l`` the
    floor assumes errors fall independently at the Jeffreys-smoothed rate
    ``r̃_l = (k_l + ½)/(n_l + 1)`` (``k_l``: the audit's debiased count of wrong agreements among its
    ``n_l`` audited ones, pooled over the models scored together, which share the judges) and sums
    per model the two-stage variance this gives:
    ``r̃_l(1 − r̃_l) Σ_{u audited, label l} (G_u²/π_A) [(1 − π_A)/(π_A π_c²) + (1 − π_c)/π_c²]``,
    the audited rows standing (weight 1/π_A) for every agreement of their sampled cluster.
    With ``found=False`` the rate leaves out the errors the audit found, ``r̃_l = ½/(n_l + 1)``: the
    floor is then the variance of the prior's half event alone, which binds where the audit found
    (almost) nothing and stays below the direct estimate once it has found errors.

    Returns ``(floor, exposure)``: the floor per model, and per model × agreed label (columns:
    agreed fail, agreed pass) the same sum at a rate of ½ — the covariates of
    :func:`audit_composite`. How the rule was chosen: ``bench/RESULTS.md``, "tuning history".
    """
    if not audited.any():
        return np.zeros(nm), np.zeros((nm, 2))
    pc = np.clip(pi_c[audited], 1e-12, 1.0)
    pa = pi_a[audited]
    term = grad[audited] ** 2 / pa * ((1 - pa) / (pa * pc**2) + (1 - pc) / pc**2)
    lab = (np.asarray(label)[audited] == 1).astype(np.int64)
    n = np.bincount(lab, minlength=2).astype(float)
    k = np.maximum(np.bincount(lab, wrong[audited], minlength=2), 0.0) if found else np.zeros(2)
    r = np.minimum((k + 0.5) / (n + 1.0), 0.5)
    per_label = np.stack(
        [np.bincount(row_model[audited], np.where(lab == col, term, 0.0), minlength=nm) for col in (0, 1)], axis=1
    )
    return per_label @ (r * (1 - r)), 0.25 * per_label

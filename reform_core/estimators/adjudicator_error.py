"""Adjudicator error: a two-class latent-class (Dawid–Skene) model of human decisions.

Every human decision is read as a binary truth label ``h`` of one instance (for a
disagreement: the label of the judge the annotator sided with; for an audited agreement:
the agreed label, or its opposite when the annotator answered "neither" — both judges
wrong). Annotators err: annotator ``j`` reports ``h = 1`` on a true pass with probability
``α_j`` (sensitivity) and ``h = 0`` on a true fail with probability ``β_j`` (specificity).
Items fall into groups ``g`` (e.g. disagreement direction A1B0 / A0B1, audited agreements
on a pass / on a fail) with their own prevalence ``ρ_g = P(y = 1 | g)``. Decisions on one
item are independent given its truth (Dawid & Skene 1979, *Applied Statistics* 28:20–28).

The model is identified by the double-adjudicated items (two annotators on one item)
together with the different prevalences of the groups (Hui & Walter 1980, *Biometrics*
36:167–171: two conditionally independent raters and two populations with different
prevalence identify both error rates). Without any item decided twice, the error rates
are not identified and :func:`fit` reports ``identified = False``.

Estimation is EM with smoothed M-steps: every rate is a posterior mean under a weak Beta
prior (a few pseudo-decisions) instead of the maximum-likelihood ratio, so an annotator
whose doubled items all agree gets an accuracy just below 1 instead of exactly 1 (a
variance of exactly zero would claim certainty that 20 agreeing items do not give), and
per-annotator rates are shrunk towards the pooled rates when an annotator has few
decisions (empirical Bayes: the prior is centred on the pooled fit).

Debiasing: for a decision of annotator ``j``, ``ỹ = (h − (1 − β_j)) / (α_j + β_j − 1)``
has ``E[ỹ | y] = y`` exactly (given the rates), so sums and products over distinct
instances of ``ỹ`` are unbiased for the true sums and products (independent errors); its
conditional variance is ``α_j(1−α_j)/(α_j+β_j−1)²`` on a pass and ``β_j(1−β_j)/(…)²`` on a
fail. An item decided by ``k`` annotators gets the mean of their ``ỹ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reform_core.frames import require_columns

PRIOR_STRENGTH = 4.0  # pseudo-decisions behind each annotator's rates (shrinkage to pooled)
POOLED_PRIOR = (0.95, 2.0)  # prior mean accuracy and pseudo-decisions of the pooled rates
MAX_ITER = 2000
TOL = 1e-9


@dataclass(frozen=True)
class ErrorModel:
    """Fitted adjudicator error rates.

    ``alpha`` / ``beta``: per-annotator sensitivity P(h=1|y=1) and specificity P(h=0|y=0)
    (Series indexed by annotator); ``pooled``: (α, β) of all annotators together;
    ``prevalence``: ρ_g per group; ``identified``: whether any item was decided twice;
    ``n_decisions`` / ``n_double``: decisions and doubled items per annotator.
    """

    alpha: pd.Series
    beta: pd.Series
    pooled: tuple[float, float]
    prevalence: pd.Series
    identified: bool
    n_decisions: pd.Series
    n_double: pd.Series

    def rates(self, annotators) -> tuple[np.ndarray, np.ndarray]:
        """(α, β) per decision; annotators not in the fit get the pooled rates."""
        ann = pd.Index(np.asarray(annotators, dtype=object))
        a = self.alpha.reindex(ann).fillna(self.pooled[0]).to_numpy(dtype=float)
        b = self.beta.reindex(ann).fillna(self.pooled[1]).to_numpy(dtype=float)
        return a, b

    def accuracy(self) -> pd.DataFrame:
        """Per annotator: estimated sensitivity, specificity, balanced accuracy and counts."""
        out = pd.DataFrame({"annotator": self.alpha.index, "sensitivity": self.alpha.to_numpy(),
                            "specificity": self.beta.to_numpy()})
        out["accuracy"] = (out["sensitivity"] + out["specificity"]) / 2
        out["decisions"] = out["annotator"].map(self.n_decisions).fillna(0).astype(int)
        out["double_items"] = out["annotator"].map(self.n_double).fillna(0).astype(int)
        return out


def perfect(annotators=()) -> ErrorModel:
    """The error model of infallible adjudicators (α = β = 1)."""
    idx = pd.Index(list(annotators), dtype=object)
    ones = pd.Series(1.0, index=idx)
    zero = pd.Series(0, index=idx)
    return ErrorModel(ones, ones.copy(), (1.0, 1.0), pd.Series(dtype=float), False, zero, zero.copy())


def fit(decisions: pd.DataFrame, *, item: str = "iid", annotator: str = "annotator", label: str = "h",
        group: str = "group", per_annotator: bool = True, prior_strength: float = PRIOR_STRENGTH,
        pooled_prior_strength: float = POOLED_PRIOR[1]) -> ErrorModel:
    """Fit the two-class latent-class model by EM (module docstring).

    Parameters
    ----------
    decisions : DataFrame
        One row per human decision: ``item``, ``annotator``, ``label`` (0/1: the truth the
        annotator reported) and ``group`` (prevalence group of the item).
    per_annotator : bool
        Fit a rate pair per annotator (shrunk towards the pooled pair); False: one pair.
    prior_strength, pooled_prior_strength : float
        Pseudo-decisions of the smoothing priors (module docstring); both 0 gives the
        maximum-likelihood Dawid–Skene fit (and unsmoothed prevalences).

    Returns
    -------
    ErrorModel
    """
    require_columns(decisions, [item, annotator, label, group], "decisions")
    d = decisions[[item, annotator, label, group]].dropna()
    h = pd.to_numeric(d[label], errors="coerce").to_numpy(dtype=float)
    if not np.isin(h, (0.0, 1.0)).all():
        raise ValueError(f"column {label!r} must hold 0/1 decisions")
    item_code, items = pd.factorize(d[item])
    ann_code, anns = pd.factorize(d[annotator].astype(str))
    n_items = len(items)
    per_item = np.bincount(item_code, minlength=n_items)
    doubled = per_item >= 2
    n_dec = pd.Series(np.bincount(ann_code, minlength=len(anns)), index=anns)
    n_dbl = pd.Series(np.bincount(ann_code, weights=doubled[item_code], minlength=len(anns)).astype(int), index=anns)
    grp_of_item = pd.Series(d[group].astype(str).to_numpy()).groupby(item_code).first()
    g_code, groups = pd.factorize(grp_of_item.to_numpy())
    if n_items == 0:
        return perfect()
    identified = bool(doubled.any())

    a, b, (a0, b0), rho = fit_arrays(h, item_code, ann_code, g_code, len(anns), len(groups),
                                     per_annotator=per_annotator, prior_strength=prior_strength,
                                     pooled_prior_strength=pooled_prior_strength)
    return ErrorModel(pd.Series(a, index=anns), pd.Series(b, index=anns), (a0, b0),
                      pd.Series(rho, index=groups), identified, n_dec, n_dbl)


def fit_arrays(h: np.ndarray, item_code: np.ndarray, ann_code: np.ndarray, item_group: np.ndarray, n_ann: int,
               n_groups: int, *, per_annotator: bool = True, start: tuple | None = None,
               prior_strength: float = PRIOR_STRENGTH, pooled_prior_strength: float = POOLED_PRIOR[1],
               tol: float = TOL):
    """:func:`fit` on integer codes: decisions ``h`` of items ``item_code`` (0..n_items−1) by
    annotators ``ann_code``; ``item_group`` = group code of each item; ``start`` = optional
    (alpha, beta, pooled) to start EM from (a nearby fit, e.g. in a bootstrap); ``tol`` = EM stopping rule (largest change of a
    rate between iterations). Returns
    ``(alpha, beta, (pooled_alpha, pooled_beta), rho)``."""
    n_items = len(item_group)
    p_start = (np.array([start[2][0]]), np.array([start[2][1]])) if start is not None else None
    pooled = _em(h, item_code, np.zeros(len(h), dtype=np.int64), item_group, n_items, n_groups, 1,
                 prior=(np.array([POOLED_PRIOR[0]]), np.array([POOLED_PRIOR[0]]), pooled_prior_strength), start=p_start,
                 smooth_prevalence=pooled_prior_strength > 0, tol=tol)
    a0, b0 = float(pooled[0][0]), float(pooled[1][0])
    if per_annotator and n_ann > 1:
        a, b, rho = _em(h, item_code, ann_code, item_group, n_items, n_groups, n_ann,
                        prior=(np.full(n_ann, a0), np.full(n_ann, b0), prior_strength),
                        start=(start[0], start[1]) if start is not None else None,
                        smooth_prevalence=prior_strength > 0, tol=tol)
    else:
        a, b, rho = np.full(n_ann, a0), np.full(n_ann, b0), pooled[2]
    return a, b, (a0, b0), rho


def _em(h, item_code, ann_code, g_code, n_items, n_groups, n_ann, *, prior, start=None, smooth_prevalence=True,
        tol=TOL):
    """EM for (α_j, β_j, ρ_g); prior = (mean α per annotator, mean β, pseudo-count)."""
    mean_a, mean_b, strength = prior
    a0, b0 = (mean_a, mean_b) if start is None else start
    a = np.clip(np.asarray(a0, dtype=float), 0.55, 0.999)
    b = np.clip(np.asarray(b0, dtype=float), 0.55, 0.999)
    item_group = np.asarray(g_code, dtype=np.int64)  # one group per item, in item-code order
    rho = np.full(n_groups, 0.5)
    prev = None
    for _ in range(MAX_ITER):
        # E-step: log-likelihood of each item's decisions under y = 1 and y = 0
        l1 = np.bincount(item_code, np.where(h == 1, np.log(a[ann_code]), np.log1p(-a[ann_code])), minlength=n_items)
        l0 = np.bincount(item_code, np.where(h == 0, np.log(b[ann_code]), np.log1p(-b[ann_code])), minlength=n_items)
        r = rho[item_group]
        logit = np.log(r) - np.log1p(-r) + l1 - l0
        post = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
        # M-step (smoothed)
        pd_ = post[item_code]
        a = (np.bincount(ann_code, pd_ * h, minlength=n_ann) + strength * mean_a) / \
            (np.bincount(ann_code, pd_, minlength=n_ann) + strength)
        b = (np.bincount(ann_code, (1 - pd_) * (1 - h), minlength=n_ann) + strength * mean_b) / \
            (np.bincount(ann_code, 1 - pd_, minlength=n_ann) + strength)
        half = 0.5 if smooth_prevalence else 0.0
        rho = (np.bincount(item_group, post, minlength=n_groups) + half) / (np.bincount(item_group, minlength=n_groups) + 2 * half)
        a, b = np.clip(a, 1e-6, 1 - 1e-9), np.clip(b, 1e-6, 1 - 1e-9)
        state = np.r_[a, b, rho]
        if prev is not None and np.max(np.abs(state - prev)) < tol:
            break
        prev = state
    return a, b, rho


MAX_DECISIONS = 6  # decisions per item used by the minimum-variance rule (enumerates 2^k patterns)


def item_estimates(decisions: pd.DataFrame, model: ErrorModel, prior: pd.Series, *, item: str = "iid",
                   annotator: str = "annotator", label: str = "h") -> pd.DataFrame:
    """Unbiased truth estimate of each decided item with the smallest variance.

    For an item decided by annotators ``j_1..j_k`` with outcome pattern ``o ∈ {0,1}^k``,
    any estimator ``f(o)`` with ``E[f | y = 1] = 1`` and ``E[f | y = 0] = 0`` keeps every sum
    and product over distinct items unbiased. With one decision ``f`` is unique (the
    classical correction ``(h − (1 − β)) / (α + β − 1)``); with two or more there is a
    family, and we take the member of least variance under the item's prior pass
    probability ``ρ`` (a prediction that must not use this item's own decisions, e.g. the
    cross-fitted stratum rate):

        minimise Σ_o w_o f_o²,  w_o = ρ P(o | y=1) + (1 − ρ) P(o | y=0),
        subject to Σ_o P(o | 1) f_o = 1,  Σ_o P(o | 0) f_o = 0,

    whose solution is ``f_o = (λ₁ P(o|1) + λ₀ P(o|0)) / w_o`` with (λ₁, λ₀) from the 2 × 2
    normal equations (Lagrange multipliers). Unbiasedness does not depend on ``ρ``; a
    good ``ρ`` only lowers the variance (with two decisions at 10 % error and ρ = 0.9 it is
    about a quarter of the single-decision variance).

    Parameters
    ----------
    decisions : DataFrame
        ``item, annotator, label`` (0/1), one row per decision.
    model : ErrorModel
        The annotators' rates.
    prior : Series
        ρ per item (indexed by item); missing items get 0.5.

    Returns
    -------
    DataFrame
        Indexed by item: ``y_tilde`` (the estimate), ``var`` (its conditional variance,
        weighted by the prior), ``n`` (decisions used), ``h_mean``.
    """
    require_columns(decisions, [item, annotator, label], "decisions")
    d = decisions.sort_values([item, annotator], kind="stable")
    codes, items = pd.factorize(d[item], sort=False)
    rank = d.groupby(codes).cumcount().to_numpy()
    keep = rank < MAX_DECISIONS
    d, codes, rank = d[keep], codes[keep], rank[keep]
    h = pd.to_numeric(d[label], errors="coerce").to_numpy(dtype=float)
    a, b = model.rates(d[annotator].astype(str).to_numpy())
    n_items = len(items)
    k = np.bincount(codes, minlength=n_items)
    rho = np.clip(pd.Series(items).map(prior).fillna(0.5).to_numpy(dtype=float), 1e-4, 1 - 1e-4)
    y_tilde = np.zeros(n_items)
    var = np.zeros(n_items)
    for kk in np.unique(k):
        sel_items = np.flatnonzero(k == kk)
        rows = np.isin(codes, sel_items)
        # (n_sel, kk) matrices of rates and outcomes, decisions in item order
        A = a[rows].reshape(-1, kk)
        B = b[rows].reshape(-1, kk)
        H = h[rows].reshape(-1, kk)
        r = rho[sel_items][:, None]
        pats = ((np.arange(2 ** kk)[:, None] >> np.arange(kk)[None, :]) & 1).astype(float)  # (P, kk)
        p1 = np.prod(np.where(pats[None] == 1, A[:, None, :], 1 - A[:, None, :]), axis=2)  # (n, P)
        p0 = np.prod(np.where(pats[None] == 1, 1 - B[:, None, :], B[:, None, :]), axis=2)
        w = r * p1 + (1 - r) * p0
        w = np.maximum(w, 1e-300)
        m11, m10, m00 = (p1 * p1 / w).sum(1), (p1 * p0 / w).sum(1), (p0 * p0 / w).sum(1)
        det = m11 * m00 - m10 * m10
        lam1, lam0 = m00 / det, -m10 / det
        f = (lam1[:, None] * p1 + lam0[:, None] * p0) / w  # (n, P)
        obs = (H * (1 << np.arange(kk))[None, :]).sum(1).astype(int)
        y_tilde[sel_items] = f[np.arange(len(sel_items)), obs]
        e1 = (p1 * f * f).sum(1) - 1.0
        e0 = (p0 * f * f).sum(1)
        idx = np.arange(len(sel_items))
        post = r[:, 0] * p1[idx, obs] / w[idx, obs]  # P(y = 1 | pattern): weights the two variances
        var[sel_items] = post * e1 + (1 - post) * e0
    h_mean = np.bincount(codes, h, minlength=n_items) / np.maximum(k, 1)
    return pd.DataFrame({"y_tilde": y_tilde, "var": np.maximum(var, 0.0), "n": k, "h_mean": h_mean},
                        index=pd.Index(items, name=item))


def debiased(decisions: pd.DataFrame, model: ErrorModel, *, item: str = "iid", annotator: str = "annotator",
             label: str = "h") -> pd.DataFrame:
    """Per item: unbiased truth proxy ``y_tilde`` (mean of the decisions' ``ỹ``), its
    conditional variance ``var`` (given the posterior of the truth) and ``n`` decisions.

    Parameters
    ----------
    decisions : DataFrame
        As for :func:`fit`.
    model : ErrorModel
        The fitted rates (:func:`perfect` for infallible adjudicators).

    Returns
    -------
    DataFrame
        Indexed by item: ``y_tilde, var, n, h_mean``.
    """
    require_columns(decisions, [item, annotator, label], "decisions")
    h = pd.to_numeric(decisions[label], errors="coerce").to_numpy(dtype=float)
    a, b = model.rates(decisions[annotator].astype(str).to_numpy())
    denom = a + b - 1.0
    if (denom <= 0.05).any():
        raise ValueError("an annotator's estimated accuracy is at or below chance; their decisions cannot be debiased")
    yt = (h - (1.0 - b)) / denom
    codes, items = pd.factorize(decisions[item])
    n = np.bincount(codes, minlength=len(items)).astype(float)
    y_tilde = np.bincount(codes, yt, minlength=len(items)) / n
    # posterior-weighted conditional variance of each decision, then of the item mean
    p1 = np.clip(np.bincount(codes, h, minlength=len(items)) / n, 0.0, 1.0)[codes]
    v = (p1 * a * (1 - a) + (1 - p1) * b * (1 - b)) / denom ** 2
    var = np.bincount(codes, v, minlength=len(items)) / n ** 2
    return pd.DataFrame({"y_tilde": y_tilde, "var": var, "n": n.astype(int),
                         "h_mean": np.bincount(codes, h, minlength=len(items)) / n}, index=pd.Index(items, name=item))

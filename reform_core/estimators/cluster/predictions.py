"""Step 4 of the default estimator: cross-fitted predictions of every row's truth.

Clusters are split into K folds by a hash fixed before sampling; the predictions used for a
cluster of fold k are fitted on the observed clusters of the other folds only: ``p̂`` for a
disagreement (its stratum's mean debiased decision, shrunk to the model × direction rate) and
``q̂`` for an agreement (its agreed label corrected by the audited both-wrong rate of its
context bin, shrunk to its audit stratum's rate). ``x`` is ``p̂`` on disagreements, ``q̂`` on
agreements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reform_core.estimators.cluster.layout import Layout
from reform_core.estimators.cluster.progress import Progress

SHRINK = 2.0  # pseudo-decisions pulling a stratum rate to its model × direction rate
AUDIT_PRIOR = (0.01, 1.0)  # prior both-wrong rate and pseudo-decisions of the audit predictor
AUDIT_SHRINK = 20.0  # pseudo-decisions pulling a context bin's both-wrong rate to its stratum's


def disagreement_predictions(
    fold: np.ndarray,
    folds: int,
    *,
    dis_of_fold: list,
    obs_dis_rows: np.ndarray,
    y: np.ndarray,
    d_stratum: np.ndarray,
    d_parent: np.ndarray,
    stratum_parent: np.ndarray,
) -> np.ndarray:
    """Cross-fitted ``p̂`` of every disagreement: for a cluster of fold k, its stratum's
    mean debiased decision over the observed clusters of the other folds, shrunk to the
    model × direction rate (Jeffreys-smoothed), clipped into (0, 1).

    ``dis_of_fold``: per fold the positions of its disagreement rows; ``obs_dis_rows``: the
    positions of the observed disagreements (ascending); ``d_stratum`` / ``d_parent``: int
    codes of each row's stratum (model × direction × context × category × mode) and its
    parent (model × direction × context); ``stratum_parent``: the parent code of each
    stratum code."""
    p_hat = np.full(len(fold), np.nan)
    n_s, n_p = len(stratum_parent), int(stratum_parent.max(initial=-1)) + 1
    obs_fold = fold[obs_dis_rows]
    for k in range(folds):
        t = obs_dis_rows[obs_fold != k]
        vals = np.clip(y[t], 0.0, 1.0)
        par_sum = np.bincount(d_parent[t], np.nan_to_num(vals), minlength=n_p)
        par_n = np.bincount(d_parent[t], minlength=n_p)
        par_rate = (par_sum + 0.5) / (par_n + 1.0)
        st_sum = np.bincount(d_stratum[t], np.nan_to_num(vals), minlength=n_s)
        st_n = np.bincount(d_stratum[t], minlength=n_s)
        rate = (st_sum + SHRINK * par_rate[stratum_parent]) / (st_n + SHRINK)
        sel = dis_of_fold[k]
        ds, dp = d_stratum[sel], d_parent[sel]
        pr = np.where(st_n[ds] > 0, rate[ds], np.where(par_n[dp] > 0, par_rate[dp], 0.5))
        p_hat[sel] = np.clip(pr, 1e-3, 1 - 1e-3)
    return p_hat


def hajek_codes(
    codes: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray,
    n_codes: int,
    *,
    prior: np.ndarray,
    strength: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted mean of ``values`` per code, shrunk with ``strength`` pseudo-rows towards
    ``prior[code]``: ``(Σ w v + s·w̄·prior) / (Σ w + s·w̄)``; and whether the code has rows."""
    wv = np.bincount(codes, weights * values, minlength=n_codes)
    w = np.bincount(codes, weights, minlength=n_codes)
    c = np.bincount(codes, minlength=n_codes)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_w = w / c
        rate = (wv + strength * mean_w * prior) / (w + strength * mean_w)
    return rate, (c > 0) & np.isfinite(rate)


@dataclass
class Predictions:
    """``x`` (``p̂`` on disagreements, ``q̂`` on agreements), ``q_hat``, and the audited rows with
    their Hájek weights ``1/(π_c π_A)`` (``audited_rows``, ``w_ad``)."""

    x: np.ndarray
    q_hat: np.ndarray
    audited_rows: np.ndarray
    w_ad: np.ndarray


def audit_predictions(
    lay: Layout, prog: Progress, y0: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cross-fitted ``q̂`` of every agreement (module docstring); also the audited rows and their weights."""
    cl, st = lay.clusters, lay.strata
    ad = np.flatnonzero(prog.audited)
    w_ad = prog.inv_pi[cl.row_cluster[ad]] / np.maximum(lay.pi_a_row[ad], 1e-12)  # Hájek weights of the audit
    wrong_ad = np.where(g[ad] == 1, 1 - y0[ad], y0[ad])  # linear in ỹ, so unbiased
    fold_ad, s_ad, c_ad = lay.fold[ad], st.a_stratum[ad], st.a_ctx[ad]
    q_hat = np.full(lay.n, np.nan)
    base = AUDIT_PRIOR[0] if (lay.pi_a_row > 0).any() else 0.0
    n_s, n_c = 2 * cl.nm, len(st.ctx_stratum)  # every (model, agreed label) and its 3 context bins, present or not
    for k in range(lay.folds):
        t = fold_ad != k
        r_s, seen_s = hajek_codes(s_ad[t], wrong_ad[t], w_ad[t], n_s, prior=np.full(n_s, base))
        r_c, seen_c = hajek_codes(c_ad[t], wrong_ad[t], w_ad[t], n_c, prior=r_s[st.ctx_stratum], strength=AUDIT_SHRINK)
        # each context code's rate (its audit stratum's where the context has none, else the prior),
        # then gathered for the fold's agreements
        code_s = np.arange(len(r_c)) // 3
        rate = np.clip(np.where(seen_c, r_c, np.where(seen_s[code_s], r_s[code_s], base)), 0.0, 0.5)
        rs, gs = rate[lay.agree_ctx_of_fold[k]], lay.agree_label_of_fold[k]
        q_hat[lay.agree_of_fold[k]] = gs * (1 - rs) + (1 - gs) * rs
    return q_hat, ad, w_ad


def predict(lay: Layout, prog: Progress, y0: np.ndarray, g: np.ndarray, m: np.ndarray) -> Predictions:
    """:class:`Predictions` from the classical debiased values ``y0`` of the decided rows."""
    st = lay.strata
    p_hat = disagreement_predictions(
        lay.fold,
        lay.folds,
        dis_of_fold=lay.dis_of_fold,
        obs_dis_rows=np.flatnonzero(prog.obs_dis),
        y=y0,
        d_stratum=st.d_stratum,
        d_parent=st.d_parent,
        stratum_parent=st.stratum_parent,
    )
    q_hat, ad, w_ad = audit_predictions(lay, prog, y0, g)
    return Predictions(x=np.where(g != m, p_hat, q_hat), q_hat=q_hat, audited_rows=ad, w_ad=w_ad)

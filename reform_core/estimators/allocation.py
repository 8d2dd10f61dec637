"""How a question-cluster plan spreads its audit over a model's agreements (Neyman allocation).

An agreement's audit is worth what an error there moves the scores times how uncertain its
audit's finding is: :func:`allocation_scores` scores each agreement, and
:func:`audit_row_probabilities` turns a model's mean audit rate into per-row (per audit group)
probabilities in proportion to the scores. :func:`prior_wrong_rates` is the planning guess of
how often both judges are wrong on an agreed label, :func:`second_opinion_noise` the noise an
audit's decisions leave under the plan's opinion rule. The probabilities are a deterministic
function of the judges' labels and the benchmark's structure, so the estimator recomputes them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.estimators.adjudicator_error import rule_leaves, unbiased_values
from reform_core.estimators.design import Design, audit_groups


def prior_wrong_rates(
    mean_label: np.ndarray, agree: np.ndarray, row_model: np.ndarray, nm: int, both_wrong: float
) -> np.ndarray:
    """Planning guess of the both-wrong rate of each model's agreed fails and agreed passes,
    ``(nm, 2)`` (column = agreed label), before any audit.

    Both judges are assumed wrong together on a share ``both_wrong`` of the instances,
    whatever the truth: a true pass then shows as an agreed fail and a true fail as an
    agreed pass. The truth's pass share is taken from the judges' mean labels, so the rate
    among agreed fails is ``both_wrong · passes / agreed fails`` and among agreed passes
    ``both_wrong · fails / agreed passes`` (at most ½). Agreed fails are usually the fewer, so
    the same number of errors makes them the far likelier place of an error.
    """
    out = np.full((nm, 2), min(both_wrong, 0.5))
    for mi in range(nm):
        sel = row_model == mi
        if not sel.any():
            continue
        passes = float(mean_label[sel].sum())
        fails = float(sel.sum()) - passes
        for lab, opposite in ((0, passes), (1, fails)):
            n_agree = float((agree & sel & ((mean_label > 0.5) == bool(lab))).sum())
            if n_agree > 0:
                out[mi, lab] = min(both_wrong * opposite / n_agree, 0.5)
    return out


def second_opinion_noise(error: float, rho, depth: int = 2) -> np.ndarray:
    """Variance an audit's decisions add to its item estimate under the second-opinion rule
    (``depth``: the most opinions asked in a row while each goes against the reference, 2 or
    :data:`reform_core.estimators.design.DEFAULT_AUDIT_OPINIONS`), when adjudicators err with probability ``error`` and the
    agreed label is right with probability ``rho``: the prior-weighted variance of the
    least-variance unbiased estimate over the rule's outcomes
    (:func:`reform_core.estimators.adjudicator_error.item_estimates`). Even an audit that
    confirms the judges leaves about ``1.6 error²`` of it with two opinions at most (about
    ``0.5 error²`` with three), so where errors are rare the decisions' noise, not the error
    itself, is what the audit must average out."""
    rho = np.clip(np.asarray(rho, dtype=float), 1e-6, 1 - 1e-6)
    if error <= 0:
        return np.zeros_like(rho)
    if rho.ndim == 1 and len(rho) > 64:  # per row, but rows share a few rates: compute each once
        uniq, inv = np.unique(rho, return_inverse=True)
        if len(uniq) < len(rho) // 4:
            return second_opinion_noise(error, uniq, depth)[inv.reshape(-1)]
    e = float(error)
    p1 = rule_leaves(
        [np.full_like(rho, 1 - e)] * int(depth)
    )  # the agreed label right: a decision confirms it w.p. 1 − e
    p0 = rule_leaves([np.full_like(rho, e)] * int(depth))
    f, _ = unbiased_values(p1, p0, rho[..., None])
    return rho * ((p1 * f * f).sum(-1) - 1) + (1 - rho) * (p0 * f * f).sum(-1)


AUDIT_FLOOR = 0.25  # share of the mean allocation score every agreement gets (keeps each π_A > 0)


def allocation_scores(design: Design, index, rows: pd.DataFrame, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Each agreement's audit allocation score under the plan's rule (0 on disagreements; a
    model's agreements are audited in proportion to it: :func:`audit_row_probabilities`).

    The optimal (Neyman) allocation of a Horvitz–Thompson audit term is ``π_u ∝ |G_u| σ_u``
    (Särndal et al. 1992, §3.7): how much an error of row u moves the scores times the
    standard deviation of what its audit finds. ``G^T_u`` and ``G^E_u`` are the derivatives of
    TCPR and EMCR with respect to row u (:meth:`UnitIndex.gradients`; computable before any
    human decision), each scaled by its root mean square over the model's agreements, so
    ``|G_u| = √((G^T_u² + G^E_u²) / 2)``. ``"neyman"`` (version 3): the derivatives are taken at
    each row's expected truth and ``σ_u² = r(1 − r) + v`` with ``r`` the planning guess of
    the both-wrong rate of the row's agreed label (:func:`prior_wrong_rates`) and ``v`` the
    noise the decisions leave (:func:`second_opinion_noise` at the assumed adjudicator error).
    ``"gradient"`` (version 2): derivatives at the judges' labels, ``σ_u = 1``. Every score
    gets ``AUDIT_FLOOR · mean`` added, which keeps every agreement's probability positive — exact
    unbiasedness needs it (an error where the first-order gradient is 0 still matters when
    another label of its product is wrong too). Plans that audit by target give each audit
    group its rows' root mean square score (one draw per group). ``"uniform"`` (version 1): 1.
    """
    from reform_core.unit_index import KS  # local: the metrics engine is only needed here

    agree = g == m
    allocation = design.audit_allocation
    if allocation not in ("gradient", "neyman"):
        return agree.astype(float)
    nm = len(index.models)
    row_model = _row_models(index, rows)
    mean_label = np.nan_to_num((g + m) / 2, nan=0.5)
    sigma = np.ones(len(rows))
    if allocation == "neyman":
        prior = prior_wrong_rates(mean_label, agree, row_model, nm, float(design.assumed_both_wrong))
        lab = (mean_label > 0.5).astype(np.int64)
        r = prior[row_model, lab]
        noise = second_opinion_noise(float(design.assumed_human_error), 1 - r, int(design.audit_opinions))
        sigma = np.where(agree, np.sqrt(r * (1 - r) + noise), 1.0)
        mean_label = np.where(agree, lab * (1 - r) + (1 - lab) * r, mean_label)
    grads = index.gradients(mean_label)
    groups = None
    if design.audit_unit == "target":
        groups = audit_groups(
            rows["model"],
            rows["question"],
            rows["feature"],
            rows["mode"],
            np.where(agree, np.nan_to_num(g), 0.0),
            keys=False,
        )[0]
    n_inst = np.bincount(index.inst_model, minlength=nm).astype(float)
    gt = grads["allpass"] / np.maximum(n_inst[row_model], 1.0)
    ge = np.zeros(len(rows))
    for k in KS:
        u_k = np.bincount(index.unit_model[index.unit_k == k], minlength=nm).astype(float)
        ge += np.where(u_k[row_model] > 0, grads[f"joint{k}"] / (3 * np.maximum(u_k[row_model], 1.0)), 0.0)
    return _scaled_scores(gt, ge, sigma, agree, row_model, nm, groups)


def _scaled_scores(
    gt: np.ndarray,
    ge: np.ndarray,
    sigma: np.ndarray,
    agree: np.ndarray,
    row_model: np.ndarray,
    nm: int,
    groups: np.ndarray | None,
) -> np.ndarray:
    """Per model: ``|G_u| σ_u`` from the two derivatives scaled by their root mean square, plus the
    floor share of the mean; one root-mean-square score per audit group where plans audit by target."""
    out = np.zeros(len(gt))
    for mi in range(nm):
        sel = agree & (row_model == mi)
        if not sel.any():
            continue
        parts = []
        for gv in (gt[sel], ge[sel]):
            rms = float(np.sqrt(np.mean(gv**2)))
            parts.append(gv / rms if rms > 0 else np.zeros(sel.sum()))
        score = np.sqrt((parts[0] ** 2 + parts[1] ** 2) / 2) * sigma[sel]
        mean = float(score.mean())
        score = score + AUDIT_FLOOR * mean if mean > 0 else np.ones(sel.sum())
        if groups is not None:  # one probability per audit group: its rows' root mean square score
            code = groups[sel]
            score = np.sqrt(np.bincount(code, score**2) / np.maximum(np.bincount(code), 1))[code]
        out[np.flatnonzero(sel)] = score
    return out


def _row_models(index, rows: pd.DataFrame) -> np.ndarray:
    """Each row's model as its position in ``index.models`` (factorised: no per-row strings)."""
    codes, uniq = pd.factorize(rows["model"])
    return pd.Index(index.models).get_indexer(pd.Index(uniq).astype(str))[codes]


def audit_row_probabilities(design: Design, index, rows: pd.DataFrame, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of each scored row of ``index`` (0 on disagreements): the model's mean rate
    ``audit_pi`` spread over its agreements in proportion to their allocation scores
    (:func:`allocation_scores`), ``π_u = min(1, c s_u)`` with c such that the mean over the
    model's agreements is ``audit_pi`` (capped rows give their excess to the others). The
    probabilities are a deterministic function of the judges' labels and the benchmark's
    structure, so the estimator recomputes them."""
    agree = g == m
    row_model = _row_models(index, rows)
    base = design.audit_probability(np.asarray(index.models, dtype=object))[row_model]  # per model, then per row
    if design.audit_allocation not in ("gradient", "neyman"):
        return np.where(agree, base, 0.0)
    scores = allocation_scores(design, index, rows, g, m)
    out = np.zeros(len(rows))
    for mi in range(len(index.models)):
        sel = agree & (row_model == mi)
        if not sel.any():
            continue
        score = scores[sel]
        target = float(base[sel][0]) * sel.sum()  # expected audits of the model
        pi = np.zeros(sel.sum())
        free = np.ones(sel.sum(), dtype=bool)
        for _ in range(50):  # cap at 1, hand the excess to the others
            left = target - (~free).sum()
            if left <= 0 or not free.any():
                break
            pi[free] = left * score[free] / score[free].sum()
            over = free & (pi >= 1.0)
            if not over.any():
                break
            pi[over] = 1.0
            free &= ~over
        out[np.flatnonzero(sel)] = np.clip(pi, 0.0, 1.0)
    return out


def row_audit_pi(inst: pd.DataFrame, design: Design, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of every row of ``inst`` (:func:`audit_row_probabilities` on the scored rows of
    the plan's condition; the model's mean rate on rows outside the index)."""
    out = np.where(g == m, design.audit_probability(inst["model"].astype(str).to_numpy()), 0.0)
    if design.audit_allocation not in ("gradient", "neyman"):
        return out
    from reform_core.unit_index import build_index  # local: only the gradient allocation needs it

    index = build_index(inst, condition=design.condition)
    rows = inst.iloc[index.row_pos]
    out[index.row_pos] = audit_row_probabilities(design, index, rows, g[index.row_pos], m[index.row_pos])
    return out

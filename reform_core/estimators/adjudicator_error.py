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
        out = pd.DataFrame(
            {"annotator": self.alpha.index, "sensitivity": self.alpha.to_numpy(), "specificity": self.beta.to_numpy()}
        )
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


def fit(
    decisions: pd.DataFrame,
    *,
    item: str = "iid",
    annotator: str = "annotator",
    label: str = "h",
    group: str = "group",
    per_annotator: bool = True,
    prior_strength: float = PRIOR_STRENGTH,
    pooled_prior_strength: float = POOLED_PRIOR[1],
) -> ErrorModel:
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

    a, b, (a0, b0), rho = fit_arrays(
        h,
        item_code,
        ann_code,
        g_code,
        len(anns),
        len(groups),
        per_annotator=per_annotator,
        prior_strength=prior_strength,
        pooled_prior_strength=pooled_prior_strength,
    )
    return ErrorModel(
        pd.Series(a, index=anns),
        pd.Series(b, index=anns),
        (a0, b0),
        pd.Series(rho, index=groups),
        identified,
        n_dec,
        n_dbl,
    )


def fit_arrays(
    h: np.ndarray,
    item_code: np.ndarray,
    ann_code: np.ndarray,
    item_group: np.ndarray,
    n_ann: int,
    n_groups: int,
    *,
    per_annotator: bool = True,
    start: tuple | None = None,
    prior_strength: float = PRIOR_STRENGTH,
    pooled_prior_strength: float = POOLED_PRIOR[1],
    tol: float = TOL,
):
    """:func:`fit` on integer codes: decisions ``h`` of items ``item_code`` (0..n_items−1) by
    annotators ``ann_code``; ``item_group`` = group code of each item; ``start`` = optional
    (alpha, beta, pooled) to start EM from (a nearby fit, e.g. in a bootstrap); ``tol`` = EM stopping rule (largest change of a
    rate between iterations). Returns
    ``(alpha, beta, (pooled_alpha, pooled_beta), rho)``."""
    n_items = len(item_group)
    p_start = (np.array([start[2][0]]), np.array([start[2][1]])) if start is not None else None
    pooled = _em(
        h,
        item_code,
        np.zeros(len(h), dtype=np.int64),
        item_group,
        n_items,
        n_groups,
        1,
        prior=(np.array([POOLED_PRIOR[0]]), np.array([POOLED_PRIOR[0]]), pooled_prior_strength),
        start=p_start,
        smooth_prevalence=pooled_prior_strength > 0,
        tol=tol,
    )
    a0, b0 = float(pooled[0][0]), float(pooled[1][0])
    if per_annotator and n_ann > 1:
        a, b, rho = _em(
            h,
            item_code,
            ann_code,
            item_group,
            n_items,
            n_groups,
            n_ann,
            prior=(np.full(n_ann, a0), np.full(n_ann, b0), prior_strength),
            start=(start[0], start[1]) if start is not None else None,
            smooth_prevalence=prior_strength > 0,
            tol=tol,
        )
    else:
        a, b, rho = np.full(n_ann, a0), np.full(n_ann, b0), pooled[2]
    return a, b, (a0, b0), rho


def _em(
    h, item_code, ann_code, g_code, n_items, n_groups, n_ann, *, prior, start=None, smooth_prevalence=True, tol=TOL
):
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
        a = (np.bincount(ann_code, pd_ * h, minlength=n_ann) + strength * mean_a) / (
            np.bincount(ann_code, pd_, minlength=n_ann) + strength
        )
        b = (np.bincount(ann_code, (1 - pd_) * (1 - h), minlength=n_ann) + strength * mean_b) / (
            np.bincount(ann_code, 1 - pd_, minlength=n_ann) + strength
        )
        half = 0.5 if smooth_prevalence else 0.0
        rho = (np.bincount(item_group, post, minlength=n_groups) + half) / (
            np.bincount(item_group, minlength=n_groups) + 2 * half
        )
        a, b = np.clip(a, 1e-6, 1 - 1e-9), np.clip(b, 1e-6, 1 - 1e-9)
        state = np.r_[a, b, rho]
        if prev is not None and np.max(np.abs(state - prev)) < tol:
            break
        prev = state
    return a, b, rho


MAX_DECISIONS = 6  # decisions per item used by the minimum-variance rule (enumerates 2^k patterns)


def _depths(reference: pd.Series, depth: pd.Series | None) -> pd.Series:
    """Each referenced item's most decisions under the rule (2 where ``depth`` does not say)."""
    if depth is None:
        return pd.Series(2, index=reference.index, dtype=np.int64)
    return depth.reindex(reference.index).fillna(2).astype(np.int64)


def second_opinion_items(
    decisions: pd.DataFrame,
    reference: pd.Series | None,
    *,
    depth: pd.Series | None = None,
    item: str = "iid",
    label: str = "h",
) -> tuple[pd.Index, pd.Index]:
    """Items under a second-opinion rule (``reference``: each item's reference label, NaN or
    absent = a fixed number of decisions; ``depth``: each item's most decisions, default 2):
    decisions are asked one after another while each differs from the reference, up to
    ``depth``. Returns ``(sequential, pending)`` as item indexes: ``sequential`` the complete
    items of the rule (a decision equal to the reference came, or ``depth`` decisions), and
    ``pending`` those still owed a decision (every decision so far, in the frame's order,
    differs from the reference, and fewer than ``depth`` exist)."""
    if reference is None or decisions.empty:
        return pd.Index([]), pd.Index([])
    ref = reference.dropna()
    d = decisions[decisions[item].isin(ref.index)]
    if d.empty:
        return pd.Index([]), pd.Index([])
    codes, items = pd.factorize(d[item], sort=False)
    r = ref.reindex(items).to_numpy(dtype=float)
    h = pd.to_numeric(d[label], errors="coerce").to_numpy(dtype=float)
    rank = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    count = np.bincount(codes, minlength=len(items))
    never = 1 << 40
    hit = np.where(h == r[codes], rank, never)  # rank of each decision that equals the reference
    first_hit = np.full(len(items), never, dtype=np.int64)
    np.minimum.at(first_hit, codes, hit)
    need = np.minimum(first_hit + 1, _depths(ref, depth).reindex(items).to_numpy())
    pending = count < need
    return items[~pending], items[pending]


def rule_leaves(q) -> np.ndarray:
    """Probabilities of the second-opinion rule's outcomes ("leaves", on a new last axis):
    stopped by a decision equal to the reference at the k-th decision (k = 1..D), or every one
    of the D decisions against it. ``q``: per decision position (D of them), the probability
    that that decision equals the reference (arrays of one shape, or scalars)."""
    out, run = [], 1.0
    for qi in q:
        out.append(run * qi)
        run = run * (1 - qi)
    return np.stack(out + [run], -1)


def unbiased_values(p1: np.ndarray, p0: np.ndarray, rho) -> tuple[np.ndarray, np.ndarray]:
    """The least-variance unbiased estimate of a 0/1 truth on each outcome (last axis):
    ``p1`` / ``p0`` the outcomes' probabilities given y = 1 / 0, ``rho`` the prior P(y = 1)
    (broadcast against ``p1`` with the outcome axis kept). Minimising the prior-weighted
    variance ``Σ_o w_o f_o²`` (``w = ρ p1 + (1 − ρ) p0``) subject to ``Σ p1 f = 1`` and
    ``Σ p0 f = 0`` gives ``f = (λ₁ p1 + λ₀ p0)/w`` with the 2 × 2 normal equations
    ``[m11 m10; m10 m00] λ = (1, 0)``, ``m_ab = Σ p_a p_b / w``. Returns ``(f, w)``."""
    w = np.maximum(rho * p1 + (1 - rho) * p0, 1e-300)
    m11, m10, m00 = (p1 * p1 / w).sum(-1), (p1 * p0 / w).sum(-1), (p0 * p0 / w).sum(-1)
    det = m11 * m00 - m10 * m10
    f = ((m00 / det)[..., None] * p1 - (m10 / det)[..., None] * p0) / w
    return f, w


class SequentialItems:
    """Items under the second-opinion rule (complete items only): what :class:`ItemLayout`
    keeps of their decisions, and their estimates under a model.

    An item of depth ``D`` (2, or 3 for audits of plans with ``audit_opinions = 3``) is
    decided by annotators ``j₁, j₂, …`` one after another while each decision differs from
    the reference ``r``, at most ``D`` times. Its outcomes ("leaves") are: stopped by a
    decision equal to ``r`` at the k-th decision (k = 1..D), or every one of the ``D``
    decisions against ``r``. Given the annotators ``j₁..j_D`` who decide or would decide, the
    least-variance unbiased estimate over these leaves follows from the same normal equations
    as for a fixed design. Only the annotators of the decisions made are known; the others
    are whoever takes the task next, independent of the truth (each drawn in proportion to
    the decisions' shares, ``share``, among the annotators not yet on the item; the pooled
    rates stand in where nobody else has decided). A leaf's estimate is therefore the mean of
    the assignment-specific solutions over the assignments that agree with what is known,
    weighted by their probabilities. That keeps it exactly unbiased: the probability of a
    leaf depends only on the annotators it reveals, so averaging each assignment-specific
    solution (with ``E[f | y, assignment] = y``) over the unrevealed ones leaves the mean
    unchanged. Its variance (``var``) is the noise of that estimate averaged over the
    assignments and leaves, weighted by the item's posterior of the truth.
    """

    CHUNK = 1 << 21  # items × assignments × leaves per block of arithmetic (bounds memory)

    def __init__(
        self,
        d: pd.DataFrame,
        prior: pd.Series,
        reference: pd.Series,
        share: pd.Series,
        depth: pd.Series | None = None,
        *,
        item: str,
        annotator: str,
        label: str,
    ):
        codes, items = pd.factorize(d[item], sort=False)
        self.items = items
        n = len(items)
        rank = pd.Series(codes).groupby(codes).cumcount().to_numpy()
        self.r = reference.reindex(items).to_numpy(dtype=float)
        self.depth = _depths(reference.reindex(items), depth).to_numpy()
        self.anns = pd.Index(share.index)
        self.share = share.to_numpy(dtype=float)
        d_max = int(self.depth.max(initial=2))
        h = np.full((n, d_max), np.nan)
        ann = np.full((n, d_max), -1, dtype=np.int64)
        keep = rank < d_max
        h[codes[keep], rank[keep]] = pd.to_numeric(d[label], errors="coerce").to_numpy(dtype=float)[keep]
        ann[codes[keep], rank[keep]] = self.anns.get_indexer(d[annotator].astype(str).to_numpy()[keep])
        # the leaf: stopped by the first decision equal to the reference (0-based k), else every one against (D)
        eq = (h == self.r[:, None]) & (np.arange(d_max)[None, :] < self.depth[:, None])
        self.leaf = np.where(eq.any(1), eq.argmax(1), self.depth)
        used = np.minimum(self.leaf + 1, self.depth)
        self.n_used = used
        in_use = np.arange(d_max)[None, :] < used[:, None]
        self.ann = np.where(in_use, ann, -1)
        self.h_mean = np.nansum(np.where(in_use, h, 0.0), 1) / used
        self.rho = np.clip(pd.Series(items).map(prior).fillna(0.5).to_numpy(dtype=float), 1e-4, 1 - 1e-4)
        # per depth: its items, one representative item per distinct (first annotator, reference, prior)
        # and each item's key
        self.groups = []
        for depth in np.unique(self.depth):
            rows_d = np.flatnonzero(self.depth == depth)
            keys = np.stack([self.ann[rows_d, 0].astype(float), self.r[rows_d], self.rho[rows_d]], 1)
            _, first_of, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
            self.groups.append((int(depth), rows_d, rows_d[first_of], inv.reshape(-1)))

    def _weights(self, n_ann: int, depth: int, first: np.ndarray) -> np.ndarray:
        """Per first annotator (``first``: codes), the probability of each assignment of the
        later positions: an array (len(first), C, …, C) with ``depth − 1`` axes of size
        C = annotators + 1 (the last: the pooled rates, used where nobody else is left)."""
        c = n_ann + 1
        base = np.append(self.share[:n_ann], 0.0)
        out = np.ones((len(first),))
        used = np.zeros((len(first), c), dtype=bool)  # (n, C, …, C): who is on the item, per earlier assignment
        used[np.arange(len(first)), first] = True
        for level in range(depth - 1):
            w = np.where(used, 0.0, base)
            w[..., n_ann] = 0.0
            tot = w.sum(-1, keepdims=True)
            pooled = np.zeros_like(w)
            pooled[..., n_ann] = 1.0
            w = np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), pooled)
            out = out[..., None] * w
            if level < depth - 2:
                nxt = np.eye(c, dtype=bool)
                nxt[n_ann, n_ann] = False  # the pooled stand-in may recur
                used = used[..., None, :] | nxt.reshape((1,) * (used.ndim - 1) + (c, c))
        return out

    def estimate(self, model: "ErrorModel") -> pd.DataFrame:
        n = len(self.items)
        y_tilde, var = np.zeros(n), np.zeros(n)
        a_all, b_all = model.rates(self.anns)
        a_all, b_all = np.append(a_all, model.pooled[0]), np.append(b_all, model.pooled[1])
        n_ann = len(self.anns)
        for depth, rows_d, key_rows, inv in self.groups:
            # the arithmetic runs once per distinct (first annotator, reference, prior) of the items
            k_axes = depth - 1
            size = (n_ann + 1) ** k_axes * (depth + 1)
            step = max(1, self.CHUNK // size)
            fbar, p1, p0, e1, e0 = [], [], [], [], []
            for s0 in range(0, len(key_rows), step):
                got = self._solve_keys(key_rows[s0 : s0 + step], depth, a_all, b_all, n_ann)
                for acc, x in zip((fbar, p1, p0, e1, e0), got):
                    acc.append(x)
            fbar, p1, p0, e1, e0 = (np.concatenate(x) for x in (fbar, p1, p0, e1, e0))
            # each item's own leaf at its revealed annotators (fbar is flat along the unrevealed ones)
            idx = [inv] + [np.maximum(self.ann[rows_d, i], 0) for i in range(1, depth)] + [self.leaf[rows_d]]
            y_tilde[rows_d] = fbar[tuple(idx)]
            q1, q0 = p1[tuple(idx)], p0[tuple(idx)]  # the leaf's probability depends only on revealed annotators
            rho = self.rho[rows_d]
            post = rho * q1 / np.maximum(rho * q1 + (1 - rho) * q0, 1e-300)
            var[rows_d] = post * e1[inv] + (1 - post) * e0[inv]
        return pd.DataFrame(
            {"y_tilde": y_tilde, "var": np.maximum(var, 0.0), "n": self.n_used, "h_mean": self.h_mean},
            index=pd.Index(self.items, name=self.items.name),
        )

    def _solve_keys(self, rows: np.ndarray, depth: int, a_all: np.ndarray, b_all: np.ndarray, n_ann: int):
        """For the items ``rows`` (one per distinct key): the leaf values averaged over the
        unrevealed annotators ``fbar``, the leaves' probabilities given y = 1 / 0 along every
        assignment of the later positions (``p1``, ``p0``: (n, C, …, C, leaves)), and the
        noise E[fbar² | y] − y² averaged over assignments and leaves (``e1``, ``e0``)."""
        c, k_axes = n_ann + 1, depth - 1
        r = self.r[rows]
        rho = self.rho[rows]
        first = self.ann[rows, 0]
        weights = self._weights(n_ann, depth, first)  # (n, C, …, C)
        shape = (len(rows),) + (c,) * k_axes
        rr = r.reshape((-1,) + (1,) * k_axes)

        def at_position(i: int) -> tuple[np.ndarray, np.ndarray]:
            """P(decision = r | y = 1) and P(decision = r | y = 0) of the i-th decision's annotator."""
            if i == 0:
                a, b = a_all[first].reshape(rr.shape), b_all[first].reshape(rr.shape)
            else:
                axis_shape = [1] * (1 + k_axes)
                axis_shape[i] = c
                a, b = a_all.reshape(axis_shape), b_all.reshape(axis_shape)
            return (
                np.broadcast_to(np.where(rr == 1, a, 1 - a), shape),
                np.broadcast_to(np.where(rr == 1, 1 - b, b), shape),
            )

        qs = [at_position(i) for i in range(depth)]
        p1, p0 = rule_leaves([q[0] for q in qs]), rule_leaves([q[1] for q in qs])  # (n, C, …, C, leaves)
        f, _ = unbiased_values(p1, p0, rho.reshape((-1,) + (1,) * (k_axes + 1)))
        # each leaf's value averaged over the positions it does not reveal (leaf k reveals positions
        # 2..k+1, the last leaf all of them), broadcast back over those positions
        fbar = np.empty_like(f)
        for leaf in range(depth + 1):
            hidden = tuple(range(1 + min(leaf, k_axes), 1 + k_axes))
            if hidden:
                num = (weights * f[..., leaf]).sum(axis=hidden, keepdims=True)
                den = weights.sum(axis=hidden, keepdims=True)
                fbar[..., leaf] = np.broadcast_to(num / np.where(den > 0, den, 1.0), shape)
            else:
                fbar[..., leaf] = f[..., leaf]
        axes = tuple(range(1, 1 + k_axes))
        e1 = (weights * (p1 * fbar * fbar).sum(-1)).sum(axis=axes) - 1.0
        e0 = (weights * (p0 * fbar * fbar).sum(-1)).sum(axis=axes)
        return fbar, p1, p0, e1, e0


class FixedItems:
    """Items decided a fixed number of times (at most :data:`MAX_DECISIONS` used): what
    :class:`ItemLayout` keeps of their decisions, and their estimates under a model
    (:func:`item_estimates`)."""

    def __init__(self, decisions: pd.DataFrame, prior: pd.Series, *, item: str, annotator: str, label: str):
        d = decisions.sort_values([item, annotator], kind="stable")
        codes, items = pd.factorize(d[item], sort=False)
        rank = d.groupby(codes).cumcount().to_numpy()
        keep = rank < MAX_DECISIONS
        d, codes = d[keep], codes[keep]
        self.items, self.item = items, item
        self.h = pd.to_numeric(d[label], errors="coerce").to_numpy(dtype=float)
        self.ann = d[annotator].astype(str).to_numpy()
        n_items = len(items)
        self.k = np.bincount(codes, minlength=n_items)
        self.rho = np.clip(pd.Series(items).map(prior).fillna(0.5).to_numpy(dtype=float), 1e-4, 1 - 1e-4)
        self.blocks = []
        for kk in np.unique(self.k):
            sel_items = np.flatnonzero(self.k == kk)
            self.blocks.append((kk, sel_items, np.flatnonzero(np.isin(codes, sel_items))))
        self.h_mean = np.bincount(codes, self.h, minlength=n_items) / np.maximum(self.k, 1)

    def estimate(self, model: "ErrorModel") -> pd.DataFrame:
        a, b = model.rates(self.ann)
        n_items = len(self.items)
        y_tilde, var = np.zeros(n_items), np.zeros(n_items)
        for kk, sel_items, rows in self.blocks:
            # (n_sel, kk) matrices of rates and outcomes, decisions in item order
            A = a[rows].reshape(-1, kk)
            B = b[rows].reshape(-1, kk)
            H = self.h[rows].reshape(-1, kk)
            r = self.rho[sel_items][:, None]
            pats = ((np.arange(2**kk)[:, None] >> np.arange(kk)[None, :]) & 1).astype(float)  # (P, kk)
            p1 = np.prod(np.where(pats[None] == 1, A[:, None, :], 1 - A[:, None, :]), axis=2)  # (n, P)
            p0 = np.prod(np.where(pats[None] == 1, 1 - B[:, None, :], B[:, None, :]), axis=2)
            f, w = unbiased_values(p1, p0, r)  # (n, P)
            obs = (H * (1 << np.arange(kk))[None, :]).sum(1).astype(int)
            y_tilde[sel_items] = f[np.arange(len(sel_items)), obs]
            e1 = (p1 * f * f).sum(1) - 1.0
            e0 = (p0 * f * f).sum(1)
            idx = np.arange(len(sel_items))
            post = r[:, 0] * p1[idx, obs] / w[idx, obs]  # P(y = 1 | pattern): weights the two variances
            var[sel_items] = post * e1 + (1 - post) * e0
        return pd.DataFrame(
            {"y_tilde": y_tilde, "var": np.maximum(var, 0.0), "n": self.k, "h_mean": self.h_mean},
            index=pd.Index(self.items, name=self.item),
        )


class ItemLayout:
    """The decided items of :func:`item_estimates`, prepared once from the decisions, the
    prior and the second-opinion references, so that estimates under many error models
    (the error model's bootstrap refits) cost only the rates' arithmetic."""

    def __init__(
        self,
        decisions: pd.DataFrame,
        prior: pd.Series,
        reference: pd.Series | None = None,
        *,
        depth: pd.Series | None = None,
        item: str = "iid",
        annotator: str = "annotator",
        label: str = "h",
    ):
        require_columns(decisions, [item, annotator, label], "decisions")
        seq_items, pending = second_opinion_items(decisions, reference, depth=depth, item=item, label=label)
        if len(pending):
            raise ValueError(f"{len(pending)} item(s) await their second opinion (e.g. {pending[0]!r})")
        in_seq = decisions[item].isin(seq_items).to_numpy() if len(seq_items) else np.zeros(len(decisions), bool)
        share = decisions[annotator].astype(str).value_counts().sort_index()
        self.parts = []
        if (~in_seq).any() or not in_seq.any():
            self.parts.append(FixedItems(decisions[~in_seq], prior, item=item, annotator=annotator, label=label))
        if in_seq.any():
            self.parts.append(
                SequentialItems(
                    decisions[in_seq], prior, reference, share, depth, item=item, annotator=annotator, label=label
                )
            )

    def estimate(self, model: "ErrorModel") -> pd.DataFrame:
        got = [p.estimate(model) for p in self.parts]
        return got[0] if len(got) == 1 else pd.concat(got)


def item_estimates(
    decisions: pd.DataFrame,
    model: ErrorModel,
    prior: pd.Series,
    *,
    item: str = "iid",
    annotator: str = "annotator",
    label: str = "h",
    reference: pd.Series | None = None,
    depth: pd.Series | None = None,
) -> pd.DataFrame:
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
    reference : Series, optional
        Items decided under the second-opinion rule: their reference label (indexed by
        item; NaN = a fixed number of decisions). Their decisions are read in the frame's
        order (the first is the first opinion) and estimated over the rule's outcomes
        (:func:`_sequential_estimates`); a pending item (first opinion against the
        reference, no second yet: :func:`second_opinion_items`) must not be passed.
    depth : Series, optional
        Each such item's most decisions under the rule (indexed by item; default 2): a third
        opinion where the first two both differ from the reference when it is 3.

    Returns
    -------
    DataFrame
        Indexed by item: ``y_tilde`` (the estimate), ``var`` (its conditional variance,
        weighted by the prior), ``n`` (decisions used), ``h_mean``.
    """
    return ItemLayout(decisions, prior, reference, depth=depth, item=item, annotator=annotator, label=label).estimate(
        model
    )


def debiased(
    decisions: pd.DataFrame, model: ErrorModel, *, item: str = "iid", annotator: str = "annotator", label: str = "h"
) -> pd.DataFrame:
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
    v = (p1 * a * (1 - a) + (1 - p1) * b * (1 - b)) / denom**2
    var = np.bincount(codes, v, minlength=len(items)) / n**2
    return pd.DataFrame(
        {"y_tilde": y_tilde, "var": var, "n": n.astype(int), "h_mean": np.bincount(codes, h, minlength=len(items)) / n},
        index=pd.Index(items, name=item),
    )

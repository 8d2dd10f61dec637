"""The default estimator: question-cluster difference estimator with cross-fitted predictions.

Target: the scores of *this fixed benchmark* computed from the unknown true labels ``y``
(TCPR, R^(1..3), EMCR, constraint-level pass rate; SPEC §3). Each is a sum over
instructions or eligible units of products of ``y`` over distinct instances, divided by a
count that does not depend on the labels; every such product lies inside one
(model, question) **cluster**. So a numerator is ``Σ_c φ_c(y)``.

Design (:mod:`reform_core.estimators.design`): clusters with a disagreement are Poisson
sampled with probability ``π_m``, all their disagreements adjudicated; agreements are
audited with probability ``π_a``, independently across **audit groups** (version 3 plans: a
target's agreed rows with one agreed label, audited together; earlier plans: each row alone);
human decisions — one per item, a second where the plan's rule asks for it, two on a random
share — are debiased with the fitted adjudicator-error model
(:mod:`reform_core.estimators.adjudicator_error`), giving ``ỹ_u`` with ``E[ỹ_u | y_u] = y_u``.

Estimator. Clusters are split into K folds by a hash fixed before sampling. For a cluster
``c`` of fold ``k``, predictions are fitted on the *other* folds only: ``p̂_u`` for a
disagreement (stratum pass rate, shrunk to the model × direction rate) and ``q̂_u`` for an
agreement (agreed label corrected by the stratum's audited both-wrong rate). Then

* agreements: ``Ŷ_u = q̂_u + (A_u / π_a)(ỹ_u − q̂_u)`` (``A_u`` = audited);
* ``x`` = ``p̂`` on disagreements, ``Ŷ`` on agreements; ``z`` = ``x`` with the observed
  ``ỹ`` on the disagreements of sampled clusters;
* ``T_c = φ_c(x) + (Z_c / π_m) (φ_c(z) − φ_c(x))`` and ``θ̂ = Σ_c T_c / D``.

This is the rule for TCPR (products of three rows) and the constraint-level rate (sums).

**Long products (R^(K), EMCR).** An eligible unit's Ĵ multiplies every variant of its
targets — dozens of rows. Multiplying audit-corrected values there (``Ŷ_u`` far outside
[0, 1] for a row whose audit found an error or whose two adjudicators split) makes the
estimator exactly unbiased but heavy-tailed: two corrections in one unit multiply
(``(1/π_a)²``), which happens whenever both-judges-wrong errors cluster on a target
(measured: one model's EMCR off by 41 pp with a 198-pp interval on a paper-scale
replicate). For the joint numerators agreements are therefore predicted at their agreed
label, the audit enters linearly and the higher-order terms of the expansion enter at
their predicted value, one audit group ``g`` at a time:
``φ_c(z) = φ_c(z°) + Σ_{g audited in c} G_g(z°) (∏_{u∈g} ỹ_u − ∏_{u∈g} label_u) / π_g + H_c``,
with ``z°`` = the decided disagreements and agreed labels elsewhere, ``G_g`` the product of
everything outside the group in each unit holding it (every unit holding a target holds all
its variants, so a group is inside or outside a unit as a whole: the derivative at the
group's product, :meth:`UnitIndex.gradients` on the rows with each group collapsed onto one)
and ``H_c = φ_c(z^h) − φ_c(z°) − Σ_{g} G_g(z°)(∏_g z^h − ∏_g label)`` (``z^h``: audited
agreements at their decision ``ỹ``, the others at their cross-fitted prediction ``q̂``, so
that with every agreement audited, ``π_a = 1``, the rule is ``φ_c(ỹ)`` exactly). Over the
audit the expectation is
``φ_c(z°) + Σ_g G_g (∏_g y − ∏_g label) + E[H_c]``: the first two terms are exact to first
order *across groups* — within a group every product of errors is observed, however the
errors of one target's variants are correlated — and ``H_c`` estimates the higher orders
across groups, exactly in expectation when groups err independently at the predicted rates
(multilinearity: ``E ∏(label + d) = ∏(label + E d)``). So the rule is unbiased under errors
independent across targets, and where errors of different targets cluster in one unit its
bias is only the error of the predicted cross-group terms (second order in the both-wrong
rate), never a multiplicative blow-up. Audited row by row (version 1–2 plans) the same
expansion runs over single rows, and correlated errors of one target's variants are left to
the prediction: on the simulator that left R3 about −0.2 to −0.3 pp low, and an exact
enumeration (``tests/unit/test_estimator_cluster.py``) shows the miss that auditing by target
removes.
The rule's expectation computed on paper-scale simulator projects (every disagreement
decided, the pooled true both-wrong rate as prediction) misses the true EMCR by −0.16 to
−0.25 pp and R3 by up to −0.47 pp without ``H_c``, by −0.02 to −0.07 pp and ≤ 0.17 pp with it.

**Unbiasedness.** Given the fold split, the predictions used for cluster c depend only on
other clusters' indicators and decisions, which are independent of c's own cluster
indicator ``Z_c``, audit indicators and decision errors (Poisson sampling, independent
errors). Within c, ``φ_c`` is multilinear in distinct instances, so conditionally on the
other folds ``E[φ_c(z) | Z_c = 1] = φ_c(y)`` and ``E[T_c] = E[φ_c(x)] + E[φ_c(y) − φ_c(x)]
= φ_c(y)`` — exactly, for any correlation between a question's variants and any
prediction quality; the audit term makes ``E[Ŷ_u] = y_u`` for agreements, so both judges
being wrong together is corrected too (the joint numerators: see "Long products"). With fallible adjudicators the rates are
estimated, which leaves a bias of the order of their sampling variance (second order).
(Cross-fitting: Zrnic & Candès 2024, *PNAS* 121:e2322083121; prediction-powered /
difference estimation: Angelopoulos et al. 2023, *Science* 382:669; Särndal, Swensson &
Wretman 1992, §6.3.)

**Measurement variance** (the score of this fixed benchmark) is estimated by
linearisation, one term per source:

* cluster sample: ``Σ_{c∈S} [(1−π)/π² C_c² + N_c/π]`` with ``C_c`` the cluster's
  rectifier ``φ_c(z) − φ_c(x)`` in metric units and ``N_c`` its decision-noise variance
  (Poisson-sampling variance estimator, Särndal et al. eq. 3.5.?; the ``N_c`` term adds
  the second-stage variance that ``C_c²`` does not carry on average);
* agreement audit: ``Σ_{g audited} (1−π_g)/π_g² C_g² + Σ_{u audited} G_u² v_u/π_a`` with
  ``C_g`` the group's correction in metric units (TCPR and the constraint level: the sum of
  ``G_u (ỹ_u − q̂_u)`` over its rows, ``G_u`` the metric's exact derivative — the metrics are
  multilinear: :meth:`UnitIndex.gradients`; R^(K) and EMCR: ``G_g`` times the change of the
  group's product) and ``v_u`` a decision's noise variance;
* adjudicator-error rates: the variance of ``Σ_u G'_u ỹ*_u`` over bootstrap refits of the
  error model on resampled decided items.

The audit's part is then stabilised: the mean of its direct estimate and a prediction pooled
over the models scored together (:func:`audit_composite`: a direct estimate built on a few rare
events moves with the estimate itself and left one-sided misses), never below the rate-based
floor (:func:`_audit_floor`).

The interval is ``θ̂ ± t_{0.975, df} √V`` with ``df`` = observed clusters − 1 (a t quantile
for small samples). The cross-fitted residuals never vanish for a stratum whose reviewed
rate is 0 % or 100 %: its prediction is a smoothed rate strictly inside (0, 1) fitted on
other folds, so such strata still contribute variance.

**Population variance** adds question resampling: a cluster bootstrap over questions of
the per-cluster totals ``T_c`` (question weights shared by all models), which carries both
the between-question variation and the design noise inside ``T_c``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.design import (DEFAULT_FOLDS, audit_groups, audit_row_probabilities, audited_rows,
                                          cluster_probability, fold_of, opinion_depth, sampled_clusters,
                                          second_opinion_reference)
from reform_core.frames import INSTANCE_KEY, require_columns
from reform_core.metrics.reform import (KS, UnitIndex, build_index, fingerprint, same_as_snapshot, snapshot,
                                        sorted_slots)

NUMERATORS = ("rows", "allpass", "joint1", "joint2", "joint3")
JOINT = ("joint1", "joint2", "joint3")
JOINT_METRICS = ("emcr", "r1", "r2", "r3")
DENOMINATORS = {"rows": "n_rows", "allpass": "n_inst", "joint1": "units1", "joint2": "units2", "joint3": "units3"}
METRICS = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
SHRINK = 2.0  # pseudo-decisions pulling a stratum rate to its model × direction rate
AUDIT_PRIOR = (0.01, 1.0)  # prior both-wrong rate and pseudo-decisions of the audit predictor
AUDIT_SHRINK = 20.0  # pseudo-decisions pulling a context bin's both-wrong rate to its stratum's
ERROR_BOOT = 100  # bootstrap refits of the adjudicator-error model
BOOT_CHUNK = 256  # population-bootstrap replicates whose question weights are held at once
BOOT_TOL = 1e-6  # EM stopping rule of a refit (it starts at the full-data fit; 1e-6 of a rate is far below its se)


@dataclass
class ClusterEstimate:
    """Result of :func:`estimate`.

    ``table``: one row per model with each metric (%), its measurement standard error
    ``se_<metric>`` and interval ``<metric>_lo / _hi``; ``components``: variance by source
    per model and metric (``sampling``, ``audit``, ``adjudicator_error``; %²; ``audit_direct``:
    the audit's design-based estimate before :func:`audit_composite` and the floor, kept for
    diagnostics, not part of the total); ``totals`` /
    ``denominators``: per numerator, arrays (n_models, n_questions) of ``T_c`` and counts
    for the population bootstrap; ``both_wrong``: per model the audited both-wrong rate
    with its interval; ``error_model``: the fitted adjudicator error; ``progress``: per
    model planned and observed clusters and audits; ``notes``: what was assumed or left out.
    """

    models: np.ndarray
    questions: np.ndarray
    tasks_of_question: np.ndarray
    table: pd.DataFrame
    components: pd.DataFrame
    totals: dict
    denominators: dict
    error_variance: dict
    both_wrong: pd.DataFrame
    error_model: ae.ErrorModel
    progress: pd.DataFrame
    df: np.ndarray
    notes: list = field(default_factory=list)
    smooth: np.ndarray | None = None  # point estimate of each scored row's truth (for plug-in tables)
    index: UnitIndex | None = None
    floor_variance: dict | None = None  # per metric, per model: what the audit's composite and floor add beyond the T_c spread
    # ``index.evaluate(clip(smooth, 0, 1))`` (per-instruction all-pass, per-unit Ĵ and Ŵ): what the
    # plug-in tables evaluate, from the evaluation of the predictions patched on the observed clusters
    smooth_evaluation: tuple | None = None


def _coefficients(den: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Per metric: weight of each numerator (per model), so metric = Σ_num w·numerator (in %)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = {k: np.where(v > 0, 100.0 / np.where(v > 0, v, 1.0), np.nan) for k, v in den.items()}
    zero = np.zeros_like(inv["allpass"])
    out = {"tcpr": {"allpass": inv["allpass"]}, "constraint_level": {"rows": inv["rows"]}}
    for k in KS:
        out[f"r{k}"] = {f"joint{k}": inv[f"joint{k}"]}
    out["emcr"] = {f"joint{k}": inv[f"joint{k}"] / 3 for k in KS}
    for m in out:
        for num in NUMERATORS:
            out[m].setdefault(num, zero)
    return out


def _cluster_sums(index: UnitIndex, pv: np.ndarray, row_cluster: np.ndarray, n_clusters: int,
                  evaluated: tuple | None = None) -> dict[str, np.ndarray]:
    """Per-cluster numerator sums of ``pv``; ``evaluated``: ``index.evaluate(pv)`` where the
    caller has it already."""
    allpass, joint, _ = evaluated if evaluated is not None else index.evaluate(pv)
    nq = len(index.questions)
    inst_c = index.inst_model * nq + index.inst_question
    unit_c = index.unit_model * nq + index.unit_question
    out = {"rows": np.bincount(row_cluster, pv, minlength=n_clusters),
           "allpass": np.bincount(inst_c, allpass, minlength=n_clusters)}
    for k in KS:
        sel = index.unit_k == k
        out[f"joint{k}"] = np.bincount(unit_c[sel], joint[sel], minlength=n_clusters)
    return out


def _cluster_counts(index: UnitIndex, row_cluster: np.ndarray, n_clusters: int) -> dict[str, np.ndarray]:
    nq = len(index.questions)
    out = {"n_rows": np.bincount(row_cluster, minlength=n_clusters).astype(float),
           "n_inst": np.bincount(index.inst_model * nq + index.inst_question, minlength=n_clusters).astype(float)}
    unit_c = index.unit_model * nq + index.unit_question
    for k in KS:
        out[f"units{k}"] = np.bincount(unit_c[index.unit_k == k], minlength=n_clusters).astype(float)
    return out


def _metric_gradient(grads: dict[str, np.ndarray], coef: dict[str, np.ndarray], row_model: np.ndarray) -> np.ndarray:
    g = np.zeros(len(row_model))
    for num in NUMERATORS:
        w = coef[num][row_model]
        g += np.nan_to_num(w) * grads[num]
    return g


def _column_codes(rows: pd.DataFrame, columns) -> np.ndarray:
    """One dense int code per distinct combination of ``columns`` (factorised column by
    column: no per-row string is built)."""
    combined = np.zeros(len(rows), dtype=np.int64)
    for c in columns:
        codes, uniq = pd.factorize(rows[c].astype(str))
        combined = combined * (len(uniq) + 1) + codes
    return np.unique(combined, return_inverse=True)[1].reshape(-1)


def target_context(rows: pd.DataFrame, pv: np.ndarray) -> np.ndarray:
    """Context bin of each row: how the judges label the *other* variants of its target.

    A target (model, question, feature, mode) recurs across a question's variants and a
    model's passes on it are correlated (SPEC §3), so the judges' labels on the other
    variants predict a row's truth. Bin 0: the target occurs once; 1: the other variants'
    mean judge label is below ½; 2: at least ½.
    """
    codes = _column_codes(rows, ("model", "question", "feature", "mode"))
    tot = np.bincount(codes, pv)[codes]
    cnt = np.bincount(codes)[codes]
    with np.errstate(invalid="ignore", divide="ignore"):
        others = (tot - pv) / (cnt - 1)
    return np.where(cnt <= 1, 0, np.where(others < 0.5, 1, 2))


def _disagreement_predictions(fold: np.ndarray, folds: int, *, dis_of_fold: list, obs_dis_rows: np.ndarray,
                              y: np.ndarray, d_stratum: np.ndarray, d_parent: np.ndarray,
                              stratum_parent: np.ndarray) -> np.ndarray:
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


class _Groups:
    """The audit groups among some rows (``code``: each row's group, -1 for a row in none):
    sums and products per group, and a group's rows collapsed onto its first row."""

    def __init__(self, code: np.ndarray):
        self.code = np.asarray(code)
        in_g = np.flatnonzero(self.code >= 0)
        self.order = in_g[np.argsort(self.code[in_g], kind="stable")]
        c = self.code[self.order]
        self.starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if len(c) else np.zeros(0, dtype=np.int64)
        self.rep = self.order[self.starts]  # each group's first row
        sizes = np.diff(np.r_[self.starts, len(self.order)])
        self.rep_of = np.full(len(self.code), -1, dtype=np.int64)  # each row's group's first row
        self.rep_of[self.order] = np.repeat(self.rep, sizes)

    def product(self, v: np.ndarray) -> np.ndarray:
        return np.multiply.reduceat(v[self.order], self.starts) if len(self.order) else np.zeros(0)

    def total(self, v: np.ndarray) -> np.ndarray:
        return np.add.reduceat(v[self.order], self.starts) if len(self.order) else np.zeros(0)

    def collapse(self, v: np.ndarray) -> np.ndarray:
        """``v`` with each group's product at its first row and 1 at its other rows (every unit
        holding a group holds all its rows, so the units' products are unchanged)."""
        out = np.array(v, dtype=float, copy=True)
        if len(self.order):
            out[self.order] = 1.0
            out[self.rep] = self.product(v)
        return out

    def leave_one_out(self, v: np.ndarray) -> np.ndarray:
        """Per row in a group, the product of its group's other rows (0 outside groups)."""
        from reform_core.metrics.reform import _leave_one_out

        return _leave_one_out(np.asarray(v, dtype=float), self.order, self.starts, len(self.code))


def _rows_of_items(d: "_Design", ids) -> np.ndarray:
    """The row positions of decided items (each one a row that needs a decision)."""
    slot = sorted_slots(d.need_iid, np.asarray(ids, dtype=np.int64))
    if (slot < 0).any():
        raise RuntimeError("a decided item is not a row of the design (internal error)")
    return d.need_pos[slot]


def _hajek_codes(codes: np.ndarray, values: np.ndarray, weights: np.ndarray, n_codes: int, *, prior: np.ndarray,
                 strength: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
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
class _Design:
    """What :func:`estimate` derives from the rows, their labels, the plan's parameters and
    tasks alone — not from the decisions (kept with the index: :func:`_design`)."""

    n: int
    nm: int
    nq: int
    n_clusters: int
    c_model: np.ndarray
    row_cluster: np.ndarray
    has_dis: np.ndarray
    c_exists: np.ndarray
    pi_c: np.ndarray
    sampled_c: np.ndarray
    pi_a_row: np.ndarray
    audit_sel: np.ndarray
    need: np.ndarray
    has_task: np.ndarray
    folds: int
    fold: np.ndarray
    d_stratum: np.ndarray
    d_parent: np.ndarray
    stratum_parent: np.ndarray
    a_stratum_code: np.ndarray  # model × agreed label of an agreement, -1 on disagreements
    a_names: np.ndarray  # its name per code (``model|agree<label>``)
    a_ctx_code: np.ndarray  # audit stratum × context bin, -1 on disagreements
    ctx_stratum: np.ndarray  # the audit stratum of each a_ctx code
    agreement_sizes: list  # per model: agreements per audit stratum (Series by name)
    counts: dict
    coef: dict
    notes: list
    # the rows that need a decision (sampled disagreements, drawn audits): their iids sorted and
    # their row positions in that order, to find the decided ones by binary search
    need_iid: np.ndarray
    need_pos: np.ndarray
    dis_of_fold: list  # per fold: positions of its disagreement rows
    agree_of_fold: list  # per fold: positions of its agreement rows
    agree_ctx_of_fold: list  # per fold: those rows' audit context codes (``a_ctx_code``)
    agree_label_of_fold: list  # per fold: those rows' agreed label (int8 where labels are 0 / 1)
    dis_per_model: np.ndarray
    audits_per_model: np.ndarray  # audits planned
    # the second-opinion rule's reference label of each row that needs a decision (``need_iid`` order;
    # NaN: a fixed number of decisions): design.second_opinion_reference
    need_reference: np.ndarray | None = None
    # the rule's most decisions of each such row (design.opinion_depth; ``need_iid`` order)
    need_depth: np.ndarray | None = None
    # plans that audit by target: each agreement's audit group (design.audit_groups) as a code, -1 on
    # disagreements; None: rows are audited one by one
    a_group: np.ndarray | None = None

    @property
    def row_model(self) -> np.ndarray:
        return self.row_cluster // self.nq


def _design(instances: pd.DataFrame, tasks: pd.DataFrame, params: dict, index: UnitIndex, judge_a: str,
            judge_b: str, realised: dict | None, g: np.ndarray, m: np.ndarray, iid: np.ndarray) -> _Design:
    """The decision-independent part of :func:`estimate`. Kept in ``index.memo`` (one entry,
    keyed by the labels, the parameters and the tasks), so a caller that scores the same rows
    again after new decisions (the Scores page) reuses it."""
    import json

    task_iid = np.sort(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64))
    key = None
    if realised is None:
        key = ("cluster-design", judge_a, judge_b, json.dumps(params, sort_keys=True, default=str),
               fingerprint(task_iid))
        hit = index.memo.get("cluster-design")
        if hit is not None and hit[0] == key and same_as_snapshot(hit[1], g, m, iid):
            return hit[2]
    rows = instances.iloc[index.row_pos]
    n = len(rows)
    dis, agree = g != m, g == m
    nm, nq = len(index.models), len(index.questions)
    row_model = pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy())
    row_q = pd.Index(index.questions).get_indexer(rows["question"].astype(str).to_numpy())
    row_cluster = row_model * nq + row_q
    n_clusters = nm * nq
    c_model = np.arange(n_clusters) // nq
    has_dis = np.bincount(row_cluster[dis], minlength=n_clusters) > 0
    c_exists = np.bincount(row_cluster, minlength=n_clusters) > 0
    c_models = index.models[c_model]
    c_questions = index.questions[np.arange(n_clusters) % nq]
    pi_c = np.where(c_exists, cluster_probability(params, c_models, has_dis), 0.0)
    if realised is None:
        sampled_c = c_exists & sampled_clusters(params, c_models, c_questions, has_dis)
    else:
        picked = set(map(tuple, realised.get("clusters", [])))
        sampled_c = c_exists & np.array([(str(a), str(b)) in picked for a, b in zip(c_models, c_questions)], dtype=bool)
    pi_a_row = audit_row_probabilities(params, index, rows, g, m)
    a_group = None
    if params.get("audit_unit") == "target":
        groups = audit_groups(index.models[row_model], index.questions[row_q], rows["feature"], rows["mode"],
                              np.where(agree, g, 0.0))
        a_group = np.where(agree, groups[0], -1).astype(np.int32)
    drawn = (audited_rows(params, iid, index.models[row_model], pi_a_row, groups if a_group is not None else None)
             if realised is None else pd.Index(iid).isin(list(realised.get("audits", []))))
    audit_sel = agree & sampled_c[row_cluster] & drawn
    need = (dis & sampled_c[row_cluster]) | audit_sel
    notes = []
    planned = pd.Index(iid).isin(pd.Index(task_iid))
    if (need & ~planned).any():
        notes.append(f"{int((need & ~planned).sum())} instance(s) of sampled questions have no task (judgments changed "
                     "after the plan was made?); those questions count as not yet adjudicated")
    has_task = np.bincount(row_cluster[need], minlength=n_clusters) > 0
    folds = int(params.get("folds", DEFAULT_FOLDS))
    # a cluster's fold depends on its key alone: computed per cluster, not per row
    fold = fold_of(c_models, c_questions, seed=int(params.get("seed", 0)), folds=folds)[row_cluster]
    ctx = target_context(rows, (g + m) / 2)
    cat = pd.factorize(rows["category"].astype(str))[0]
    mode = pd.factorize(rows["mode"].astype(str))[0]
    direction = (g == 1).astype(np.int64)
    d_parent = np.unique((row_model * 2 + direction) * 3 + ctx, return_inverse=True)[1].reshape(-1)
    n_cat, n_mode = int(cat.max(initial=-1)) + 2, int(mode.max(initial=-1)) + 2
    d_code, d_stratum = np.unique((d_parent * n_cat + cat) * n_mode + mode, return_inverse=True)
    d_stratum = d_stratum.reshape(-1)
    stratum_parent = np.zeros(len(d_code), dtype=np.int64)
    stratum_parent[d_stratum] = d_parent
    lab = np.nan_to_num(g).astype(np.int64)
    a_stratum_code = np.where(agree, row_model * 2 + lab, -1)
    a_names = np.array([f"{mm}|agree{k}" for mm in index.models for k in (0, 1)], dtype=object)
    a_ctx_code = np.where(agree, a_stratum_code * 3 + ctx, -1)
    ctx_stratum = np.arange(2 * nm * 3) // 3
    sizes = []
    for mi in range(nm):
        c = np.bincount(a_stratum_code[agree & (row_model == mi)] - 2 * mi, minlength=2)
        order = np.argsort(-c, kind="stable")
        sizes.append(pd.Series(c[order], index=a_names[2 * mi + order])[lambda s: s > 0])
    counts = _cluster_counts(index, row_cluster, n_clusters)
    den_m = {num: counts[DENOMINATORS[num]].reshape(nm, nq).sum(axis=1) for num in NUMERATORS}
    i32 = np.int32  # row-length codes kept with the index: half the memory of int64
    need_pos = np.flatnonzero(need)
    order = np.argsort(iid[need_pos], kind="stable")
    need_pos, need_iid = need_pos[order], iid[need_pos][order]
    if len(need_iid) > 1 and bool((need_iid[1:] == need_iid[:-1]).any()):
        raise ValueError("duplicate instance ids among the scored rows (each row must be one instance)")
    fold8 = fold.astype(np.int8)
    dis_of_fold = [np.flatnonzero(dis & (fold8 == k)).astype(i32) for k in range(folds)]
    agree_of_fold = [np.flatnonzero(agree & (fold8 == k)).astype(i32) for k in range(folds)]
    a_ctx32 = a_ctx_code.astype(i32)
    binary = bool(np.isin(g[agree], (0.0, 1.0)).all())
    agree_label_of_fold = [g[rows].astype(np.int8) if binary else g[rows] for rows in agree_of_fold]
    need_kind = np.where(agree[need_pos], "audit", "disagreement")
    out = _Design(n=n, nm=nm, nq=nq, n_clusters=n_clusters, c_model=c_model, row_cluster=row_cluster.astype(i32),
                  has_dis=has_dis, c_exists=c_exists, pi_c=pi_c, sampled_c=sampled_c, pi_a_row=pi_a_row,
                  audit_sel=audit_sel, need=need, has_task=has_task, folds=folds, fold=fold8,
                  d_stratum=d_stratum.astype(i32), d_parent=d_parent.astype(i32), stratum_parent=stratum_parent,
                  a_stratum_code=a_stratum_code.astype(i32), a_names=a_names, a_ctx_code=a_ctx32,
                  ctx_stratum=ctx_stratum, agreement_sizes=sizes, counts=counts, coef=_coefficients(den_m), notes=notes,
                  need_iid=need_iid, need_pos=need_pos.astype(i32), dis_of_fold=dis_of_fold, agree_of_fold=agree_of_fold,
                  agree_ctx_of_fold=[a_ctx32[rows] for rows in agree_of_fold], agree_label_of_fold=agree_label_of_fold,
                  dis_per_model=np.bincount(row_model[dis], minlength=nm),
                  audits_per_model=np.bincount(row_model[audit_sel], minlength=nm),
                  need_reference=second_opinion_reference(params, need_iid, need_kind, g[need_pos]),
                  need_depth=opinion_depth(params, need_kind), a_group=a_group)
    if key is not None:
        index.memo["cluster-design"] = (key, snapshot(g, m, iid), out)
    return out


def _observed_index(index: UnitIndex, observed_c: np.ndarray) -> tuple[UnitIndex, np.ndarray, np.ndarray, np.ndarray]:
    """``index.restrict(observed_c)`` and the positions in ``index`` of the instructions and units
    it keeps (in its order), kept in ``index.memo`` for the same observed clusters (a new decision
    seldom completes a cluster: the Scores page's rescoring reuses it)."""
    hit = index.memo.get("cluster-observed")
    if hit is not None and np.array_equal(hit[0], observed_c):
        return hit[1]
    sub, rs = index.restrict(observed_c)
    nq = len(index.questions)
    kept_i = np.flatnonzero(observed_c[index.inst_model * nq + index.inst_question])
    kept_u = np.flatnonzero(observed_c[index.unit_model * nq + index.unit_question])
    out = (sub, rs, kept_i, kept_u)
    index.memo["cluster-observed"] = (observed_c.copy(), out)
    return out


def _wrong_rates(keys: np.ndarray, wrong: np.ndarray, weight: np.ndarray, noise: np.ndarray) -> pd.DataFrame:
    """Both-wrong rate per audit stratum with its variance.

    ``rate`` = Hájek mean of the audited agreements' debiased "wrong" indicators
    (``1 − ỹ`` on an agreed pass, ``ỹ`` on an agreed fail; weights 1/π, equal within a
    stratum by design); ``var`` = its linearised
    variance plus the decisions' noise, at least the Bernoulli variance of the
    Jeffreys-smoothed rate ``(k + ½)/(n + 1)`` over ``n`` (k = audited agreements that the
    majority of their decisions judged wrong): a stratum audited with no error found still
    reports the uncertainty that ``n`` clean audits leave, never zero.
    """
    df = pd.DataFrame({"s": keys, "w": wrong, "wt": weight, "v": noise})
    rows = []
    for s_, d in df.groupby("s", sort=True):
        n = len(d)
        wt = d["wt"].to_numpy() / d["wt"].sum()
        r = float(np.sum(wt * d["w"].to_numpy()))
        v_design = float(np.sum(wt ** 2 * (d["w"].to_numpy() - r) ** 2)) * n / max(n - 1, 1)
        k = int((d["w"].to_numpy() > 0.5).sum())
        jeff = (k + 0.5) / (n + 1.0)
        var = max(v_design, jeff * (1 - jeff) / n) + float(np.sum(wt ** 2 * d["v"].to_numpy()))
        rows.append({"stratum": s_, "rate": r, "var": var, "n": n, "k": k})
    return pd.DataFrame(rows, columns=["stratum", "rate", "var", "n", "k"]).set_index("stratum")


def _question_task(index: UnitIndex) -> np.ndarray:
    task = np.zeros(len(index.questions), dtype=np.int64)
    task[index.inst_question] = index.inst_task
    return task


def _error_bootstrap(dec: pd.DataFrame, model: ae.ErrorModel, layout: ae.ItemLayout, reps: int,
                     rng: np.random.Generator) -> pd.DataFrame:
    """Item estimates of every decided item under error models refitted on items
    resampled with replacement (with all their decisions); (n_items, reps)."""
    item_code, items = pd.factorize(dec[INSTANCE_KEY])
    ann_code, anns = pd.factorize(dec["annotator"].astype(str))
    g_item = pd.Series(dec["group"].astype(str).to_numpy()).groupby(item_code).first()
    g_code, groups = pd.factorize(g_item.to_numpy())
    h = dec["h"].to_numpy(dtype=float)
    order = np.argsort(item_code, kind="stable")
    starts = np.searchsorted(item_code[order], np.arange(len(items)))
    sizes = np.bincount(item_code, minlength=len(items))
    base_a, base_b = model.rates(anns)
    out = np.empty((len(items), reps))
    for b in range(reps):
        pick = rng.integers(0, len(items), len(items))
        n_rows = sizes[pick]
        within = np.arange(n_rows.sum()) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
        rows = order[np.repeat(starts[pick], n_rows) + within]
        new_item = np.repeat(np.arange(len(pick)), n_rows)
        a, bb, pooled, _ = ae.fit_arrays(h[rows], new_item, ann_code[rows], g_code[pick], len(anns), len(groups),
                                         start=(base_a, base_b, model.pooled), tol=BOOT_TOL)
        seen = np.bincount(ann_code[rows], minlength=len(anns)) > 0  # absent annotators keep the full-data rates
        refit = ae.ErrorModel(pd.Series(np.where(seen, a, base_a), index=anns), pd.Series(np.where(seen, bb, base_b), index=anns),
                              pooled, model.prevalence, True, model.n_decisions, model.n_double)
        try:
            out[:, b] = layout.estimate(refit)["y_tilde"].reindex(items).to_numpy()
        except (ValueError, FloatingPointError):
            out[:, b] = np.nan
    return pd.DataFrame(out, index=pd.Index(items, name=INSTANCE_KEY))


def estimate(instances: pd.DataFrame, tasks: pd.DataFrame, decisions: pd.DataFrame, params: dict, *,
             judge_a: str = "label_a", judge_b: str = "label_b", condition: str | None = "main",
             error_model: ae.ErrorModel | None = None, error_boot: int = ERROR_BOOT,
             rng: np.random.Generator | None = None, index: UnitIndex | None = None,
             level: float = 0.95, realised: dict | None = None) -> ClusterEstimate:
    """Estimate the fixed benchmark's scores and their measurement variance (module docstring).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame (frames.py) with the two judges' label columns; instructions with a
        missing label must already be excluded (the caller's missing-data rule).
    tasks : DataFrame
        The plan's tasks (``iid`` at least; :func:`reform_core.estimators.design.draw`).
    decisions : DataFrame
        Every human decision on those tasks: ``iid, annotator, h`` (h = the truth the
        annotator reported, 0/1).
    params : dict
        The design (:func:`reform_core.estimators.design.design_params`).
    error_model : ErrorModel, optional
        Adjudicator error rates; default: fitted on ``decisions`` when some item was
        decided twice, else infallible adjudicators (with a note).
    error_boot : int
        Bootstrap refits of the error model for its variance term (0: none).
    rng : numpy.random.Generator, optional
        For the error-model bootstrap.
    level : float
        Level of the measurement intervals.
    realised : dict, optional
        The realised draws instead of the plan's hashed ones: ``clusters`` — (model,
        question) pairs in the first-stage sample — and ``audits`` — audited iids (used
        to check the estimator against an exact enumeration of the design).

    Returns
    -------
    ClusterEstimate
    """
    rng = np.random.default_rng(0) if rng is None else rng
    require_columns(tasks, [INSTANCE_KEY], "tasks")
    require_columns(decisions, [INSTANCE_KEY, "annotator", "h"], "decisions")
    index = index if index is not None else build_index(instances, condition=condition)
    require_columns(instances, [judge_a, judge_b, INSTANCE_KEY], "instances")
    g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(dtype=float)[index.row_pos]
    m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(dtype=float)[index.row_pos]
    if np.isnan(g).any() or np.isnan(m).any():
        raise ValueError("every scored row needs both judges' labels (exclude unlabelled instructions first)")
    iid = instances[INSTANCE_KEY].to_numpy(dtype=np.int64)[index.row_pos]
    d = _design(instances, tasks, params, index, judge_a, judge_b, realised, g, m, iid)
    notes: list[str] = list(d.notes)
    n, dis, agree = d.n, g != m, g == m
    nm, nq, n_clusters, c_model, row_model, row_cluster = d.nm, d.nq, d.n_clusters, d.c_model, d.row_model, d.row_cluster
    has_dis, c_exists, pi_c, sampled_c, pi_a_row = d.has_dis, d.c_exists, d.pi_c, d.sampled_c, d.pi_a_row
    audit_sel, has_task, a_code = d.audit_sel, d.has_task, d.a_stratum_code

    # --- the design as realised so far (decisions count on the rows that need one: found by binary search)
    slot = sorted_slots(d.need_iid, decisions[INSTANCE_KEY].to_numpy(dtype=np.int64))
    decided_need = np.zeros(len(d.need_pos), dtype=bool)
    decided_need[slot[slot >= 0]] = True
    reference = depth = None
    if d.need_reference is not None and np.isfinite(d.need_reference).any():
        # an item whose opinions so far all went against its reference is decided once the rule's next is in
        reference = pd.Series(d.need_reference, index=d.need_iid)
        depth = pd.Series(d.need_depth, index=d.need_iid) if d.need_depth is not None else None
        _, pending = ae.second_opinion_items(decisions[slot >= 0], reference, depth=depth)
        decided_need[sorted_slots(d.need_iid, pending.to_numpy(dtype=np.int64))] = False
        n_pending = len(pending)
        if n_pending:
            notes.append(f"{n_pending} item(s) await another opinion (the decisions so far went against the plan's "
                         "reference: both judges wrong on an audit, judge B on a disagreement); their questions count "
                         "as not yet adjudicated")
    missing = np.bincount(row_cluster[d.need_pos[~decided_need]], minlength=n_clusters) > 0
    observed_c = sampled_c & ~missing
    # interim: a random subset of the clusters with tasks is complete (queue in random cluster order)
    done_share = np.ones(n_clusters)
    for mi in range(nm):
        for kind_ in (True, False):
            grp = (c_model == mi) & (has_dis == kind_) & sampled_c & has_task
            if grp.any():
                done_share[grp] = (observed_c & grp).sum() / grp.sum()
    pi_eff = pi_c * done_share
    inv_pi = np.where(observed_c & (pi_eff > 0), 1.0 / np.where(pi_eff > 0, pi_eff, 1.0), 0.0)
    obs_row = observed_c[row_cluster]
    obs_dis = dis & obs_row
    audited = audit_sel & obs_row
    n_sampled = np.bincount(c_model, sampled_c, minlength=nm).astype(int)
    n_observed = np.bincount(c_model, observed_c, minlength=nm).astype(int)
    audited_rows, obs_dis_rows = np.flatnonzero(audited), np.flatnonzero(obs_dis)
    audited_m = np.bincount(row_model[audited_rows], minlength=nm)
    for mi, mm in enumerate(index.models):
        if not audited_m[mi]:
            notes.append(f"{mm}: no audited agreement decided yet — both-judges-wrong errors are not corrected")
        if not (observed_c & has_dis & (c_model == mi)).any() and d.dis_per_model[mi]:
            notes.append(f"{mm}: no fully adjudicated question yet — its disagreements are predicted, not measured")

    # --- decisions → error model → classical debiased labels (used to fit the predictions)
    dec_pos = np.where(slot >= 0, d.need_pos[np.maximum(slot, 0)], -1)  # each decision's row (-1: none)
    used = dec_pos >= 0
    used[used] = (obs_dis | audited)[dec_pos[used]]
    dec = decisions[used].copy()
    pos = dec_pos[used]
    dec["group"] = np.where(dis[pos], np.where(g[pos] == 1, "A1B0", "A0B1"), np.where(g[pos] == 1, "agree1", "agree0"))
    if error_model is None:
        error_model = ae.fit(dec) if len(dec) else ae.perfect()
        if not error_model.identified:
            error_model = ae.perfect(dec["annotator"].astype(str).unique())
            if len(dec):
                notes.append("no item was decided twice: adjudicator error cannot be estimated and is assumed zero")
    y0 = np.full(n, np.nan)
    item_ref = reference.reindex(dec[INSTANCE_KEY].unique()) if reference is not None and len(dec) else None
    item_depth = depth.reindex(item_ref.index) if depth is not None and item_ref is not None else None
    if len(dec):
        if item_ref is not None and item_ref.notna().any():
            # items of the second-opinion rule: unbiased over the rule's outcomes (a flat prior)
            in_seq = dec[INSTANCE_KEY].isin(item_ref.dropna().index).to_numpy()
            deb = ae.debiased(dec[~in_seq], error_model)["y_tilde"] if (~in_seq).any() else pd.Series(dtype=float)
            seq = ae.item_estimates(dec[in_seq], error_model, pd.Series(dtype=float), reference=item_ref,
                                    depth=item_depth)["y_tilde"]
            deb = pd.concat([deb, seq])
        else:
            deb = ae.debiased(dec, error_model)["y_tilde"]
        y0[_rows_of_items(d, deb.index)] = deb.to_numpy(dtype=float)

    # --- cross-fitted predictions: p̂ for disagreements, q̂ for agreements
    folds, fold = d.folds, d.fold
    p_hat = _disagreement_predictions(fold, folds, dis_of_fold=d.dis_of_fold, obs_dis_rows=obs_dis_rows, y=y0,
                                      d_stratum=d.d_stratum,
                                      d_parent=d.d_parent, stratum_parent=d.stratum_parent)
    ad = audited_rows
    w_ad = inv_pi[row_cluster[ad]] / np.maximum(pi_a_row[ad], 1e-12)  # 1/(π_c π_A): Hájek weights of the audit
    wrong_ad = np.where(g[ad] == 1, 1 - y0[ad], y0[ad])  # linear in ỹ, so unbiased
    fold_ad, s_ad, c_ad = fold[ad], d.a_stratum_code[ad], d.a_ctx_code[ad]
    q_hat = np.full(n, np.nan)
    base = AUDIT_PRIOR[0] if (pi_a_row > 0).any() else 0.0
    n_s, n_c = 2 * nm, len(d.ctx_stratum)  # every (model, agreed label) and its 3 context bins, present or not
    for k in range(folds):
        t = fold_ad != k
        r_s, seen_s = _hajek_codes(s_ad[t], wrong_ad[t], w_ad[t], n_s, prior=np.full(n_s, base))
        r_c, seen_c = _hajek_codes(c_ad[t], wrong_ad[t], w_ad[t], n_c, prior=r_s[d.ctx_stratum],
                                   strength=AUDIT_SHRINK)
        # each context code's rate (its audit stratum's where the context has none, else the prior),
        # then gathered for the fold's agreements
        code_s = np.arange(len(r_c)) // 3
        rate = np.clip(np.where(seen_c, r_c, np.where(seen_s[code_s], r_s[code_s], base)), 0.0, 0.5)
        rs, gs = rate[d.agree_ctx_of_fold[k]], d.agree_label_of_fold[k]
        q_hat[d.agree_of_fold[k]] = gs * (1 - rs) + (1 - gs) * rs
    x = np.where(dis, p_hat, q_hat)

    # --- each decided item's minimum-variance unbiased estimate, its prediction as prior
    item_rows = np.unique(pos)
    prior = pd.Series(x[item_rows], index=iid[item_rows])
    layout = ae.ItemLayout(dec, prior, item_ref, depth=item_depth) if len(dec) else None
    items = layout.estimate(error_model) if layout is not None else pd.DataFrame(columns=["y_tilde", "var"])
    y, v = np.zeros(n), np.zeros(n)
    if len(dec):
        at = _rows_of_items(d, items.index)
        y[at] = np.nan_to_num(items["y_tilde"].to_numpy(dtype=float))
        v[at] = items["var"].fillna(0.0).to_numpy(dtype=float)

    # --- the estimator: T_c = φ_c(x) + (Z_c/π_c)(φ_c(z) − φ_c(x))
    smooth = np.where(obs_dis | audited, y, x)
    x_eval = index.evaluate(x)
    s_x = _cluster_sums(index, x, row_cluster, n_clusters, evaluated=x_eval)
    # Every other sum and derivative below enters only through the observed clusters (the
    # others have 1/π = 0 and are masked), so they are computed on those clusters' rows alone
    # (``sub``, rows ``rs`` of this index): the same numbers, at a cost that does not grow with
    # the benchmark. A sum of a cluster outside them is its φ_c(x).
    sub, rs, kept_i, kept_u = _observed_index(index, observed_c)
    # the plug-in tables' evaluation of clip(smooth): smooth differs from x (inside [0, 1]) only on
    # decided rows, all in observed clusters, whose instructions and units are evaluated again
    smooth_eval = None
    if bool(((x >= 0.0) & (x <= 1.0)).all()):  # always (p̂ and q̂ are rates): else the tables evaluate it themselves
        smooth_eval = [a.copy() for a in x_eval]
        for whole, part, at in zip(smooth_eval, sub.evaluate(np.clip(smooth[rs], 0.0, 1.0)), (kept_i, kept_u, kept_u)):
            whole[at] = part
        smooth_eval = tuple(smooth_eval)
    del x_eval
    rc = row_cluster[rs]
    # the observed rows' values (``_s``: rows ``rs``; every row there is of an observed cluster)
    x_s, y_s, g_s, q_s, v_s = x[rs], y[rs], g[rs], q_hat[rs], v[rs]
    aud_s, dis_s, agree_s = audited[rs], obs_dis[rs], agree[rs]
    pa_s = np.where(aud_s, np.maximum(pi_a_row[rs], 1e-12), 1.0)
    a_corr = np.where(aud_s, q_s + (y_s - q_s) / pa_s, q_s)
    z = np.where(dis_s, y_s, np.where(agree_s, a_corr, x_s))

    def sums(values: np.ndarray) -> dict[str, np.ndarray]:
        got = _cluster_sums(sub, values, rc, n_clusters)
        return {num: np.where(observed_c, got[num], s_x[num]) for num in NUMERATORS}

    s_z = sums(z)
    s_zd = sums(np.where(dis_s, y_s, x_s))  # audits left out
    # joint numerators (R^K, EMCR): agreements predicted at their agreed label and the audit
    # entering linearly, Σ_u G_u (ỹ_u − label_u)/π_A (module docstring, "Long products")
    z_j = np.where(dis_s, y_s, np.where(agree_s, g_s, x_s))
    s_zj = sums(z_j)
    z_h = np.where(dis_s | aud_s, y_s, x_s)  # audited agreements at their decision, the others at q̂
    s_zh = sums(z_h)
    grp = _Groups(d.a_group[rs] if d.a_group is not None else np.where(agree_s, np.arange(len(rs)), -1))
    # each audit group's rows collapsed onto its first row (the group's product there, 1 at the others):
    # the derivative at that row is the product of everything outside the group
    g_j = sub.gradients(grp.collapse(z_j))
    a_dev = np.where(aud_s[grp.rep], (grp.product(y_s) - grp.product(g_s)) / pa_s[grp.rep], 0.0)
    e_dev = grp.product(z_h) - grp.product(g_s)  # a group's deviation from its labels: decided or predicted
    rep_c = rc[grp.rep]
    g_group = {num: g_j[num][grp.rep] for num in JOINT}  # each group's outside product
    for num in JOINT:
        # higher-order terms of the expansion across groups: decided where audited, at their expected
        # value elsewhere
        higher = s_zh[num] - s_zj[num] - np.bincount(rep_c, g_group[num] * e_dev, minlength=n_clusters)
        s_zd[num] = s_zj[num] + higher
        s_z[num] = s_zd[num] + np.bincount(rep_c, g_group[num] * a_dev, minlength=n_clusters)
    # a decided agreement's derivative: its group's outside product times the group's other decided rows
    inside = grp.leave_one_out(y_s)
    for num in JOINT:
        g_j[num] = np.where(grp.code >= 0, g_j[num][np.maximum(grp.rep_of, 0)] * inside, g_j[num])
    counts, coef = d.counts, d.coef
    totals = {num: s_x[num] + inv_pi * (s_z[num] - s_x[num]) for num in NUMERATORS}

    # --- measurement variance (two-stage, linearised), by source; row arrays on the observed rows
    gz = sub.gradients(z)
    gz["rows"] = np.ones(len(rs))
    for num in JOINT:
        gz[num] = g_j[num]
    err_draws = (_error_bootstrap(dec, error_model, layout, error_boot, rng)
                 if error_model.identified and error_boot and len(dec) else None)
    second = 1.0 / pa_s  # ∂z_u/∂ỹ_u inside the cluster (1 for a disagreement)
    # each audited agreement's debiased "wrong" value (1 − ỹ on an agreed pass, ỹ on a fail), for the floor's rate
    wrong_u = np.where(aud_s, np.where(g_s == 1, 1 - y_s, y_s), 0.0)
    model_s, pi_s = row_model[rs], pi_eff[rc]
    table = {"model": index.models}
    comp_rows = []
    df_m = np.maximum(n_observed - 1, 1)
    tq = stats.t.ppf(0.5 + level / 2, df_m)
    floor_var: dict[str, np.ndarray] = {}
    for metric in METRICS:
        w = coef[metric]
        undefined = np.logical_or.reduce([np.isnan(w[num]) for num in NUMERATORS])
        point = sum(np.nan_to_num(w[num]) * totals[num].reshape(nm, nq).sum(axis=1) for num in NUMERATORS)
        contrib = sum(np.nan_to_num(w[num])[c_model] * (s_z[num] - s_x[num]) for num in NUMERATORS)
        gm = _metric_gradient(gz, w, model_s)
        # second stage inside an observed cluster: audit sampling (one draw per audit group) and decision noise
        if metric in JOINT_METRICS:  # the group's change of the joint products, at its first row
            gw = sum(np.nan_to_num(w[num])[model_s[grp.rep]] * g_group[num] for num in JOINT)
            c_aud = gw * a_dev * pa_s[grp.rep]
        else:
            c_aud = grp.total(np.where(aud_s, gm * (y_s - q_s), 0.0))
        v_aud = np.zeros(len(rs))
        v_aud[grp.rep] = np.where(aud_s[grp.rep], (1 - pa_s[grp.rep]) * (c_aud / pa_s[grp.rep]) ** 2, 0.0)
        v_dec = np.where(dis_s | aud_s, gm ** 2 * v_s * second, 0.0)  # G² v, over π_A for an audited row
        v2_c = np.bincount(rc, v_aud + v_dec, minlength=n_clusters)
        v_first = np.where(observed_c, (1 - pi_eff) * inv_pi ** 2 * contrib ** 2, 0.0)
        v_cluster = np.bincount(c_model, v_first + np.where(observed_c, v2_c * inv_pi, 0.0), minlength=nm)
        # the same without the audit's residuals, plus a rate-based floor for them (see _audit_floor)
        contrib_d = sum(np.nan_to_num(w[num])[c_model] * (s_zd[num] - s_x[num]) for num in NUMERATORS)
        v_dec_d = np.bincount(rc, np.where(dis_s, v_dec, 0.0), minlength=n_clusters)
        v_d = np.bincount(c_model, np.where(observed_c, (1 - pi_eff) * inv_pi ** 2 * contrib_d ** 2 + v_dec_d * inv_pi, 0.0),
                          minlength=nm)
        floor, exposure = _audit_floor(gm, aud_s, wrong_u, pa_s, pi_s, model_s, nm, g_s)
        direct = v_cluster - v_d
        v_audit = np.maximum(audit_composite(direct, exposure), floor)
        floor_var[metric] = np.maximum(v_audit - direct, 0.0)
        v_cluster = v_d + v_audit
        v_err = np.zeros(nm)
        if err_draws is not None:
            # only decided rows move with the error model (eff = 0 elsewhere): their draws alone
            # (at 10× the paper the observed clusters' rows × refits were 240 MB of temporaries)
            dec_rows = np.flatnonzero(dis_s | aud_s)
            eff = (gm * second * inv_pi[rc])[dec_rows]
            delta = np.nan_to_num(err_draws.reindex(iid[rs][dec_rows]).to_numpy() - y_s[dec_rows, None])
            per_model = np.stack([np.bincount(model_s[dec_rows], eff * delta[:, b], minlength=nm)
                                  for b in range(delta.shape[1])])
            v_err = per_model.var(axis=0, ddof=1)
        se = np.sqrt(v_cluster + v_err)
        point = np.where(undefined, np.nan, point)
        table[metric] = point
        table[f"se_{metric}"] = np.where(undefined, np.nan, se)
        table[f"{metric}_lo"] = point - tq * se
        table[f"{metric}_hi"] = point + tq * se
        for mi, mm in enumerate(index.models):
            comp_rows.append({"model": mm, "metric": metric, "sampling": v_cluster[mi] - v_audit[mi],
                              "audit": v_audit[mi], "adjudicator_error": v_err[mi], "audit_direct": direct[mi]})
    comps = pd.DataFrame(comp_rows)
    err_var = {metric: comps.loc[comps["metric"] == metric, "adjudicator_error"].to_numpy() for metric in METRICS}
    progress = pd.DataFrame({
        "model": index.models, "clusters": np.bincount(c_model, c_exists, minlength=nm).astype(int),
        "clusters_sampled": n_sampled, "clusters_observed": n_observed,
        "disagreements": d.dis_per_model.astype(int),
        "disagreements_decided": np.bincount(row_model[obs_dis_rows], minlength=nm).astype(int),
        "audits_planned": d.audits_per_model.astype(int),
        "audits_decided": audited_m.astype(int)})
    rates = _wrong_rates(d.a_names[a_code[ad]], np.where(g[ad] == 1, 1 - y[ad], y[ad]), w_ad, v[ad])
    both_wrong = _both_wrong(index.models, d.agreement_sizes, rates, level)
    return ClusterEstimate(models=index.models, questions=index.questions,
                           tasks_of_question=np.asarray(index.tasks)[_question_task(index)],
                           table=pd.DataFrame(table), components=comps,
                           totals={num: totals[num].reshape(nm, nq) for num in NUMERATORS},
                           denominators={num: counts[DENOMINATORS[num]].reshape(nm, nq) for num in NUMERATORS},
                           error_variance=err_var, both_wrong=both_wrong, error_model=error_model, progress=progress,
                           df=df_m, notes=notes, smooth=smooth, index=index, floor_variance=floor_var,
                           smooth_evaluation=smooth_eval)

def audit_composite(direct: np.ndarray, exposure: np.ndarray) -> np.ndarray:
    """The audit's variance per model: the mean of its direct (design-based) estimate and a
    prediction pooled over the models scored together.

    The direct estimate is a Horvitz–Thompson sum over the few audited agreements whose
    decision differs from the prediction — real both-judges-wrong errors or, with fallible
    adjudicators, wrong opinions on one item. Like the Wald variance of a Poisson count, it
    moves with the estimate itself: a model whose audit happened to find fewer such events gets
    both a shifted estimate and a small variance, so its intervals miss on one side
    (measured with ``bench/bench_coverage_tails.py`` on the direct estimate alone, the code of
    commit 99aa82a: 100 paper-scale replicates with judges never wrong together and
    adjudicators who err 5 %; TCPR's intervals lay above the truth in 6.8 % of the model ×
    replicate pairs and below it in 0.8 %, ``corr(error, se) = −0.47``, although the variance
    was right on average).

    The models share the judges and the adjudicators, and so the process the audit samples. A
    generalized variance function (Wolter 2007, *Introduction to Variance Estimation*, ch. 7)
    predicts each model's audit variance from its **exposure** — the variance its audit would
    have at a both-wrong rate of ½ (:func:`_audit_floor`, a function of its design and
    derivatives only, never of what the audit found) — split by agreed label:
    ``ρ_fail · E_m,fail + ρ_pass · E_m,pass``, with ``ρ ≥ 0`` fitted by non-negative least
    squares across the models (``exposure`` of one column: one ``ρ``). The split matters: the
    judges are wrong together far more often on what they agree fails than on what they agree
    passes (simulator, judges wrong together on 1 % of instances: 6.7 % of audited agreed fails,
    0.13 % of agreed passes), while a model's exposure is mostly its agreed passes; one ``ρ``
    over the total gave the weakest models, with the most agreed fails, too little.
    The prediction does not move with one model's own events; the direct estimate keeps what
    is particular to the model; their mean is unbiased where the direct estimate is and the
    prediction's model holds. With one model scored (or no exposure) it is the direct
    estimate; a direct estimate below zero counts as zero.

    Measured on 200 paper-scale replicates of each of the five scenarios of
    ``bench/bench_validation.py`` (the default estimator, the same decisions for every rule;
    the audit's direct estimate, exposures and Jeffreys floor recorded, each rule's interval
    rebuilt from them): coverage of TCPR, EMCR and R1–R3 ranged 93.4–96.5 % with this rule
    (25 of 25 model-metric cells inside 93–97 %), 93.1–96.4 % with one ``ρ`` over the total
    exposure (25), 94.3–97.4 % with ``max(direct, mean)`` — the previous rule, which never let
    the pool lower a variance — (23: R1 at 97.2–97.4 %), and 93.0–96.4 % with the direct
    estimate alone (24); the mean widths are 3–5 % below the previous rule's. (Those numbers used
    the floor's rate per model × label; it is now pooled over the models: :func:`_audit_floor`.)
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


def _audit_floor(grad, audited, wrong, pi_a, pi_c, row_model, nm, label) -> tuple[np.ndarray, np.ndarray]:
    """Rate-based floor for the variance that the audit's corrections add.

    Both-judges-wrong errors are rare, so the design-based variance of the audit terms
    rests on the few errors found and is zero whenever the audit finds none, although
    the truth may hold a few errors more. Per agreed label l (fail, pass) the floor assumes
    errors fall independently at the Jeffreys-smoothed rate ``r̃_l = (k_l + ½)/(n_l + 1)`` —
    k_l = the audit's debiased count of wrong agreements among its n_l audited ones with that
    label, **pooled over the models scored together**; ``Beta(k + ½, n − k + ½)`` is the
    Jeffreys posterior, so an audit that found 0 % wrong never reports zero variance — and
    sums, per model, the two-stage variance this would give:
    ``r̃_l(1 − r̃_l) Σ_{u audited, label l} (G_u²/π_A) [(1 − π_A)/(π_A π_c) + (1 − π_c)/π_c²]``,
    the audited rows standing (weight 1/π_A) for every agreement of their sampled cluster.

    Why pooled: the models share the judges, whose errors together are what the audit
    samples (the same reason :func:`audit_composite` pools its prediction). A rate per model
    × label (the previous rule) spent one Jeffreys half-event on each of them, and a model's
    agreed passes carry most of its exposure for the joint metrics (26–31× its agreed fails
    on the simulator): with about 1,000 audited agreed passes per model and none of them
    wrong, ½ pseudo-event per model set the pass side of each model's floor at ten times what
    the pooled evidence gives (10 models), and the floor, not the audit, set the variance of
    26–46 % of the joint metrics' intervals where the judges are never wrong together
    (simulator seeds 1–400, adjudicators who err 5 %; intervals too wide there: R1 covered
    96.8 %, 96.6 % with the pooled floor, which binds for 4–15 % of them; where the judges are
    wrong together on 1 % of instances, seeds 1–200, the floor seldom binds either way and
    coverage moves by at most 0.2 pp). Pooled, one half-event is spread over all the models'
    audits. With one model scored the two rules are the same.

    Returns ``(floor, exposure)``: the floor per model, and per model × agreed label
    (columns: agreed fail, agreed pass) the same sum at a rate of ½ (``r̃(1 − r̃) = ¼``),
    which depends on the design and the derivatives only — the covariates of
    :func:`audit_composite`'s pooled prediction.
    """
    if not audited.any():
        return np.zeros(nm), np.zeros((nm, 2))
    pc = np.clip(pi_c[audited], 1e-12, 1.0)
    pa = pi_a[audited]
    term = grad[audited] ** 2 / pa * ((1 - pa) / (pa * pc) + (1 - pc) / pc ** 2)
    lab = (np.asarray(label)[audited] == 1).astype(np.int64)
    n = np.bincount(lab, minlength=2).astype(float)
    k = np.maximum(np.bincount(lab, wrong[audited], minlength=2), 0.0)
    r = np.minimum((k + 0.5) / (n + 1.0), 0.5)
    per_label = np.stack([np.bincount(row_model[audited], np.where(lab == col, term, 0.0), minlength=nm)
                          for col in (0, 1)], axis=1)
    return per_label @ (r * (1 - r)), 0.25 * per_label


def _both_wrong(models, agreement_sizes: list, rates: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per model: share of its agreements on which both judges are wrong (audit strata
    pooled with weights = stratum sizes: ``agreement_sizes``, per model a Series of
    agreements by audit stratum), with a normal interval clipped at 0."""
    z = stats.norm.ppf(0.5 + level / 2)
    rows = []
    for mm, sizes in zip(models, agreement_sizes):
        got = rates.reindex(sizes.index)
        ok = got["n"].notna().to_numpy()
        if not ok.any():
            rows.append({"model": mm, "agreements": int(sizes.sum()), "audited": 0, "both_wrong": np.nan,
                         "lo": np.nan, "hi": np.nan})
            continue
        w = (sizes[ok] / sizes[ok].sum()).to_numpy()
        est = float((w * got["rate"].to_numpy()[ok]).sum())
        se = float(np.sqrt((w ** 2 * got["var"].to_numpy()[ok]).sum()))
        rows.append({"model": mm, "agreements": int(sizes.sum()), "audited": int(got["n"].to_numpy()[ok].sum()),
                     "both_wrong": 100 * est, "lo": 100 * max(est - z * se, 0.0), "hi": 100 * (est + z * se)})
    return pd.DataFrame(rows)


def population_intervals(est: ClusterEstimate, *, n_boot: int = 2000, level: float = 0.95,
                         rng: np.random.Generator | None = None) -> pd.DataFrame:
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
    reps = {"tcpr": r["allpass"], "constraint_level": r["rows"], "r1": r["joint1"], "r2": r["joint2"], "r3": r["joint3"]}
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
            lo, hi = (np.percentile(col[ok], [alpha, 100 - alpha]) if ok.any() else (np.nan, np.nan))
            m_lo, m_hi = meas.loc[mm, f"{metric}_lo"], meas.loc[mm, f"{metric}_hi"]
            if ok.any() and not np.isnan(m_lo):
                lo, hi = min(lo, m_lo), max(hi, m_hi)
            out.append({"model": mm, "metric": metric, "lo": lo, "hi": hi, "n_valid": int(ok.sum())})
    return pd.DataFrame(out)


def scores_frame(est: ClusterEstimate, population: pd.DataFrame | None = None) -> pd.DataFrame:
    """The estimate as a long frame ``model, metric, estimate, measurement_lo,
    measurement_hi, population_lo, population_hi`` (the shape every estimator returns)."""
    rows = []
    pop = population.set_index(["model", "metric"]) if population is not None else None
    t = est.table.set_index("model")
    for metric in METRICS:
        for mm in est.models:
            r = {"model": mm, "metric": metric, "estimate": t.loc[mm, metric],
                 "measurement_lo": t.loc[mm, f"{metric}_lo"], "measurement_hi": t.loc[mm, f"{metric}_hi"],
                 "population_lo": np.nan, "population_hi": np.nan}
            if pop is not None and (mm, metric) in pop.index:
                r["population_lo"], r["population_hi"] = pop.loc[(mm, metric), "lo"], pop.loc[(mm, metric), "hi"]
            rows.append(r)
    return pd.DataFrame(rows)

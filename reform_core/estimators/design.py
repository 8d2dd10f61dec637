"""The default adjudication design: a two-stage sample of question clusters (SPEC §4.1).

Per evaluated model, a **cluster** is one of its questions (every instruction and eligible
unit of SPEC §3 lies inside one). The design is a stratified two-stage sample:

1. **Clusters.** Each cluster is sampled independently (Poisson sampling) with probability
   ``π_D`` if it holds a judge disagreement, ``π_0`` otherwise.
2. **Within a sampled cluster** every disagreement is adjudicated, and the judge
   *agreements* are audited (a decision "neither" on an audited agreement means both judges
   are wrong). Version 3 plans audit by **target**: the agreed rows of one target (feature,
   mode) with one agreed label form an audit group (:func:`audit_groups`), audited
   together with probability ``π_A,g``, independently across groups — a model's passes and
   the judges' joint errors on one target are correlated across the question's variants, and
   a group audited whole observes those products instead of predicting them. The model's
   mean audit rate is spread by **Neyman allocation** (:func:`audit_row_probabilities`): in
   proportion to how much an error moves TCPR and EMCR times the standard deviation of the
   audit's outcome under a planning guess of the both-wrong rate (:func:`prior_wrong_rates`)
   and the decisions' noise (:func:`second_opinion_noise`) — agreed fails, usually far rarer
   than agreed passes, are the likelier wrong and are audited far more. Version 2 plans
   audited row by row by score gradient, version 1 uniformly.
3. **Decisions.** A share ``double_fraction`` of the tasks is double-adjudicated from the
   start (:func:`doubled`); every other task is decided once, and a second, different
   annotator is asked only where that first decision goes against the task's reference
   label (:func:`second_opinion_reference`, :func:`required_annotators`): on an audit when
   the annotator finds both judges wrong, on a disagreement (``second_opinion = "all"``, the
   default) when the annotator sides with judge B; and on an audit whose second annotator
   finds both judges wrong too, a third (``audit_opinions = 3``, the default). Most first
   decisions confirm the reference, so the rule costs a few per cent more decisions and
   gives the contested items the precision of two or three (an item estimate's noise near
   that of two decisions for about 1.05–1.2 decisions: :mod:`reform_core.estimators.adjudicator_error`);
   the pairs of decisions identify adjudicator error. The third opinion is there because
   both judges are wrong on about 1 % of agreements while a fallible annotator wrongly says
   so on ``e`` of them: with two opinions at most, two wrong "neither" (``e²``, 1 % at
   ``e`` = 10 %) are as frequent as real double errors, and the audit's decision noise
   (:func:`second_opinion_noise`: 0.0177 per audit at ``e`` = 0.1 and 1 % wrong) outweighs
   the errors it measures (0.0099); a third opinion cuts it to 0.0054 for 1.6 % more audit
   decisions (measured on the simulator at 10 % adjudicator error, 100 paper-scale
   replicates: R3's measurement interval 12.45 → 9.18 pp wide, bench/RESULTS.md). Each step of the rule depends only on the
   decisions before it, so the stopping is ignorable for the error model's likelihood and
   the item estimates are unbiased over the rule's outcomes.

Sampling is independent across clusters and across audit groups, which makes the
estimator of :mod:`reform_core.estimators.cluster` exactly unbiased with cross-fitted
predictions (Särndal, Swensson & Wretman 1992, *Model Assisted Survey Sampling*, §4.3
two-stage sampling, §3.7 Neyman allocation, §6.3 difference estimators; Zrnic & Candès 2024
cross-prediction). Auditing inside sampled clusters (rather than anywhere) keeps each audit
group's weight at ``1/π_A`` within its cluster, so a both-wrong error found in a long
product moves the estimate by a bounded amount.

The draws are **hashed**: cluster c is sampled iff ``U(seed, model, question) < π``, an
audit group iff ``U(seed, group key) < π_A`` (version 1–2: row u iff ``U(seed, iid) < π_A``),
with ``U`` a uniform number from BLAKE2b / SplitMix64. A plan is therefore reproducible from
its seed and probabilities alone, and the estimator can tell which clusters were sampled even
when a sampled cluster received no task.

The queue is ordered by cluster (clusters in a random order, a cluster's tasks
consecutive), so at any time the completed clusters are a random subset of the sample
and interim estimates stay valid ("stop when precise enough").

Default sizes: ``π_D = π_0 = n_m / N_m`` with ``n_m`` Cochran's size for the model's
``N_m`` disagreements (SPEC §4: the paper's expected number of disagreement decisions; a
model on which the judges never disagree: its ``N_m`` questions, so its agreements are audited),
mean ``π_A = 0.3`` (Neyman-allocated over audit groups), ``double_fraction = 0.1`` and
second opinions on every kind of task. Measured on the simulator (bench/RESULTS.md) this
spends its decisions where the variance is: with the previous defaults (mean ``π_A = 0.1``
row by row, every item decided twice) the audit of agreements carried over 90 % of the
TCPR variance and half the decisions went to second decisions that infallible adjudicators
do not need.
"""

from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np
import pandas as pd

from reform_core import sampling
from reform_core.estimators.adjudicator_error import rule_leaves, unbiased_values
from reform_core.frames import INSTANCE_KEY, require_columns

DESIGN_NAME = "question-cluster"
# 3: audit probabilities by Neyman allocation and second opinions (a third on audits where ``audit_opinions``
# = 3, the default since 2026-12-04; plans without the key ask two at most); 2: by score gradient, every
# task double-adjudicated; 1: uniform within a model
DESIGN_VERSION = 3
DEFAULT_ALLOCATION = "neyman"
DEFAULT_AUDIT = 0.3
DEFAULT_DOUBLE = 0.1
DEFAULT_SECOND_OPINION = "all"
DEFAULT_AUDIT_OPINIONS = 3  # an audit's opinions at most: a third where the first two both find the judges wrong
SECOND_OPINIONS = ("audit", "all", "none")
DEFAULT_AUDIT_UNIT = "target"
AUDIT_UNITS = ("target", "row")
DEFAULT_FOLDS = 5
TASK_COLUMNS = ["iid", "model", "question", "kind", "stratum", "inclusion", "required", "queue_order"]


def _labels(instances: pd.DataFrame, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    require_columns(instances, [INSTANCE_KEY, "model", "question", "feature", "category", "mode", judge_a, judge_b],
                    "instances")
    g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(dtype=float)
    return g, m


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mix."""
    with np.errstate(over="ignore"):
        x = (x + _GOLDEN).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def uniform(seed: int, keys) -> np.ndarray:
    """A reproducible uniform number in [0, 1) per key.

    Integer keys are mixed directly; other keys go through BLAKE2b (8 bytes) first. The
    key's 64-bit code is combined with the seed and passed twice through the SplitMix64
    finaliser; the top 53 bits give the uniform.
    """
    keys = np.asarray(keys)
    if keys.dtype.kind in "iu":
        code = keys.astype(np.int64).view(np.uint64)
    else:
        code = np.fromiter((int.from_bytes(hashlib.blake2b(str(k).encode(), digest_size=8).digest(), "big")
                            for k in keys.tolist()), dtype=np.uint64, count=len(keys))
    with np.errstate(over="ignore"):
        mixed = _splitmix64(_splitmix64(code ^ _splitmix64(np.full(len(code), int(seed) & (2**64 - 1), dtype=np.uint64))))
    return (mixed >> np.uint64(11)).astype(np.float64) / 2.0 ** 53


def cluster_key(model, question) -> np.ndarray:
    """The string key ``model␟question`` of each row's cluster."""
    return (pd.Series(np.asarray(model, dtype=object)).astype(str) + "\x1f"
            + pd.Series(np.asarray(question, dtype=object)).astype(str)).to_numpy(dtype=object)


def agreement_stratum(model, label) -> np.ndarray:
    """Audit stratum key ``model|agree<label>`` of agreements."""
    return (pd.Series(np.asarray(model, dtype=object)).astype(str) + "|agree"
            + pd.Series(np.asarray(label, dtype=float)).astype(int).astype(str)).to_numpy(dtype=object)


def fold_of(model, question, *, seed: int, folds: int = DEFAULT_FOLDS) -> np.ndarray:
    """Cross-fitting fold of each row's (model, question) cluster: fixed by the seed and
    independent of which clusters were sampled."""
    keys = cluster_key(model, question)
    uniq, inv = np.unique(keys.astype(str), return_inverse=True)
    return np.minimum((uniform(seed + 1, uniq) * folds).astype(np.int64), folds - 1)[inv]


def cluster_probability(params: dict, model, has_disagreement) -> np.ndarray:
    """π of each cluster under ``params`` (``cluster_pi`` for clusters with a disagreement,
    ``cluster_pi0`` for the others)."""
    pd_ = params.get("cluster_pi", {})
    p0 = params.get("cluster_pi0", pd_)
    model = np.asarray(model, dtype=object)
    has = np.asarray(has_disagreement, dtype=bool)
    return np.array([float((pd_ if h else p0).get(str(mm), 0.0)) for mm, h in zip(model, has)])


def sampled_clusters(params: dict, model, question, has_disagreement) -> np.ndarray:
    """Whether each cluster (given by model, question) is in the plan's first-stage sample."""
    keys = cluster_key(model, question)
    return uniform(params["seed"], keys) < cluster_probability(params, model, has_disagreement)


def audit_probability(params: dict, model) -> np.ndarray:
    """π_A of each row's model (``audit_pi``: one number, or one per model)."""
    pa = params.get("audit_pi", 0.0)
    model = np.asarray(model, dtype=object)
    if isinstance(pa, dict):
        return np.array([float(pa.get(str(mm), 0.0)) for mm in model])
    return np.full(len(model), float(pa))


def audited_rows(params: dict, iid, model, probability=None, group=None) -> np.ndarray:
    """Whether each agreement row (by iid, of a sampled cluster) is audited; ``probability``
    = each row's π_A (default: the model's mean rate, :func:`audit_probability`). Plans that
    audit by target (``audit_unit = "target"``) draw once per audit group (``group``: each
    row's ``(codes, keys)``, :func:`audit_groups`; its rows share one π_A), the others once per row."""
    pa = audit_probability(params, model) if probability is None else np.asarray(probability, dtype=float)
    if params.get("audit_unit") == "target":
        if group is None:
            raise ValueError("a plan that audits by target needs each row's audit group")
        codes, keys = group
        return uniform(int(params["seed"]) + 7, keys)[codes] < pa
    return uniform(int(params["seed"]) + 7, np.asarray(iid, dtype=np.int64)) < pa


def audit_groups(model, question, feature, mode, label, *, keys: bool = True) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Audit group of each agreement row: ``(codes, keys)`` with ``keys[codes]`` each row's key
    ``model␟question␟feature␟mode␟label`` — its (model, question) cluster, target (feature,
    mode) and agreed label. The key string is built once per group (a hashed draw needs it), not
    once per row: at 10× the paper's scale per-row strings held over a gigabyte.

    A model's passes on one target are correlated across the question's variants (SPEC §3),
    and so are the judges' joint errors there: both judges wrong on one variant of a target
    makes them likelier wrong on its others. Auditing a target's agreed rows together puts
    every such product of errors inside one draw, where it is observed, instead of leaving
    it to a prediction (:mod:`reform_core.estimators.cluster`, "Long products")."""
    # factorised column by column (a pandas column's strings are never turned into per-row Python objects)
    factors = [pd.factorize(c if isinstance(c, pd.Series) else np.asarray(c, dtype=object))
               for c in (model, question, feature, mode)]
    combined = np.zeros(len(factors[0][0]), dtype=np.int64)
    for codes, uniq in factors:
        combined = combined * (len(uniq) + 1) + codes
    combined = combined * 2 + (np.asarray(label, dtype=float) > 0.5)
    _, first, codes = np.unique(combined, return_index=True, return_inverse=True)
    if not keys:
        return codes.reshape(-1), None
    lab = (np.asarray(label, dtype=float)[first] > 0.5).astype(int).tolist()
    parts = [np.asarray(uniq, dtype=object)[c[first]].tolist() for c, uniq in factors]
    # one string per group, built in one pass (pandas' column concatenation held several copies)
    out = np.empty(len(first), dtype=object)
    out[:] = [f"{a}\x1f{b}\x1f{c}\x1f{d}\x1f{e}" for a, b, c, d, e in zip(*parts, lab)]
    return codes.reshape(-1), out


ASSUMED_BOTH_WRONG = 0.01  # share of instances on which both judges are wrong together (planning assumption)
ASSUMED_HUMAN_ERROR = 0.05  # adjudicators' error rate (planning assumption)


def prior_wrong_rates(mean_label: np.ndarray, agree: np.ndarray, row_model: np.ndarray, nm: int,
                      both_wrong: float) -> np.ndarray:
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


def doubled(params: dict, iid) -> np.ndarray:
    """Whether each task (by iid) is double-adjudicated from the start (``double_fraction``, hashed)."""
    return uniform(int(params["seed"]) + 2, np.asarray(iid, dtype=np.int64)) < float(params.get("double_fraction", 0.0))


def second_opinion_reference(params: dict, iid, kind, agreed_label) -> np.ndarray:
    """The reference label of each task under the plan's second-opinion rule, NaN where none.

    With ``second_opinion = "audit"`` (version 3 plans) an audited agreement that is not
    double-adjudicated from the start (:func:`doubled`) is decided once, and a second,
    different annotator is asked only when that first decision differs from the
    reference — the judges' agreed label, i.e. when the first annotator says both judges
    are wrong. Almost every audit confirms the judges, so a second opinion costs a few
    per cent more decisions, yet it gives a "both wrong" finding the precision of two
    decisions where it matters (an item estimate's variance near that of two decisions
    for about 1.05 decisions: :func:`reform_core.estimators.adjudicator_error.item_estimates`).
    The rule depends only on the first decision, so the stopping is ignorable for the
    error model's likelihood and the item estimates are unbiased over the rule's outcomes.
    """
    iid = np.asarray(iid, dtype=np.int64)
    kind = np.asarray(kind, dtype=object)
    out = np.full(len(iid), np.nan)
    rule = params.get("second_opinion", "none")
    if rule not in ("audit", "all"):
        return out
    sel = ((kind == "audit") | (rule == "all")) & ~doubled(params, iid)
    out[sel] = np.asarray(agreed_label, dtype=float)[sel]
    return out


def second_opinion_noise(error: float, rho, depth: int = 2) -> np.ndarray:
    """Variance an audit's decisions add to its item estimate under the second-opinion rule
    (``depth``: the most opinions asked in a row while each goes against the reference, 2 or
    :data:`DEFAULT_AUDIT_OPINIONS`), when adjudicators err with probability ``error`` and the
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
    p1 = rule_leaves([np.full_like(rho, 1 - e)] * int(depth))  # the agreed label right: a decision confirms it w.p. 1 − e
    p0 = rule_leaves([np.full_like(rho, e)] * int(depth))
    f, _ = unbiased_values(p1, p0, rho[..., None])
    return rho * ((p1 * f * f).sum(-1) - 1) + (1 - rho) * (p0 * f * f).sum(-1)


def audit_opinions(params: dict) -> int:
    """The most opinions the plan's rule asks on an audit (``audit_opinions``; 2 for plans made
    before it existed)."""
    return int(params.get("audit_opinions", 2)) if isinstance(params, dict) else 2


def opinion_depth(params: dict, kind) -> np.ndarray:
    """The most decisions the plan's second-opinion rule asks of each task (by ``kind``), one
    after another while each goes against the task's reference (:func:`second_opinion_reference`):
    :func:`audit_opinions` on an audit, 2 on a disagreement."""
    kind = np.asarray(kind, dtype=object)
    return np.where(kind == "audit", audit_opinions(params), 2).astype(np.int64)


def required_annotators(params: dict, kind: str, iid: int, choices) -> Optional[int]:
    """Distinct annotators a task of the plan needs, given the decisions made on it so far
    (``choices``: their choices in the order they were made, "A" / "B" / "neither" relative to
    the plan's judges; a single choice stands for the first; None or empty before any):
    2 for a task double-adjudicated from the start (:func:`doubled`); else one more than the
    number of leading opinions against the task's reference (:func:`second_opinion_reference`:
    "neither" on an audit — both judges wrong —, or, with ``second_opinion = "all"``, "B" on
    a disagreement), at most :func:`opinion_depth` (an audit whose first two annotators both
    find the judges wrong gets a third under version-3 plans with ``audit_opinions = 3``).
    None for a plan without the second-opinion rule (its tasks keep their count)."""
    if not isinstance(params, dict) or params.get("design") != DESIGN_NAME:
        return None
    rule = params.get("second_opinion", "none")
    if rule not in ("audit", "all"):
        return None
    if bool(doubled(params, [int(iid)])[0]):
        return 2
    if kind == "audit":
        against, depth = "neither", audit_opinions(params)
    elif kind == "disagreement" and rule == "all":
        against, depth = "B", 2
    else:
        return 1
    if choices is None:
        choices = []
    elif isinstance(choices, str):
        choices = [choices]
    need = 1
    for c in list(choices)[: depth - 1]:
        if c != against:
            break
        need += 1
    return need


AUDIT_FLOOR = 0.25  # share of the mean allocation score every agreement gets (keeps each π_A > 0)


def allocation_scores(params: dict, index, rows: pd.DataFrame, g: np.ndarray, m: np.ndarray) -> np.ndarray:
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
    from reform_core.metrics.reform import KS  # local: the metrics engine is only needed here

    agree = g == m
    allocation = params.get("audit_allocation", "uniform")
    if allocation not in ("gradient", "neyman"):
        return agree.astype(float)
    nm = len(index.models)
    row_model = _row_models(index, rows)
    mean_label = np.nan_to_num((g + m) / 2, nan=0.5)
    sigma = np.ones(len(rows))
    if allocation == "neyman":
        prior = prior_wrong_rates(mean_label, agree, row_model, nm, float(params.get("assumed_both_wrong",
                                                                                      ASSUMED_BOTH_WRONG)))
        lab = (mean_label > 0.5).astype(np.int64)
        r = prior[row_model, lab]
        noise = second_opinion_noise(float(params.get("assumed_human_error", ASSUMED_HUMAN_ERROR)), 1 - r,
                                     audit_opinions(params))
        sigma = np.where(agree, np.sqrt(r * (1 - r) + noise), 1.0)
        mean_label = np.where(agree, lab * (1 - r) + (1 - lab) * r, mean_label)
    grads = index.gradients(mean_label)
    groups = None
    if params.get("audit_unit") == "target":
        groups = audit_groups(rows["model"], rows["question"], rows["feature"], rows["mode"],
                              np.where(agree, np.nan_to_num(g), 0.0), keys=False)[0]
    n_inst = np.bincount(index.inst_model, minlength=nm).astype(float)
    gt = grads["allpass"] / np.maximum(n_inst[row_model], 1.0)
    ge = np.zeros(len(rows))
    for k in KS:
        u_k = np.bincount(index.unit_model[index.unit_k == k], minlength=nm).astype(float)
        ge += np.where(u_k[row_model] > 0, grads[f"joint{k}"] / (3 * np.maximum(u_k[row_model], 1.0)), 0.0)
    out = np.zeros(len(rows))
    for mi in range(nm):
        sel = agree & (row_model == mi)
        if not sel.any():
            continue
        parts = []
        for gv in (gt[sel], ge[sel]):
            rms = float(np.sqrt(np.mean(gv ** 2)))
            parts.append(gv / rms if rms > 0 else np.zeros(sel.sum()))
        score = np.sqrt((parts[0] ** 2 + parts[1] ** 2) / 2) * sigma[sel]
        mean = float(score.mean())
        score = score + AUDIT_FLOOR * mean if mean > 0 else np.ones(sel.sum())
        if groups is not None:  # one probability per audit group: its rows' root mean square score
            code = groups[sel]
            score = np.sqrt(np.bincount(code, score ** 2) / np.maximum(np.bincount(code), 1))[code]
        out[np.flatnonzero(sel)] = score
    return out


def _row_models(index, rows: pd.DataFrame) -> np.ndarray:
    """Each row's model as its position in ``index.models`` (factorised: no per-row strings)."""
    codes, uniq = pd.factorize(rows["model"])
    return pd.Index(index.models).get_indexer(pd.Index(uniq).astype(str))[codes]


def audit_row_probabilities(params: dict, index, rows: pd.DataFrame, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of each scored row of ``index`` (0 on disagreements): the model's mean rate
    ``audit_pi`` spread over its agreements in proportion to their allocation scores
    (:func:`allocation_scores`), ``π_u = min(1, c s_u)`` with c such that the mean over the
    model's agreements is ``audit_pi`` (capped rows give their excess to the others). The
    probabilities are a deterministic function of the judges' labels and the benchmark's
    structure, so the estimator recomputes them."""
    agree = g == m
    row_model = _row_models(index, rows)
    base = audit_probability(params, np.asarray(index.models, dtype=object))[row_model]  # per model, then per row
    if params.get("audit_allocation", "uniform") not in ("gradient", "neyman"):
        return np.where(agree, base, 0.0)
    scores = allocation_scores(params, index, rows, g, m)
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


def default_params(instances: pd.DataFrame, *, seed: int, judge_a: str = "label_a", judge_b: str = "label_b",
                   confidence: float = 0.95, p: float = 0.5, margin: float = 0.03, audit_pi: float = DEFAULT_AUDIT,
                   double_fraction: float = DEFAULT_DOUBLE, folds: int = DEFAULT_FOLDS,
                   condition: str = "main", audit_allocation: str = DEFAULT_ALLOCATION,
                   second_opinion: str = DEFAULT_SECOND_OPINION, audit_unit: str = DEFAULT_AUDIT_UNIT,
                   audit_opinions: int = DEFAULT_AUDIT_OPINIONS) -> dict:
    """The default design's parameters (module docstring) for the given instances."""
    g, m = _labels(instances, judge_a, judge_b)
    both = ~np.isnan(g) & ~np.isnan(m)
    model = instances["model"].astype(str).to_numpy()
    question = instances["question"].astype(str).to_numpy()
    cluster_pi = {}
    for name in np.unique(model):
        mine = model == name
        # Cochran's size for the model's disagreements; a model on which the judges never disagree
        # is sized on its questions instead, so that its agreements are still audited
        n_dis = int((mine & both & (g != m)).sum()) or int(pd.unique(question[mine & both]).size)
        n = sampling.cochran_size(n_dis, confidence=confidence, p=p, margin=margin) if n_dis else 0
        cluster_pi[str(name)] = min(1.0, n / n_dis) if n_dis else 0.0
    return design_params(cluster_pi, dict(cluster_pi), audit_pi=audit_pi, double_fraction=double_fraction,
                         seed=seed, folds=folds, condition=condition, audit_allocation=audit_allocation,
                         second_opinion=second_opinion, audit_unit=audit_unit, audit_opinions=audit_opinions)


def design_params(cluster_pi: dict, cluster_pi0: dict, *, audit_pi, double_fraction: float, seed: int,
                  folds: int = DEFAULT_FOLDS, condition: str = "main", audit_allocation: str = DEFAULT_ALLOCATION,
                  second_opinion: str = DEFAULT_SECOND_OPINION, audit_unit: str = DEFAULT_AUDIT_UNIT,
                  audit_opinions: int = DEFAULT_AUDIT_OPINIONS, **extra) -> dict:
    """The JSON-serialisable description of a design (stored with the plan);
    ``audit_allocation``: "neyman" (default), "gradient" or "uniform" (:func:`audit_row_probabilities`);
    ``second_opinion``: "all" (default: an audit whose first decision says both judges are wrong,
    and a disagreement decided for judge B, gets a second annotator, :func:`second_opinion_reference`),
    "audit" (audits only) or "none"; ``audit_opinions``: the most opinions asked on an audit, one
    after another while each finds both judges wrong (2 or 3, default 3: :func:`required_annotators`)."""
    if second_opinion not in SECOND_OPINIONS:
        raise ValueError(f"second_opinion must be one of {SECOND_OPINIONS}, got {second_opinion!r}")
    if isinstance(audit_opinions, bool) or audit_opinions not in (2, 3):
        raise ValueError(f"audit_opinions must be 2 or 3, got {audit_opinions!r}")
    if audit_unit not in AUDIT_UNITS:
        raise ValueError(f"audit_unit must be one of {AUDIT_UNITS}, got {audit_unit!r}")
    if audit_allocation not in ("neyman", "gradient", "uniform"):
        raise ValueError(f"audit_allocation must be 'neyman', 'gradient' or 'uniform', got {audit_allocation!r}")
    for name, probs in (("cluster_pi", cluster_pi), ("cluster_pi0", cluster_pi0)):
        bad = [k for k, v in probs.items() if not 0 <= float(v) <= 1]
        if bad:
            raise ValueError(f"{name}[{bad[0]!r}] must lie in [0, 1]")
    for v in (audit_pi.values() if isinstance(audit_pi, dict) else [audit_pi]):
        if not 0 <= float(v) <= 1:
            raise ValueError(f"audit_pi must lie in [0, 1], got {v!r}")
    if not 0 <= float(double_fraction) <= 1:
        raise ValueError(f"double_fraction must lie in [0, 1], got {double_fraction!r}")
    return {"design": DESIGN_NAME, "version": DESIGN_VERSION, "condition": condition, "audit_allocation": audit_allocation,
            "cluster_pi": {str(k): float(v) for k, v in cluster_pi.items()},
            "cluster_pi0": {str(k): float(v) for k, v in cluster_pi0.items()},
            "audit_pi": ({str(k): float(v) for k, v in audit_pi.items()} if isinstance(audit_pi, dict) else float(audit_pi)),
            "double_fraction": float(double_fraction), "second_opinion": second_opinion, "audit_unit": audit_unit,
            "audit_opinions": int(audit_opinions), "folds": int(folds), "seed": int(seed), **extra}


def _row_audit_pi(inst: pd.DataFrame, params: dict, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of every row of ``inst`` (:func:`audit_row_probabilities` on the scored rows of
    the plan's condition; the model's mean rate on rows outside the index)."""
    out = np.where(g == m, audit_probability(params, inst["model"].astype(str).to_numpy()), 0.0)
    if params.get("audit_allocation", "uniform") not in ("gradient", "neyman"):
        return out
    from reform_core.metrics.reform import build_index  # local: only the gradient allocation needs it

    index = build_index(inst, condition=params.get("condition", "main"))
    rows = inst.iloc[index.row_pos]
    out[index.row_pos] = audit_row_probabilities(params, index, rows, g[index.row_pos], m[index.row_pos])
    return out


def draw(instances: pd.DataFrame, params: dict, *, judge_a: str = "label_a", judge_b: str = "label_b") -> pd.DataFrame:
    """The tasks of a question-cluster design (module docstring).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES rows of the condition to plan (``iid, model, question, category, mode``
        and the two label columns).
    params : dict
        :func:`design_params` / :func:`default_params`.

    Returns
    -------
    DataFrame
        ``iid, model, question, kind`` (disagreement | audit), ``stratum`` (disagreement
        stratum ``model|direction|category|mode`` or audit stratum ``model|agree<label>``),
        ``inclusion`` (probability of the task given its cluster was sampled: 1 for a
        disagreement, ``π_A`` for an audit), ``required`` (1 | 2), ``queue_order`` (0..n−1).
    """
    order = np.argsort(instances[INSTANCE_KEY].to_numpy(), kind="stable")
    inst = instances.iloc[order].reset_index(drop=True)
    g, m = _labels(inst, judge_a, judge_b)
    both = ~np.isnan(g) & ~np.isnan(m)
    dis, agree = both & (g != m), both & (g == m)
    model = inst["model"].astype(str).to_numpy()
    question = inst["question"].astype(str).to_numpy()
    key = cluster_key(model, question)
    has_dis = pd.Series(dis).groupby(key).transform("any").to_numpy(dtype=bool)
    ukeys, first = np.unique(key.astype(str), return_index=True)
    c_sampled = pd.Series(sampled_clusters(params, model[first], question[first], has_dis[first]), index=ukeys)
    in_sample = c_sampled.reindex(key.astype(str)).to_numpy(dtype=bool)
    d_rows = np.flatnonzero(dis & in_sample)
    a_cand = np.flatnonzero(agree & in_sample)
    pa_all = _row_audit_pi(inst, params, g, m)
    group = (audit_groups(model[a_cand], question[a_cand], inst["feature"].to_numpy()[a_cand],
                          inst["mode"].to_numpy()[a_cand], g[a_cand]) if params.get("audit_unit") == "target" else None)
    a_rows = a_cand[audited_rows(params, inst[INSTANCE_KEY].to_numpy()[a_cand], model[a_cand], pa_all[a_cand], group)]

    direction = np.where(g[d_rows] == 1, sampling.DIRECTION_A1B0, sampling.DIRECTION_A0B1)
    d_strat = (pd.Series(model[d_rows]) + "|" + pd.Series(direction) + "|"
               + inst["category"].astype(str).to_numpy()[d_rows] + "|" + inst["mode"].astype(str).to_numpy()[d_rows])
    rows = np.r_[d_rows, a_rows]
    tasks = pd.DataFrame({
        "iid": inst[INSTANCE_KEY].to_numpy()[rows].astype(np.int64),
        "model": model[rows], "question": question[rows],
        "kind": np.r_[np.full(len(d_rows), "disagreement", dtype=object), np.full(len(a_rows), "audit", dtype=object)],
        "stratum": np.r_[d_strat.to_numpy(dtype=object), agreement_stratum(model[a_rows], g[a_rows])],
        "inclusion": np.r_[np.ones(len(d_rows)), pa_all[a_rows]],
    })
    seed = int(params["seed"])
    tasks["required"] = np.where(doubled(params, tasks["iid"]), 2, 1)
    # queue: clusters in a random order, a cluster's tasks together
    tasks["_c"] = uniform(seed + 3, cluster_key(tasks["model"], tasks["question"]))
    tasks = tasks.sort_values(["_c", "iid"], kind="stable").reset_index(drop=True)
    tasks["queue_order"] = np.arange(len(tasks), dtype=np.int64)
    tasks["required"] = tasks["required"].astype(np.int64)
    return tasks[TASK_COLUMNS]


# ----------------------------------------------------------------------------- budget planner

PLANNER_DRAWS = 16


def _variance_parts(instances: pd.DataFrame, metric: str, *, judge_a: str, judge_b: str, rates: Optional[pd.Series],
                    both_wrong: float, human_error: float, decisions_per_item: float, condition: str | None,
                    seed: int, second_opinion: str = "none", allocation: str = "uniform",
                    audit_unit: str = "row", audit_opinions: int = 2) -> pd.DataFrame:
    """Per model, the three variance coefficients of the planner (see :func:`plan_for_half_width`)."""
    from reform_core.metrics.reform import KS, build_index  # local: the planner is the only user here

    index = build_index(instances, condition=condition)
    rows = instances.iloc[index.row_pos]
    g = pd.to_numeric(rows[judge_a], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(rows[judge_b], errors="coerce").to_numpy(dtype=float)
    dis, agree = g != m, g == m
    nm, nq = len(index.models), len(index.questions)
    row_model = pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy())
    row_cluster = row_model * nq + pd.Index(index.questions).get_indexer(rows["question"].astype(str).to_numpy())
    n_inst = np.bincount(index.inst_model, minlength=nm).astype(float)
    units = {k: np.bincount(index.unit_model[index.unit_k == k], minlength=nm).astype(float) for k in KS}
    nq_c = index.inst_model * nq + index.inst_question
    unit_c = index.unit_model * nq + index.unit_question

    def metric_sum(pv: np.ndarray) -> np.ndarray:
        """Per cluster, the metric's contribution (percentage points of its model's score)."""
        allpass, joint, _ = index.evaluate(pv)
        if metric == "tcpr":
            return np.bincount(nq_c, 100 * allpass / np.maximum(n_inst[index.inst_model], 1), minlength=nm * nq)
        out = np.zeros(nm * nq)
        for k in KS:
            sel = index.unit_k == k
            w = np.where(units[k][index.unit_model[sel]] > 0, 100 / (3 * np.maximum(units[k][index.unit_model[sel]], 1)), 0)
            out += np.bincount(unit_c[sel], joint[sel] * w, minlength=nm * nq)
        return out

    # disagreements: truths drawn independently at the working rates
    rho = np.full(len(rows), 0.5)
    if rates is not None and len(rates):
        strat = (rows["model"].astype(str) + "|" + np.where(g == 1, "A1B0", "A0B1") + "|"
                 + rows["category"].astype(str) + "|" + rows["mode"].astype(str)).to_numpy()
        rho = np.clip(pd.Series(strat).map(rates).fillna(0.5).to_numpy(dtype=float), 0.02, 0.98)
    base = np.where(dis, rho, g)
    ref = metric_sum(base)
    rng = np.random.default_rng(seed)
    sq = np.zeros(nm * nq)
    for _ in range(PLANNER_DRAWS):
        y = np.where(dis, (rng.random(len(rows)) < rho).astype(float), g)
        sq += (metric_sum(y) - ref) ** 2
    a_cluster = np.bincount(np.arange(nm * nq) // nq, sq / PLANNER_DRAWS, minlength=nm)
    # gradients of the metric at the working point, for the audit and noise terms
    grads = index.gradients(base)
    if metric == "tcpr":
        gm = 100 * grads["allpass"] / np.maximum(n_inst[row_model], 1)
    else:
        gm = sum(np.where(units[k][row_model] > 0, 100 * grads[f"joint{k}"] / (3 * np.maximum(units[k][row_model], 1)), 0)
                 for k in KS)
    # the audit: both judges wrong at the planning rate of each row's agreed label (prior_wrong_rates),
    # each agreement weighted by the inverse of its allocation relative to its model's mean, so that
    # Σ_u G² σ² / π_u = (that sum) / π_A under the plan's allocation (caps at 1 ignored)
    mean_label = np.nan_to_num((g + m) / 2, nan=0.5)
    r = prior_wrong_rates(mean_label, agree, row_model, nm, both_wrong)[row_model, (mean_label > 0.5).astype(int)]
    score = allocation_scores({"audit_allocation": allocation, "audit_unit": audit_unit, "assumed_both_wrong": both_wrong,
                               "assumed_human_error": human_error, "audit_opinions": audit_opinions}, index, rows, g, m)
    mean_score = np.bincount(row_model, np.where(agree, score, 0.0), minlength=nm) / np.maximum(
        np.bincount(row_model, agree, minlength=nm), 1)
    weight = np.where(agree & (score > 0), mean_score[row_model] / np.where(score > 0, score, 1.0), 0.0)
    b_audit = np.bincount(row_model, np.where(agree, gm ** 2 * r * (1 - r) * weight, 0.0), minlength=nm)
    e = human_error
    # decision noise of an item's estimate: one decision's classical correction, less where
    # items are doubled; an audit under the second-opinion rule has nearly the noise of two
    # decisions at the cost of one (second_opinion_noise)
    v_single = e * (1 - e) / (1 - 2 * e) ** 2
    v_dis = v_single / max(decisions_per_item, 1.0)
    v_aud = np.full(len(rows), v_dis)
    if second_opinion in ("audit", "all"):
        v_aud = second_opinion_noise(e, 1 - r, audit_opinions)
    if second_opinion == "all":
        v_dis = float(second_opinion_noise(e, 0.5))
    c_noise = np.bincount(row_model, np.where(dis, gm ** 2, 0.0), minlength=nm) * v_dis
    d_noise = np.bincount(row_model, np.where(agree, gm ** 2 * v_aud * weight, 0.0), minlength=nm)
    return pd.DataFrame({"model": index.models, "a_cluster": a_cluster, "b_audit": b_audit, "c_noise": c_noise,
                         "d_noise": d_noise, "disagreements": np.bincount(row_model, dis, minlength=nm),
                         "agreements": np.bincount(row_model, agree, minlength=nm)})


def predicted_variance(parts: pd.Series, pi_c: float, pi_a: float) -> float:
    """Planner's measurement variance (pp²) of one model's metric for probabilities π_c, π_A:
    ``A (1−π_c)/π_c`` (cluster sampling of disagreements, truths independent at the working
    rates) ``+ B [(1−π_A)/(π_A π_c) + (1−π_c)/π_c]`` (both-wrong errors at the assumed rate
    among agreements) ``+ C/π_c + D/π_c`` (decision noise on disagreements / audited
    agreements, D weighted by π_A·(1/π_A))."""
    if pi_c <= 0:
        return np.inf
    v = parts["a_cluster"] * (1 - pi_c) / pi_c + parts["c_noise"] / pi_c
    if pi_a > 0:
        v += parts["b_audit"] * ((1 - pi_a) / (pi_a * pi_c) + (1 - pi_c) / pi_c) + parts["d_noise"] / pi_c
    else:
        v += np.inf if parts["b_audit"] > 0 else 0.0
    return float(v)


def plan_for_half_width(instances: pd.DataFrame, *, half_width: float, metric: str, seed: int,
                        judge_a: str = "label_a", judge_b: str = "label_b", rates: Optional[pd.Series] = None,
                        both_wrong: float = ASSUMED_BOTH_WRONG, human_error: float = ASSUMED_HUMAN_ERROR,
                        double_fraction: float = DEFAULT_DOUBLE, folds: int = DEFAULT_FOLDS,
                        condition: str = "main", second_opinion: str = DEFAULT_SECOND_OPINION,
                        audit_opinions: int = DEFAULT_AUDIT_OPINIONS) -> tuple[dict, pd.DataFrame]:
    """Size the default design for a wanted measurement half-width (percentage points).

    Per model, the planner predicts the measurement variance of ``metric`` (``tcpr`` or
    ``emcr``) as a function of the cluster probability ``π_c`` and the audit probability
    ``π_A`` (:func:`predicted_variance`), from the judges' agreement structure: which
    instances are disagreements, how the eligible units and instructions overlap them, and
    working assumptions — disagreement truths independent at ``rates`` (stratum pass rates
    from a pilot; 0.5, the most conservative, where unknown), both judges wrong on
    ``both_wrong`` of the agreements, adjudicators erring at ``human_error`` — an item's decision
    noise that of one decision (less where doubled), or under the second-opinion rule
    (``second_opinion``) nearly that of two for about one decision (:func:`second_opinion_noise`).
    The expected decisions count doubled items twice and add the opinions the rule is
    expected to ask for (an audit whose first decision finds both judges wrong: ``human_error +
    both_wrong``, a third where the second does too: ``human_error² + both_wrong``; under
    ``"all"`` half the disagreements). It then picks, on a grid of ``π_A``, the
    smallest ``π_c`` with ``1.96 √V ≤ half_width`` and keeps the pair of least expected
    decisions. The audit term follows the plan's own allocation (:func:`allocation_scores`: both
    judges wrong at the planning rate of each row's agreed label, :func:`prior_wrong_rates`), with
    errors taken as independent; correlated truths and errors make the real variance larger or
    smaller than predicted (measured on a simulated project: within a factor of two per model,
    ``tests/unit/test_planner.py``), and the Scores page compares the measured half-width with the
    target as decisions come in.

    Returns
    -------
    (params, table)
        Design parameters (:func:`design_params`, with ``target`` recorded) and per model
        ``model, cluster_pi, audit_pi, expected_decisions, predicted_half_width, reachable``.
    """
    if metric not in ("tcpr", "emcr"):
        raise ValueError(f"metric must be 'tcpr' or 'emcr', got {metric!r}")
    if not half_width > 0:
        raise ValueError(f"half_width must be > 0 percentage points, got {half_width!r}")
    d = float(double_fraction)
    parts = _variance_parts(instances, metric, judge_a=judge_a, judge_b=judge_b, rates=rates, both_wrong=both_wrong,
                            human_error=human_error, decisions_per_item=1.0 + d, condition=condition, seed=seed,
                            second_opinion=second_opinion, allocation=DEFAULT_ALLOCATION, audit_unit=DEFAULT_AUDIT_UNIT,
                            audit_opinions=audit_opinions)
    # expected decisions per item: doubled ones two, others one plus a second opinion where the rule asks
    # (an audit when its first decision finds both judges wrong, and a third where the second does too;
    # a disagreement decided for judge B)
    extra_aud = human_error + both_wrong + (human_error ** 2 + both_wrong if audit_opinions >= 3 else 0.0)
    k_aud = 1.0 + d + (1 - d) * (extra_aud if second_opinion in ("audit", "all") else 0.0)
    k_dis = 1.0 + d + (1 - d) * (0.5 if second_opinion == "all" else 0.0)
    target_v = (half_width / 1.96) ** 2
    rows, cluster_pi, audit_pi_m = [], {}, {}
    for _, p in parts.iterrows():
        best = None
        for pa in (0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0):
            if predicted_variance(p, 1.0, pa) > target_v:
                continue
            lo, hi = 1e-4, 1.0
            for _ in range(50):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if predicted_variance(p, mid, pa) > target_v else (lo, mid)
            cost = hi * (k_dis * p["disagreements"] + k_aud * pa * p["agreements"])
            if best is None or cost < best[0]:
                best = (cost, hi, pa)
        reachable = best is not None
        if best is None:  # even everything adjudicated and audited cannot reach it: plan the maximum
            best = (k_dis * p["disagreements"] + k_aud * p["agreements"], 1.0, 1.0)
        cost, pc, pa = best
        cluster_pi[p["model"]] = pc
        audit_pi_m[p["model"]] = pa
        rows.append({"model": p["model"], "cluster_pi": pc, "audit_pi": pa, "expected_decisions": cost,
                     "predicted_half_width": 1.96 * np.sqrt(predicted_variance(p, pc, pa)), "reachable": reachable})
    table = pd.DataFrame(rows)
    params = design_params(cluster_pi, dict(cluster_pi), audit_pi=audit_pi_m, double_fraction=double_fraction, seed=seed,
                           folds=folds, condition=condition, second_opinion=second_opinion,
                           audit_opinions=audit_opinions, target={"metric": metric, "half_width": float(half_width)})
    return params, table

"""The default adjudication design: a two-stage sample of question clusters (SPEC §4.1).

Per evaluated model, a **cluster** is one of its questions (every instruction and eligible
unit of SPEC §3 lies inside one). The design is a stratified two-stage sample:

1. **Clusters.** Each cluster is sampled independently (Poisson sampling) with probability
   ``π_D`` if it holds a judge disagreement, ``π_0`` otherwise.
2. **Within a sampled cluster** every disagreement is adjudicated, and each judge
   *agreement* u is audited independently with probability ``π_A,u`` (a decision
   "neither" on an audited agreement means both judges are wrong). Version 2 plans spread
   the model's mean audit rate over its agreements in proportion to how much an error
   there moves TCPR and EMCR (:func:`audit_row_probabilities`); version 1 plans audit
   uniformly.
3. Each task is double-adjudicated (two distinct annotators) with probability
   ``double_fraction``; the overlap identifies adjudicator error
   (:mod:`reform_core.estimators.adjudicator_error`).

Sampling is independent across clusters and across audited rows, which makes the
estimator of :mod:`reform_core.estimators.cluster` exactly unbiased with cross-fitted
predictions (Särndal, Swensson & Wretman 1992, *Model Assisted Survey Sampling*, §4.3
two-stage sampling, §6.3 difference estimators; Zrnic & Candès 2024 cross-prediction).
Auditing inside sampled clusters (rather than anywhere) keeps each audited row's weight
at ``1/π_A`` within its cluster, so a both-wrong error found in a long product moves the
estimate by a bounded amount, and it keeps the estimator free of any assumption about
where both-wrong errors fall (they may concentrate on the same target across variants).

The draws are **hashed**: cluster c is sampled iff ``U(seed, model, question) < π``, row u
audited iff ``U(seed, iid) < π_A``, with ``U`` a uniform number from BLAKE2b. A plan is
therefore reproducible from its seed and probabilities alone, and the estimator can tell
which clusters were sampled even when a sampled cluster received no task.

The queue is ordered by cluster (clusters in a random order, a cluster's tasks
consecutive), so at any time the completed clusters are a random subset of the sample
and interim estimates stay valid ("stop when precise enough").

Default sizes: ``π_D = π_0 = n_m / N_m`` with ``n_m`` Cochran's size for the model's
``N_m`` disagreements (SPEC §4: the paper's expected number of disagreement decisions),
mean ``π_A = 0.1`` (gradient-allocated) and ``double_fraction = 1`` (every item decided by two annotators: with
adjudicators who err, two decisions per item cost twice as much but cut the variance of
the corrected products several-fold; with infallible ones the second decision is
wasted — lower ``double_fraction`` when the error estimate shows it).
"""

from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np
import pandas as pd

from reform_core import sampling
from reform_core.frames import INSTANCE_KEY, require_columns

DESIGN_NAME = "question-cluster"
DESIGN_VERSION = 2  # 2: audit probabilities allocated by score gradient (1: uniform within a model)
DEFAULT_ALLOCATION = "gradient"
DEFAULT_AUDIT = 0.1
DEFAULT_DOUBLE = 1.0
DEFAULT_FOLDS = 5
TASK_COLUMNS = ["iid", "model", "question", "kind", "stratum", "inclusion", "required", "queue_order"]


def _labels(instances: pd.DataFrame, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    require_columns(instances, [INSTANCE_KEY, "model", "question", "category", "mode", judge_a, judge_b], "instances")
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


def audited_rows(params: dict, iid, model, probability=None) -> np.ndarray:
    """Whether each agreement row (by iid, of a sampled cluster) is audited; ``probability``
    = each row's π_A (default: the model's mean rate, :func:`audit_probability`)."""
    pa = audit_probability(params, model) if probability is None else np.asarray(probability, dtype=float)
    return uniform(int(params["seed"]) + 7, np.asarray(iid, dtype=np.int64)) < pa


AUDIT_FLOOR = 0.25  # share of the mean allocation score every agreement gets (keeps each π_A > 0)


def audit_row_probabilities(params: dict, index, rows: pd.DataFrame, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of each scored row of ``index`` (0 on disagreements).

    ``audit_allocation = "uniform"`` (plans of version 1): the model's ``audit_pi``.
    ``"gradient"`` (the default): the model's mean rate ``audit_pi`` is spread over its
    agreements in proportion to how much a both-judges-wrong error there would move the
    scores — the optimal (Neyman / probability-proportional-to-size) allocation for the
    Horvitz–Thompson audit term is ``π_u ∝ |G_u| σ_u`` (Särndal et al. 1992, §3.6). With
    ``G^T_u`` and ``G^E_u`` the derivatives of TCPR and EMCR with respect to row u at the
    judges' mean label (:meth:`UnitIndex.gradients`; computable before any human
    decision), each scaled by its root mean square over the model's agreements, the score
    is ``s_u = √((G^T_u² + G^E_u²) / 2) + AUDIT_FLOOR · mean(s)``; ``π_u = min(1, c s_u)``
    with c such that the mean over the model's agreements is ``audit_pi`` (capped rows
    give their excess to the others). The floor keeps every agreement's probability
    positive, which exact unbiasedness needs (an error where the first-order gradient is
    0 still matters when another label of its product is wrong too). A row outside every
    eligible unit (baseline-aligned target) has no EMCR gradient and is audited less;
    a row in a long unit more. The probabilities are a deterministic function of the
    judges' labels and the benchmark's structure, so the estimator recomputes them.
    """
    from reform_core.metrics.reform import KS  # local: the metrics engine is only needed here

    model = rows["model"].astype(str).to_numpy()
    agree = g == m
    base = audit_probability(params, model)
    if params.get("audit_allocation", "uniform") != "gradient":
        return np.where(agree, base, 0.0)
    nm = len(index.models)
    row_model = pd.Index(index.models).get_indexer(model)
    grads = index.gradients(np.nan_to_num((g + m) / 2, nan=0.5))
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
        score = np.sqrt((parts[0] ** 2 + parts[1] ** 2) / 2)
        mean = float(score.mean())
        score = score + AUDIT_FLOOR * mean if mean > 0 else np.ones(sel.sum())
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
                   condition: str = "main", audit_allocation: str = DEFAULT_ALLOCATION) -> dict:
    """The default design's parameters (module docstring) for the given instances."""
    g, m = _labels(instances, judge_a, judge_b)
    both = ~np.isnan(g) & ~np.isnan(m)
    model = instances["model"].astype(str).to_numpy()
    cluster_pi = {}
    for name in np.unique(model):
        n_dis = int(((model == name) & both & (g != m)).sum())
        n = sampling.cochran_size(n_dis, confidence=confidence, p=p, margin=margin)
        cluster_pi[str(name)] = min(1.0, n / n_dis) if n_dis else 0.0
    return design_params(cluster_pi, dict(cluster_pi), audit_pi=audit_pi, double_fraction=double_fraction,
                         seed=seed, folds=folds, condition=condition, audit_allocation=audit_allocation)


def design_params(cluster_pi: dict, cluster_pi0: dict, *, audit_pi, double_fraction: float, seed: int,
                  folds: int = DEFAULT_FOLDS, condition: str = "main", audit_allocation: str = DEFAULT_ALLOCATION,
                  **extra) -> dict:
    """The JSON-serialisable description of a design (stored with the plan);
    ``audit_allocation``: "gradient" (default) or "uniform" (:func:`audit_row_probabilities`)."""
    if audit_allocation not in ("gradient", "uniform"):
        raise ValueError(f"audit_allocation must be 'gradient' or 'uniform', got {audit_allocation!r}")
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
            "double_fraction": float(double_fraction),
            "folds": int(folds), "seed": int(seed), **extra}


def _row_audit_pi(inst: pd.DataFrame, params: dict, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """π_A of every row of ``inst`` (:func:`audit_row_probabilities` on the scored rows of
    the plan's condition; the model's mean rate on rows outside the index)."""
    out = np.where(g == m, audit_probability(params, inst["model"].astype(str).to_numpy()), 0.0)
    if params.get("audit_allocation", "uniform") != "gradient":
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
    a_rows = a_cand[audited_rows(params, inst[INSTANCE_KEY].to_numpy()[a_cand], model[a_cand], pa_all[a_cand])]

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
    tasks["required"] = np.where(uniform(seed + 2, tasks["iid"]) < float(params.get("double_fraction", 0.0)), 2, 1)
    # queue: clusters in a random order, a cluster's tasks together
    tasks["_c"] = uniform(seed + 3, cluster_key(tasks["model"], tasks["question"]))
    tasks = tasks.sort_values(["_c", "iid"], kind="stable").reset_index(drop=True)
    tasks["queue_order"] = np.arange(len(tasks), dtype=np.int64)
    tasks["required"] = tasks["required"].astype(np.int64)
    return tasks[TASK_COLUMNS]


# ----------------------------------------------------------------------------- budget planner

PLANNER_DRAWS = 16
ASSUMED_BOTH_WRONG = 0.01
ASSUMED_HUMAN_ERROR = 0.05


def _variance_parts(instances: pd.DataFrame, metric: str, *, judge_a: str, judge_b: str, rates: Optional[pd.Series],
                    both_wrong: float, human_error: float, decisions_per_item: float, condition: str | None,
                    seed: int) -> pd.DataFrame:
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
    b_audit = np.bincount(row_model, np.where(agree, gm ** 2, 0.0), minlength=nm) * both_wrong * (1 - both_wrong)
    e = human_error
    v_item = e * (1 - e) / (1 - 2 * e) ** 2 / max(decisions_per_item, 1.0)
    c_noise = np.bincount(row_model, np.where(dis, gm ** 2, 0.0), minlength=nm) * v_item
    d_noise = np.bincount(row_model, np.where(agree, gm ** 2, 0.0), minlength=nm) * v_item
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
                        condition: str = "main") -> tuple[dict, pd.DataFrame]:
    """Size the default design for a wanted measurement half-width (percentage points).

    Per model, the planner predicts the measurement variance of ``metric`` (``tcpr`` or
    ``emcr``) as a function of the cluster probability ``π_c`` and the audit probability
    ``π_A`` (:func:`predicted_variance`), from the judges' agreement structure: which
    instances are disagreements, how the eligible units and instructions overlap them, and
    working assumptions — disagreement truths independent at ``rates`` (stratum pass rates
    from a pilot; 0.5, the most conservative, where unknown), both judges wrong on
    ``both_wrong`` of the agreements, adjudicators erring at ``human_error`` with
    ``1 + double_fraction`` decisions per item. It then picks, on a grid of ``π_A``, the
    smallest ``π_c`` with ``1.96 √V ≤ half_width`` and keeps the pair of least expected
    decisions. The prediction assumes a uniform audit inside each model (the plan itself
    allocates its audit by gradient, :func:`audit_row_probabilities`, which changes the
    audit term's variance). Correlated truths make the real variance larger or smaller than predicted;
    the Scores page compares the measured half-width with the target as decisions come in.

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
    k = 1.0 + float(double_fraction)
    parts = _variance_parts(instances, metric, judge_a=judge_a, judge_b=judge_b, rates=rates, both_wrong=both_wrong,
                            human_error=human_error, decisions_per_item=k, condition=condition, seed=seed)
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
            cost = k * hi * (p["disagreements"] + pa * p["agreements"])
            if best is None or cost < best[0]:
                best = (cost, hi, pa)
        reachable = best is not None
        if best is None:  # even everything adjudicated and audited cannot reach it: plan the maximum
            best = (k * (p["disagreements"] + p["agreements"]), 1.0, 1.0)
        cost, pc, pa = best
        cluster_pi[p["model"]] = pc
        audit_pi_m[p["model"]] = pa
        rows.append({"model": p["model"], "cluster_pi": pc, "audit_pi": pa, "expected_decisions": cost,
                     "predicted_half_width": 1.96 * np.sqrt(predicted_variance(p, pc, pa)), "reachable": reachable})
    table = pd.DataFrame(rows)
    params = design_params(cluster_pi, dict(cluster_pi), audit_pi=audit_pi_m, double_fraction=double_fraction, seed=seed,
                           folds=folds, condition=condition, target={"metric": metric, "half_width": float(half_width)})
    return params, table

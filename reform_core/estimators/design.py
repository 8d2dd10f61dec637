"""The default adjudication design: a two-stage sample of question clusters (SPEC §4.1).

Per evaluated model, a **cluster** is one of its questions (every instruction and eligible
unit of SPEC §3 lies inside one). The design is a stratified two-stage sample:

1. **Clusters.** Each cluster is sampled independently (Poisson sampling) with probability
   ``π_D`` if it holds a judge disagreement, ``π_0`` otherwise.
2. **Within a sampled cluster** every disagreement is adjudicated, and each judge
   *agreement* is audited independently with probability ``π_A`` (a decision "neither"
   on an audited agreement means both judges are wrong).
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
``π_A = 0.1`` and ``double_fraction = 1`` (every item decided by two annotators: with
adjudicators who err, two decisions per item cost twice as much but cut the variance of
the corrected products several-fold; with infallible ones the second decision is
wasted — lower ``double_fraction`` when the error estimate shows it).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from reform_core import sampling
from reform_core.frames import INSTANCE_KEY, require_columns

DESIGN_NAME = "question-cluster"
DESIGN_VERSION = 1
DEFAULT_AUDIT = 0.1
DEFAULT_DOUBLE = 1.0
DEFAULT_FOLDS = 5
TASK_COLUMNS = ["iid", "model", "question", "kind", "stratum", "inclusion", "required", "queue_order"]


def _labels(instances: pd.DataFrame, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    require_columns(instances, [INSTANCE_KEY, "model", "question", "category", "mode", judge_a, judge_b], "instances")
    g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(dtype=float)
    return g, m


def uniform(seed: int, keys) -> np.ndarray:
    """A reproducible uniform number in [0, 1) per key: BLAKE2b of ``seed`` and the key."""
    keys = [str(k) for k in keys]
    out = np.empty(len(keys))
    salt = str(int(seed)).encode()
    for i, k in enumerate(keys):
        h = hashlib.blake2b(k.encode(), digest_size=8, key=salt).digest()
        out[i] = int.from_bytes(h, "big") / 2.0 ** 64
    return out


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
    return np.minimum((uniform(seed + 1, ["fold\x1f" + k for k in uniq]) * folds).astype(np.int64), folds - 1)[inv]


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


def audited_rows(params: dict, iid) -> np.ndarray:
    """Whether each agreement row (by iid) of a sampled cluster is audited."""
    return uniform(params["seed"], ["audit\x1f" + str(int(i)) for i in iid]) < float(params.get("audit_pi", 0.0))


def default_params(instances: pd.DataFrame, *, seed: int, judge_a: str = "label_a", judge_b: str = "label_b",
                   confidence: float = 0.95, p: float = 0.5, margin: float = 0.03, audit_pi: float = DEFAULT_AUDIT,
                   double_fraction: float = DEFAULT_DOUBLE, folds: int = DEFAULT_FOLDS,
                   condition: str = "main") -> dict:
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
                         seed=seed, folds=folds, condition=condition)


def design_params(cluster_pi: dict, cluster_pi0: dict, *, audit_pi: float, double_fraction: float, seed: int,
                  folds: int = DEFAULT_FOLDS, condition: str = "main", **extra) -> dict:
    """The JSON-serialisable description of a design (stored with the plan)."""
    for name, probs in (("cluster_pi", cluster_pi), ("cluster_pi0", cluster_pi0)):
        bad = [k for k, v in probs.items() if not 0 <= float(v) <= 1]
        if bad:
            raise ValueError(f"{name}[{bad[0]!r}] must lie in [0, 1]")
    for name, v in (("audit_pi", audit_pi), ("double_fraction", double_fraction)):
        if not 0 <= float(v) <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
    return {"design": DESIGN_NAME, "version": DESIGN_VERSION, "condition": condition,
            "cluster_pi": {str(k): float(v) for k, v in cluster_pi.items()},
            "cluster_pi0": {str(k): float(v) for k, v in cluster_pi0.items()},
            "audit_pi": float(audit_pi), "double_fraction": float(double_fraction),
            "folds": int(folds), "seed": int(seed), **extra}


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
    a_rows = a_cand[audited_rows(params, inst[INSTANCE_KEY].to_numpy()[a_cand])]

    direction = np.where(g[d_rows] == 1, sampling.DIRECTION_A1B0, sampling.DIRECTION_A0B1)
    d_strat = (pd.Series(model[d_rows]) + "|" + pd.Series(direction) + "|"
               + inst["category"].astype(str).to_numpy()[d_rows] + "|" + inst["mode"].astype(str).to_numpy()[d_rows])
    rows = np.r_[d_rows, a_rows]
    tasks = pd.DataFrame({
        "iid": inst[INSTANCE_KEY].to_numpy()[rows].astype(np.int64),
        "model": model[rows], "question": question[rows],
        "kind": np.r_[np.full(len(d_rows), "disagreement", dtype=object), np.full(len(a_rows), "audit", dtype=object)],
        "stratum": np.r_[d_strat.to_numpy(dtype=object), agreement_stratum(model[a_rows], g[a_rows])],
        "inclusion": np.r_[np.ones(len(d_rows)), np.full(len(a_rows), float(params.get("audit_pi", 0.0)))],
    })
    seed = int(params["seed"])
    tasks["required"] = np.where(uniform(seed + 2, tasks["iid"]) < float(params.get("double_fraction", 0.0)), 2, 1)
    # queue: clusters in a random order, a cluster's tasks together
    tasks["_c"] = uniform(seed + 3, cluster_key(tasks["model"], tasks["question"]))
    tasks = tasks.sort_values(["_c", "iid"], kind="stable").reset_index(drop=True)
    tasks["queue_order"] = np.arange(len(tasks), dtype=np.int64)
    tasks["required"] = tasks["required"].astype(np.int64)
    return tasks[TASK_COLUMNS]

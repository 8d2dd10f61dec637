"""The tasks of a question-cluster plan: the default design's sizes (:func:`default_design`)
and the draw of its tasks (:func:`draw`) — which clusters are sampled, which disagreements
and audited agreements need a decision, how many annotators each asks for from the start, and
the queue's order (clusters in a random order, a cluster's tasks together)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core import sampling
from reform_core.estimators.allocation import row_audit_pi
from reform_core.estimators.design import (
    DEFAULT_ALLOCATION,
    DEFAULT_AUDIT,
    DEFAULT_AUDIT_OPINIONS,
    DEFAULT_AUDIT_UNIT,
    DEFAULT_DOUBLE,
    DEFAULT_FOLDS,
    DEFAULT_SECOND_OPINION,
    TASK_COLUMNS,
    Design,
    Stream,
    agreement_stratum,
    audit_groups,
    cluster_key,
    create,
    judge_labels,
)
from reform_core.frames import INSTANCE_KEY


def default_design(
    instances: pd.DataFrame,
    *,
    seed: int,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
    audit_pi: float = DEFAULT_AUDIT,
    double_fraction: float = DEFAULT_DOUBLE,
    folds: int = DEFAULT_FOLDS,
    condition: str = "main",
    audit_allocation: str = DEFAULT_ALLOCATION,
    second_opinion: str = DEFAULT_SECOND_OPINION,
    audit_unit: str = DEFAULT_AUDIT_UNIT,
    audit_opinions: int = DEFAULT_AUDIT_OPINIONS,
) -> Design:
    """The default design (:mod:`reform_core.estimators.design`) for the given instances: both
    cluster probabilities ``n_m / N_m`` with ``n_m`` Cochran's size for the model's ``N_m``
    disagreements (a model on which the judges never disagree: its ``N_m`` questions, so its
    agreements are audited)."""
    g, m = judge_labels(instances, judge_a, judge_b)
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
    return create(
        cluster_pi,
        dict(cluster_pi),
        audit_pi=audit_pi,
        double_fraction=double_fraction,
        seed=seed,
        folds=folds,
        condition=condition,
        audit_allocation=audit_allocation,
        second_opinion=second_opinion,
        audit_unit=audit_unit,
        audit_opinions=audit_opinions,
    )


def draw(
    instances: pd.DataFrame, design: Design, *, judge_a: str = "label_a", judge_b: str = "label_b"
) -> pd.DataFrame:
    """The tasks of a question-cluster design (module docstring).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES rows of the condition to plan (``iid, model, question, category, mode``
        and the two label columns).
    design : Design
        :func:`default_design` or a stored plan's (:meth:`Design.from_stored`).

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
    g, m = judge_labels(inst, judge_a, judge_b)
    both = ~np.isnan(g) & ~np.isnan(m)
    dis, agree = both & (g != m), both & (g == m)
    model = inst["model"].astype(str).to_numpy()
    question = inst["question"].astype(str).to_numpy()
    key = cluster_key(model, question)
    has_dis = pd.Series(dis).groupby(key).transform("any").to_numpy(dtype=bool)
    ukeys, first = np.unique(key.astype(str), return_index=True)
    c_sampled = pd.Series(design.sampled_clusters(model[first], question[first], has_dis[first]), index=ukeys)
    in_sample = c_sampled.reindex(key.astype(str)).to_numpy(dtype=bool)
    d_rows = np.flatnonzero(dis & in_sample)
    a_cand = np.flatnonzero(agree & in_sample)
    pa_all = row_audit_pi(inst, design, g, m)
    group = (
        audit_groups(
            model[a_cand],
            question[a_cand],
            inst["feature"].to_numpy()[a_cand],
            inst["mode"].to_numpy()[a_cand],
            g[a_cand],
        )
        if design.audit_unit == "target"
        else None
    )
    a_rows = a_cand[design.audited_rows(inst[INSTANCE_KEY].to_numpy()[a_cand], model[a_cand], pa_all[a_cand], group)]

    direction = np.where(g[d_rows] == 1, sampling.DIRECTION_A1B0, sampling.DIRECTION_A0B1)
    d_strat = (
        pd.Series(model[d_rows])
        + "|"
        + pd.Series(direction)
        + "|"
        + inst["category"].astype(str).to_numpy()[d_rows]
        + "|"
        + inst["mode"].astype(str).to_numpy()[d_rows]
    )
    rows = np.r_[d_rows, a_rows]
    tasks = pd.DataFrame(
        {
            "iid": inst[INSTANCE_KEY].to_numpy()[rows].astype(np.int64),
            "model": model[rows],
            "question": question[rows],
            "kind": np.r_[
                np.full(len(d_rows), "disagreement", dtype=object), np.full(len(a_rows), "audit", dtype=object)
            ],
            "stratum": np.r_[d_strat.to_numpy(dtype=object), agreement_stratum(model[a_rows], g[a_rows])],
            "inclusion": np.r_[np.ones(len(d_rows)), pa_all[a_rows]],
        }
    )
    tasks["required"] = np.where(design.doubled(tasks["iid"]), 2, 1)
    # queue: clusters in a random order, a cluster's tasks together
    tasks["_c"] = design.uniform(Stream.QUEUE, cluster_key(tasks["model"], tasks["question"]))
    tasks = tasks.sort_values(["_c", "iid"], kind="stable").reset_index(drop=True)
    tasks["queue_order"] = np.arange(len(tasks), dtype=np.int64)
    tasks["required"] = tasks["required"].astype(np.int64)
    return tasks[TASK_COLUMNS]

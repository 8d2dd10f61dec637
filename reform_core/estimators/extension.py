"""Extending a question-cluster plan: more questions drawn with the same design, every earlier
draw kept (``plan-extend``).

The rule. A cluster (model, question) is in the plan's sample iff its hashed uniform
``U < π`` (:meth:`reform_core.estimators.design.Design.sampled_clusters`). Extending raises each
model's cluster probabilities — ``π' = π + f (1 − π)``, the same ``f`` for clusters with and
without a disagreement (``cluster_pi`` and ``cluster_pi0``) — and changes nothing else (seed,
audit probabilities, streams). Hence:

* **nested**: a question sampled before stays sampled (``U < π ≤ π'``), and so do its audit
  groups and doubled items (their draws do not depend on π); the earlier decisions keep their
  tasks and meaning;
* **the same design**: the extended sample is exactly the Poisson sample the plan would have
  drawn at ``π'``, so the estimator needs nothing new (its inclusion probabilities are read
  from the design);
* **N more questions expected**: given the draws so far, an unsampled cluster has ``U``
  uniform on ``[π, 1)``, so it joins with probability ``(π' − π)/(1 − π) = f``. With ``K`` of
  the model's questions not yet sampled (those holding a row both judges labelled),
  ``f = min(1, N / K)`` makes ``N`` the expected number of new questions per model (every
  remaining one when ``N ≥ K``; the realised number varies around ``N``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from reform_core.estimators.design import Design, judge_labels


def cluster_table(instances: pd.DataFrame, design: Design, *, judge_a: str, judge_b: str) -> pd.DataFrame:
    """One row per (model, question) cluster holding a row both judges labelled: ``model,
    question, has_disagreement, sampled`` (under ``design``)."""
    g, m = judge_labels(instances, judge_a, judge_b)
    both = ~np.isnan(g) & ~np.isnan(m)
    rows = pd.DataFrame(
        {
            "model": instances["model"].astype(str).to_numpy()[both],
            "question": instances["question"].astype(str).to_numpy()[both],
            "dis": (g != m)[both],
        }
    )
    c = rows.groupby(["model", "question"], sort=True)["dis"].any().rename("has_disagreement").reset_index()
    c["sampled"] = design.sampled_clusters(c["model"], c["question"], c["has_disagreement"])
    return c


def extended_design(
    design: Design, instances: pd.DataFrame, questions: int, *, judge_a: str, judge_b: str
) -> tuple[Design, pd.DataFrame]:
    """``design`` with ``questions`` more questions per model expected (module docstring), and per
    model ``model, questions, sampled_before, not_sampled, share`` (``f``), ``cluster_pi_before``,
    ``cluster_pi``."""
    if isinstance(questions, bool) or not isinstance(questions, (int, np.integer)) or questions < 1:
        raise ValueError(f"questions must be an integer >= 1, got {questions!r}")
    c = cluster_table(instances, design, judge_a=judge_a, judge_b=judge_b)
    pi = dict(design.cluster_pi)
    pi0 = dict(design.cluster_pi if design.cluster_pi0 is None else design.cluster_pi0)
    rows = []
    for model, mine in c.groupby("model", sort=True):
        left = int((~mine["sampled"]).sum())
        f = min(1.0, questions / left) if left else 0.0
        before = float(pi.get(model, 0.0))
        pi[model] = before + f * (1.0 - before)
        pi0[model] = float(pi0.get(model, 0.0)) + f * (1.0 - float(pi0.get(model, 0.0)))
        rows.append(
            {
                "model": model,
                "questions": len(mine),
                "sampled_before": int(mine["sampled"].sum()),
                "not_sampled": left,
                "share": f,
                "cluster_pi_before": before,
                "cluster_pi": pi[model],
            }
        )
    return replace(design, cluster_pi=pi, cluster_pi0=pi0), pd.DataFrame(rows)


def new_tasks(all_tasks: pd.DataFrame, known_iids) -> pd.DataFrame:
    """The tasks of the extended draw (:func:`reform_core.estimators.draws.draw`) that the plan
    does not hold yet, in their queue order (clusters in the design's random order)."""
    return (
        all_tasks[~pd.Index(all_tasks["iid"]).isin(pd.Index(np.asarray(known_iids, dtype=np.int64)))]
        .sort_values("queue_order", kind="stable")
        .reset_index(drop=True)
    )

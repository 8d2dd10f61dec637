"""Step 2 of the default estimator: the design as realised so far by the decisions.

The decided tasks are a second-phase sample of the plan's (``docs/estimator.md``), read in one
of two ways, chosen from the pattern of what is decided (never from the answers):

* **clusters** — the app's queue serves whole questions in a random order, so at any moment the
  complete questions are a random subset of the sampled ones (at most one per annotator in
  progress). A sampled cluster is *observed* once every row of it that needs a decision has its
  first one (an item still owed another opinion counts with the decisions it has), and enters
  with ``π_c`` times the share of its model's sampled clusters of its kind that are complete;
* **tasks** — when many questions are partly decided (an outside team returning a random part
  of ``tasks``), each task's first decision is a second-phase draw within its model and kind,
  with probability ``π_d`` = the share decided there; every sampled cluster is observed, and a
  decided row enters like an audited one (linearly, weight ``1/π_d`` — times ``1/π_A`` for an
  audit), an undecided one at its prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.cluster.layout import Layout
from reform_core.frames import INSTANCE_KEY
from reform_core.unit_index import sorted_slots


@dataclass
class Progress:
    """Where the plan stands: each decision's slot among the rows that need one (-1: none), the
    opinion rule's reference and depth by iid, the observed clusters, their effective probability
    ``pi_eff`` and its inverse, the observed disagreements and audited agreements, and counts."""

    slot: np.ndarray
    reference: pd.Series | None
    depth: pd.Series | None
    observed_c: np.ndarray
    pi_eff: np.ndarray
    inv_pi: np.ndarray
    obs_dis: np.ndarray
    audited: np.ndarray
    n_sampled: np.ndarray
    n_observed: np.ndarray
    audited_m: np.ndarray
    notes: list
    pending: pd.Index  # items of the opinion rule still owed another opinion
    mode: str  # "clusters" or "tasks" (module docstring)
    pi_d: np.ndarray  # per scored row: its task's second-phase probability (1 in "clusters" mode, off tasks)
    tasks_planned: np.ndarray  # per model: rows that need a decision
    tasks_decided: np.ndarray  # per model: those with every decision the plan asks of them so far
    awaiting_opinion: np.ndarray  # per model: those owed another opinion


def _decided(lay: Layout, decisions: pd.DataFrame):
    """Which rows needing a decision have their first decision, which are still owed another
    opinion (they count with the decisions they have: :mod:`reform_core.estimators.opinion_phases`),
    and the opinion rule's reference and depth by iid (None without the rule)."""
    slot = sorted_slots(lay.need_iid, decisions[INSTANCE_KEY].to_numpy(dtype=np.int64))
    counts = np.bincount(slot[slot >= 0], minlength=len(lay.need_iid))
    decided = counts > 0
    reference = depth = None
    pending = pd.Index([])
    if lay.need_reference is not None and np.isfinite(lay.need_reference).any():
        reference = pd.Series(lay.need_reference, index=lay.need_iid)
        depth = pd.Series(lay.need_depth, index=lay.need_iid) if lay.need_depth is not None else None
        _, pending = ae.second_opinion_items(decisions[slot >= 0], reference, depth=depth)
    waiting = pd.Index(lay.need_iid).isin(pending)
    if lay.need_required is not None:
        waiting |= (counts > 0) & (counts < lay.need_required)  # doubled from the start, one decision so far
    notes = []
    if waiting.any():
        notes.append(
            f"{int(waiting.sum())} item(s) await another opinion (a second annotator on an item decided twice "
            "from the start, or after a first decision against the plan's reference); they count with the "
            "decisions they have, and the missing opinions widen the interval"
        )
    return slot, decided, waiting, reference, depth, pending, notes


def _effective_probability(lay: Layout, observed_c: np.ndarray) -> np.ndarray:
    """``π_c`` times the share of the model's sampled clusters with a task (of the same kind:
    with or without a disagreement) that are complete."""
    cl = lay.clusters
    done_share = np.ones(cl.n_clusters)
    for mi in range(cl.nm):
        for kind in (True, False):
            grp = (cl.c_model == mi) & (cl.has_dis == kind) & cl.sampled_c & lay.has_task
            if grp.any():
                done_share[grp] = (observed_c & grp).sum() / grp.sum()
    return cl.pi_c * done_share


PARTIAL_SHARE = 0.1  # partly decided questions, as a share of those touched, beyond which tasks are the unit


def _mode(lay: Layout, decided: np.ndarray) -> str:
    """``tasks`` when more than a few questions are partly decided (module docstring), else ``clusters``."""
    cl = lay.clusters
    some = np.bincount(cl.row_cluster[lay.need_pos[decided]], minlength=cl.n_clusters) > 0
    missing = np.bincount(cl.row_cluster[lay.need_pos[~decided]], minlength=cl.n_clusters) > 0
    partial = int((some & missing).sum())
    return "tasks" if partial > max(2, PARTIAL_SHARE * int(some.sum())) else "clusters"


def _task_probability(lay: Layout, decided: np.ndarray, agree: np.ndarray) -> np.ndarray:
    """Per scored row: the share of its model's tasks of its kind that are decided (1 off tasks)."""
    cl = lay.clusters
    rows = lay.need_pos
    key = cl.row_model[rows] * 2 + agree[rows]
    share = np.bincount(key, decided, minlength=2 * cl.nm) / np.maximum(np.bincount(key, minlength=2 * cl.nm), 1)
    out = np.ones(lay.n)
    out[rows] = share[key]
    return out


def _observed(lay: Layout, decided: np.ndarray, g, m, mode: str):
    """The observed clusters, their effective probability and its inverse, the rows' task
    probability, and the observed disagreements and audited agreements (with a decision)."""
    cl = lay.clusters
    if mode == "tasks":
        observed_c, pi_eff = cl.sampled_c.copy(), cl.pi_c
        pi_d = _task_probability(lay, decided, g == m)
        has = np.zeros(lay.n, dtype=bool)
        has[lay.need_pos[decided]] = True
        obs_row = observed_c[cl.row_cluster] & has
    else:
        missing = np.bincount(cl.row_cluster[lay.need_pos[~decided]], minlength=cl.n_clusters) > 0
        observed_c = cl.sampled_c & ~missing
        pi_eff = _effective_probability(lay, observed_c)
        pi_d = np.ones(lay.n)
        obs_row = observed_c[cl.row_cluster]
    inv_pi = np.where(observed_c & (pi_eff > 0), 1.0 / np.where(pi_eff > 0, pi_eff, 1.0), 0.0)
    return observed_c, pi_eff, inv_pi, pi_d, (g != m) & obs_row, lay.audit_sel & obs_row


def _closed_note(closed: dict, decided: np.ndarray) -> str:
    when = str(closed.get("at", ""))[:10]
    why = f" ({closed['reason']})" if closed.get("reason") else ""
    return (
        f"the plan was closed on {when}{why}: its {int((~decided).sum())} undecided task(s) are withdrawn and the "
        "estimate is final for the sample reached (the questions they left incomplete count as not drawn in "
        "the second phase; opinions still owed count with the decisions made)"
    )


def progress_of(
    lay: Layout, decisions: pd.DataFrame, g: np.ndarray, m: np.ndarray, models, closed: dict | None = None
) -> Progress:
    """:class:`Progress` of the decisions so far, with a note per model whose audit or
    disagreements are not measured yet. ``closed``: the plan's closure (``Design.extra["closed"]``):
    its undecided tasks are withdrawn — the counts then cover the decided tasks, nothing is owed,
    and one note says so."""
    cl = lay.clusters
    slot, decided, waiting, reference, depth, pending, notes = _decided(lay, decisions)
    if closed:
        waiting = np.zeros_like(waiting)
        notes = [_closed_note(closed, decided)]
    need_model = cl.row_model[lay.need_pos]
    mode = _mode(lay, decided)
    observed_c, pi_eff, inv_pi, pi_d, obs_dis, audited = _observed(lay, decided, g, m, mode)
    if mode == "tasks":
        notes.append(
            "many questions are partly decided: each decided task counts as a random draw among its "
            "model's tasks of its kind (the undecided ones at their prediction)"
        )
    audited_m = np.bincount(cl.row_model[np.flatnonzero(audited)], minlength=cl.nm)
    for mi, mm in enumerate([] if closed else models):
        if not audited_m[mi]:
            notes.append(f"{mm}: no audited agreement decided yet — both-judges-wrong errors are not corrected")
        if not (obs_dis & (cl.row_model == mi)).any() and lay.dis_per_model[mi]:
            notes.append(f"{mm}: no fully adjudicated question yet — its disagreements are predicted, not measured")
    return Progress(
        slot=slot,
        reference=reference,
        depth=depth,
        observed_c=observed_c,
        pi_eff=pi_eff,
        inv_pi=inv_pi,
        obs_dis=obs_dis,
        audited=audited,
        n_sampled=np.bincount(cl.c_model, cl.sampled_c, minlength=cl.nm).astype(int),
        n_observed=np.bincount(cl.c_model, observed_c, minlength=cl.nm).astype(int),
        audited_m=audited_m,
        notes=notes,
        pending=pending,
        mode=mode,
        pi_d=pi_d,
        tasks_planned=np.bincount(need_model[decided] if closed else need_model, minlength=cl.nm),
        tasks_decided=np.bincount(need_model[decided & ~waiting], minlength=cl.nm),
        awaiting_opinion=np.bincount(need_model[waiting], minlength=cl.nm),
    )

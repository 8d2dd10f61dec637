"""Step 5 of the default estimator: the cluster totals ``T_c``.

``T_c = φ_c(x) + (Z_c / π_c)(φ_c(z) − φ_c(x))`` per numerator (``docs/estimator.md``): ``x`` the
predictions, ``z`` the decided disagreements at their item estimates and the agreements at
``q̂ + (A_u/π_A)(ỹ_u − q̂)``. For the joint numerators (R^K, EMCR) the audit enters linearly, one
audit group at a time, with the higher-order terms across groups at their predicted value.
Every sum but ``φ_c(x)`` is taken on the observed clusters' rows alone (a restricted unit index:
the same numbers, at a cost that does not grow with the benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reform_core.estimators.cluster.items import ItemValues
from reform_core.estimators.cluster.layout import JOINT, NUMERATORS, AuditGroups, Layout, cluster_sums
from reform_core.estimators.cluster.predictions import Predictions
from reform_core.estimators.cluster.progress import Progress
from reform_core.unit_index import UnitIndex


@dataclass
class Observed:
    """The observed clusters' rows (``rs``: their positions among the scored rows, ``sub``: the
    unit index restricted to them, ``rc``: their clusters) and their values: ``dis`` the decided
    disagreements that enter at their decision; ``member`` the rows that enter through the linear
    expansion (agreements; in "tasks" mode every row that needs a decision), ``decided`` those of
    them with a decision, ``base`` their value before it (the agreed label; a disagreement's
    prediction), ``lin`` the base of the constraint level's expansion (``q̂``; a prediction), ``pa``
    a decided member's probability (``π_A``, times ``π_d`` in "tasks" mode; 1 elsewhere); ``audited``
    the decided agreements."""

    sub: UnitIndex
    rs: np.ndarray
    rc: np.ndarray
    x: np.ndarray
    y: np.ndarray
    g: np.ndarray
    q: np.ndarray
    v: np.ndarray
    audited: np.ndarray
    dis: np.ndarray
    agree: np.ndarray
    pa: np.ndarray
    member: np.ndarray
    decided: np.ndarray
    base: np.ndarray
    lin: np.ndarray


@dataclass
class Totals:
    """Per numerator: ``s_x`` (``φ_c(x)``), ``s_z`` (``φ_c(z)``), ``s_zd`` (``φ_c(z)`` without the
    audit's corrections) and ``totals`` (``T_c``); the observed rows; the audit groups among them
    with, for the joint numerators, each group's outside product ``g_group``, its audit deviation
    ``a_dev`` and the rows' derivatives ``g_j`` (for TCPR's all-pass products the same per row:
    ``rows``, ``g_group["allpass"]``, ``a_row``); the plug-in values ``smooth`` and their evaluation."""

    s_x: dict
    s_z: dict
    s_zd: dict
    totals: dict
    obs: Observed
    z: np.ndarray
    groups: AuditGroups
    g_j: dict
    g_group: dict
    a_dev: np.ndarray
    smooth: np.ndarray
    smooth_evaluation: tuple | None
    rows: AuditGroups | None = None  # each audited agreement its own group (TCPR's instructions)
    a_row: np.ndarray | None = None  # each such row's audit deviation


def observed_index(index: UnitIndex, observed_c: np.ndarray, memo: dict | None):
    """``index.restrict(observed_c)`` and the positions in ``index`` of the instructions and units
    it keeps, kept in ``memo`` for the same observed clusters (a new decision seldom completes a
    cluster: the Scores page's rescoring reuses it)."""
    hit = memo.get("cluster-observed") if memo is not None else None
    if hit is not None and np.array_equal(hit[0], observed_c):
        return hit[1]
    sub, rs = index.restrict(observed_c)
    nq = len(index.questions)
    kept_i = np.flatnonzero(observed_c[index.inst_model * nq + index.inst_question])
    kept_u = np.flatnonzero(observed_c[index.unit_model * nq + index.unit_question])
    out = (sub, rs, kept_i, kept_u)
    if memo is not None:
        memo["cluster-observed"] = (observed_c.copy(), out)
    return out


def _plug_in(index: UnitIndex, lay: Layout, prog: Progress, x, smooth, memo):
    """``φ_c(x)`` of every cluster, the observed rows' restricted index and the plug-in tables'
    evaluation of ``clip(smooth)`` (it differs from ``x`` only on decided rows, all in observed
    clusters, whose instructions and units are evaluated again)."""
    cl = lay.clusters
    x_eval = index.evaluate(x)
    s_x = cluster_sums(index, x, cl.row_cluster, cl.n_clusters, evaluated=x_eval)
    sub, rs, kept_i, kept_u = observed_index(index, prog.observed_c, memo)
    smooth_eval = None
    if bool(((x >= 0.0) & (x <= 1.0)).all()):  # always (p̂ and q̂ are rates): else the tables evaluate it themselves
        smooth_eval = [a.copy() for a in x_eval]
        for whole, part, at in zip(smooth_eval, sub.evaluate(np.clip(smooth[rs], 0.0, 1.0)), (kept_i, kept_u, kept_u)):
            whole[at] = part
        smooth_eval = tuple(smooth_eval)
    return s_x, sub, rs, smooth_eval


def _observed(lay: Layout, prog: Progress, pred: Predictions, it: ItemValues, sub, rs, g, m) -> Observed:
    aud = prog.audited[rs]
    agree = (g == m)[rs]
    pi_a = np.maximum(lay.pi_a_row[rs], 1e-12)
    x = pred.x[rs]
    if prog.mode == "tasks":  # every decision enters linearly, weighted by its task's probability
        member = agree | (lay.need[rs] & ~agree)
        decided = aud | prog.obs_dis[rs]
        pa = np.where(decided, np.where(agree, pi_a, 1.0) * prog.pi_d[rs], 1.0)
        dis = np.zeros(len(rs), dtype=bool)
    else:
        member, decided, dis = agree, aud, prog.obs_dis[rs]
        pa = np.where(aud, pi_a, 1.0)
    q = pred.q_hat[rs]
    return Observed(
        sub=sub,
        rs=rs,
        rc=lay.clusters.row_cluster[rs],
        x=x,
        y=it.y[rs],
        g=g[rs],
        q=q,
        v=it.v[rs],
        audited=aud,
        dis=dis,
        agree=agree,
        pa=pa,
        member=member,
        decided=decided,
        base=np.where(agree, g[rs], x),
        lin=np.where(agree, q, x),
    )


def _linear_audit(lay: Layout, o: Observed, sums, s_z: dict, s_zd: dict, nums: tuple, grp: AuditGroups):
    """The audit expansion of the product numerators ``nums`` over the audit groups ``grp``
    (module docstring), in place in ``s_z`` / ``s_zd``; returns each group's outside product
    (``g_group``), its audit deviation (``a_dev``) and the rows' derivatives (``g_j``)."""
    n_clusters = lay.clusters.n_clusters
    z_j = np.where(o.dis, o.y, np.where(o.member, o.base, o.x))  # agreements at their agreed label
    s_zj = sums(z_j)
    z_h = np.where(o.dis | o.decided, o.y, o.x)  # decided members at their decision, the others predicted
    s_zh = sums(z_h)
    # each audit group's rows collapsed onto its first row (the group's product there, 1 at the others):
    # the derivative at that row is the product of everything outside the group
    g_j = o.sub.gradients(grp.collapse(z_j))
    a_dev = np.where(o.decided[grp.rep], (grp.product(o.y) - grp.product(o.base)) / o.pa[grp.rep], 0.0)
    e_dev = grp.product(z_h) - grp.product(o.base)  # a group's deviation from its base: decided or predicted
    rep_c = o.rc[grp.rep]
    g_group = {num: g_j[num][grp.rep] for num in nums}  # each group's outside product
    for num in nums:
        # higher-order terms across groups: decided where audited, at their expected value elsewhere
        higher = s_zh[num] - s_zj[num] - np.bincount(rep_c, g_group[num] * e_dev, minlength=n_clusters)
        s_zd[num] = s_zj[num] + higher
        s_z[num] = s_zd[num] + np.bincount(rep_c, g_group[num] * a_dev, minlength=n_clusters)
    # a decided agreement's derivative: its group's outside product times the group's other decided rows
    inside = grp.leave_one_out(o.y)
    for num in nums:
        g_j[num] = np.where(grp.code >= 0, g_j[num][np.maximum(grp.rep_of, 0)] * inside, g_j[num])
    return g_j, g_group, a_dev


def cluster_totals(
    index: UnitIndex,
    lay: Layout,
    prog: Progress,
    pred: Predictions,
    it: ItemValues,
    g: np.ndarray,
    m: np.ndarray,
    memo: dict | None = None,
) -> Totals:
    """:class:`Totals` (module docstring)."""
    cl = lay.clusters
    smooth = np.where(prog.obs_dis | prog.audited, it.y, pred.x)
    s_x, sub, rs, smooth_eval = _plug_in(index, lay, prog, pred.x, smooth, memo)
    o = _observed(lay, prog, pred, it, sub, rs, g, m)
    z = np.where(o.dis, o.y, np.where(o.member, o.lin + np.where(o.decided, (o.y - o.lin) / o.pa, 0.0), o.x))

    def sums(values: np.ndarray) -> dict[str, np.ndarray]:
        got = cluster_sums(sub, values, o.rc, cl.n_clusters)
        return {num: np.where(prog.observed_c, got[num], s_x[num]) for num in NUMERATORS}

    s_z = sums(z)
    s_zd = sums(np.where(o.dis, o.y, o.x))  # audits left out
    # the joint products hold every variant of a target: its audit group (a target's agreed rows) is
    # inside or outside a unit whole; an instruction holds one row of a target: there each row is a group
    rows = AuditGroups(np.where(o.member, np.arange(len(o.rs)), -1))
    if lay.a_group is not None and prog.mode == "clusters":
        grp = AuditGroups(np.where(o.agree, lay.a_group[o.rs], -1))
    else:  # row by row (plans before audits by target; in "tasks" mode a target's rows are decided apart)
        grp = rows
    g_j, g_group, a_dev = _linear_audit(lay, o, sums, s_z, s_zd, JOINT, grp)
    g_a, g_row, a_row = _linear_audit(lay, o, sums, s_z, s_zd, ("allpass",), rows)
    g_j["allpass"], g_group["allpass"] = g_a["allpass"], g_row["allpass"]
    totals = {num: s_x[num] + prog.inv_pi * (s_z[num] - s_x[num]) for num in NUMERATORS}
    return Totals(
        s_x=s_x,
        s_z=s_z,
        s_zd=s_zd,
        totals=totals,
        obs=o,
        z=z,
        groups=grp,
        g_j=g_j,
        g_group=g_group,
        a_dev=a_dev,
        smooth=smooth,
        smooth_evaluation=smooth_eval,
        rows=rows,
        a_row=a_row,
    )

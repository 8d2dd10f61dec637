"""Step 1 of the default estimator: the design laid over the scored rows.

Everything here follows from the rows, the judges' labels, the plan's design and its tasks —
never from a decision — so a caller that scores the same rows again after new decisions can
keep it (:func:`layout`'s ``memo``). Notation: ``docs/estimator.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reform_core.estimators.allocation import audit_row_probabilities
from reform_core.estimators.design import Design, audit_groups
from reform_core.frames import INSTANCE_KEY
from reform_core.unit_index import KS, UnitIndex, fingerprint, leave_one_out, same_as_snapshot, snapshot, sorted_slots

NUMERATORS = ("rows", "allpass", "joint1", "joint2", "joint3")
JOINT = ("joint1", "joint2", "joint3")
# numerators of products, whose audit enters linearly, one audit group at a time (docs/estimator.md): TCPR's
# all-pass products and the joint products of R^K / EMCR; the constraint level is a plain sum
LINEAR = ("allpass", *JOINT)
LINEAR_METRICS = ("tcpr", "emcr", "r1", "r2", "r3")
DENOMINATORS = {"rows": "n_rows", "allpass": "n_inst", "joint1": "units1", "joint2": "units2", "joint3": "units3"}
METRICS = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
I32 = np.int32  # row-length codes kept across calls: half the memory of int64


@dataclass
class Clusters:
    """The (model, question) clusters: each row's cluster, each cluster's model, whether it holds a
    disagreement, exists, its first-stage probability ``pi_c`` and whether the plan sampled it."""

    nm: int
    nq: int
    row_cluster: np.ndarray
    c_model: np.ndarray
    has_dis: np.ndarray
    c_exists: np.ndarray
    pi_c: np.ndarray
    sampled_c: np.ndarray

    @property
    def n_clusters(self) -> int:
        return self.nm * self.nq

    @property
    def row_model(self) -> np.ndarray:
        return self.row_cluster // self.nq


@dataclass
class Strata:
    """Codes for the predictions: each disagreement's stratum (model × direction × context ×
    category × mode) and parent (model × direction × context); each agreement's audit stratum
    (model × agreed label, ``a_stratum``) and context bin (``a_ctx``); per model its agreements
    per audit stratum (``agreement_sizes``)."""

    d_stratum: np.ndarray
    d_parent: np.ndarray
    stratum_parent: np.ndarray
    a_stratum: np.ndarray
    a_names: np.ndarray
    a_ctx: np.ndarray
    ctx_stratum: np.ndarray
    agreement_sizes: list


@dataclass
class Layout:
    """What :func:`layout` derives (module docstring)."""

    n: int
    clusters: Clusters
    pi_a_row: np.ndarray  # π_A of each agreement (0 on disagreements)
    audit_sel: np.ndarray  # agreements of sampled clusters that the plan audits
    need: np.ndarray  # rows that need a decision (sampled disagreements, drawn audits)
    has_task: np.ndarray  # per cluster: some row of it needs a decision
    folds: int
    fold: np.ndarray
    strata: Strata
    counts: dict
    coef: dict
    notes: list
    need_iid: np.ndarray  # the iids of the rows that need a decision, sorted (binary search)
    need_pos: np.ndarray  # their row positions, in that order
    dis_of_fold: list
    agree_of_fold: list
    agree_ctx_of_fold: list
    agree_label_of_fold: list
    dis_per_model: np.ndarray
    audits_per_model: np.ndarray
    need_reference: np.ndarray | None = None  # the opinion rule's reference label (need_iid order; NaN: none)
    need_depth: np.ndarray | None = None  # the rule's most decisions of each such row
    need_required: np.ndarray | None = None  # decisions asked from the start (2: doubled, else 1), need_iid order
    a_group: np.ndarray | None = None  # each agreement's audit group (by target); None: audited row by row


def coefficients(den: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
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


def cluster_sums(
    index: UnitIndex, pv: np.ndarray, row_cluster: np.ndarray, n_clusters: int, evaluated: tuple | None = None
) -> dict[str, np.ndarray]:
    """Per-cluster numerator sums of ``pv``; ``evaluated``: ``index.evaluate(pv)`` where the
    caller has it already."""
    allpass, joint, _ = evaluated if evaluated is not None else index.evaluate(pv)
    nq = len(index.questions)
    inst_c = index.inst_model * nq + index.inst_question
    unit_c = index.unit_model * nq + index.unit_question
    out = {
        "rows": np.bincount(row_cluster, pv, minlength=n_clusters),
        "allpass": np.bincount(inst_c, allpass, minlength=n_clusters),
    }
    for k in KS:
        sel = index.unit_k == k
        out[f"joint{k}"] = np.bincount(unit_c[sel], joint[sel], minlength=n_clusters)
    return out


def cluster_counts(index: UnitIndex, row_cluster: np.ndarray, n_clusters: int) -> dict[str, np.ndarray]:
    nq = len(index.questions)
    out = {
        "n_rows": np.bincount(row_cluster, minlength=n_clusters).astype(float),
        "n_inst": np.bincount(index.inst_model * nq + index.inst_question, minlength=n_clusters).astype(float),
    }
    unit_c = index.unit_model * nq + index.unit_question
    for k in KS:
        out[f"units{k}"] = np.bincount(unit_c[index.unit_k == k], minlength=n_clusters).astype(float)
    return out


def column_codes(rows: pd.DataFrame, columns) -> np.ndarray:
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
    model's passes on it are correlated, so the judges' labels on the other variants predict
    a row's truth. Bin 0: the target occurs once; 1: the other variants' mean judge label is
    below ½; 2: at least ½.
    """
    codes = column_codes(rows, ("model", "question", "feature", "mode"))
    tot = np.bincount(codes, pv)[codes]
    cnt = np.bincount(codes)[codes]
    with np.errstate(invalid="ignore", divide="ignore"):
        others = (tot - pv) / (cnt - 1)
    return np.where(cnt <= 1, 0, np.where(others < 0.5, 1, 2))


class AuditGroups:
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
        return leave_one_out(np.asarray(v, dtype=float), self.order, self.starts, len(self.code))


def rows_of_items(lay: Layout, ids) -> np.ndarray:
    """The row positions of decided items (each one a row that needs a decision)."""
    slot = sorted_slots(lay.need_iid, np.asarray(ids, dtype=np.int64))
    if (slot < 0).any():
        raise RuntimeError("a decided item is not a row of the design (internal error)")
    return lay.need_pos[slot]


def _clusters(rows: pd.DataFrame, index: UnitIndex, design: Design, g, m, realised: dict | None) -> Clusters:
    """Each row's cluster and each cluster's probability and first-stage draw (hashed, or as
    ``realised`` lists them)."""
    nm, nq = len(index.models), len(index.questions)
    row_model = pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy())
    row_q = pd.Index(index.questions).get_indexer(rows["question"].astype(str).to_numpy())
    row_cluster = row_model * nq + row_q
    n_clusters = nm * nq
    c_model = np.arange(n_clusters) // nq
    has_dis = np.bincount(row_cluster[g != m], minlength=n_clusters) > 0
    c_exists = np.bincount(row_cluster, minlength=n_clusters) > 0
    c_models, c_questions = index.models[c_model], index.questions[np.arange(n_clusters) % nq]
    pi_c = np.where(c_exists, design.cluster_probability(c_models, has_dis), 0.0)
    if realised is None:
        sampled_c = c_exists & design.sampled_clusters(c_models, c_questions, has_dis)
    else:
        picked = set(map(tuple, realised.get("clusters", [])))
        sampled_c = c_exists & np.array([(str(a), str(b)) in picked for a, b in zip(c_models, c_questions)], dtype=bool)
    return Clusters(
        nm=nm,
        nq=nq,
        row_cluster=row_cluster.astype(I32),
        c_model=c_model,
        has_dis=has_dis,
        c_exists=c_exists,
        pi_c=pi_c,
        sampled_c=sampled_c,
    )


def _audits(rows: pd.DataFrame, index: UnitIndex, design: Design, cl: Clusters, g, m, iid, realised: dict | None):
    """Each agreement's π_A, its audit group (by target) and whether the plan audits it."""
    agree = g == m
    row_model = cl.row_model
    pi_a_row = audit_row_probabilities(design, index, rows, g, m)
    a_group, groups = None, None
    if design.audit_unit == "target":
        groups = audit_groups(
            index.models[row_model],
            index.questions[cl.row_cluster % cl.nq],
            rows["feature"],
            rows["mode"],
            np.where(agree, g, 0.0),
        )
        a_group = np.where(agree, groups[0], -1).astype(I32)
    drawn = (
        design.audited_rows(iid, index.models[row_model], pi_a_row, groups)
        if realised is None
        else pd.Index(iid).isin(list(realised.get("audits", [])))
    )
    return pi_a_row, a_group, agree & cl.sampled_c[cl.row_cluster] & drawn


def _strata(rows: pd.DataFrame, index: UnitIndex, cl: Clusters, g, m) -> Strata:
    """The prediction strata of every row (:class:`Strata`)."""
    dis, agree, row_model, nm = g != m, g == m, cl.row_model, cl.nm
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
    a_stratum = np.where(agree, row_model * 2 + lab, -1)
    a_names = np.array([f"{mm}|agree{k}" for mm in index.models for k in (0, 1)], dtype=object)
    sizes = []
    for mi in range(nm):
        c = np.bincount(a_stratum[agree & (row_model == mi)] - 2 * mi, minlength=2)
        order = np.argsort(-c, kind="stable")
        sizes.append(pd.Series(c[order], index=a_names[2 * mi + order])[lambda s: s > 0])
    del dis
    return Strata(
        d_stratum=d_stratum.astype(I32),
        d_parent=d_parent.astype(I32),
        stratum_parent=stratum_parent,
        a_stratum=a_stratum.astype(I32),
        a_names=a_names,
        a_ctx=np.where(agree, a_stratum * 3 + ctx, -1).astype(I32),
        ctx_stratum=np.arange(2 * nm * 3) // 3,
        agreement_sizes=sizes,
    )


def _needs(cl: Clusters, audit_sel: np.ndarray, iid: np.ndarray, tasks: pd.DataFrame, g, m):
    """The rows that need a decision (sorted by iid), the clusters with one, and a note when
    a sampled row has no task."""
    need = ((g != m) & cl.sampled_c[cl.row_cluster]) | audit_sel
    notes = []
    task_iid = np.sort(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64))
    planned = pd.Index(iid).isin(pd.Index(task_iid))
    if (need & ~planned).any():
        notes.append(
            f"{int((need & ~planned).sum())} instance(s) of sampled questions have no task (judgments changed "
            "after the plan was made?); those questions count as not yet adjudicated"
        )
    has_task = np.bincount(cl.row_cluster[need], minlength=cl.n_clusters) > 0
    need_pos = np.flatnonzero(need)
    order = np.argsort(iid[need_pos], kind="stable")
    need_pos, need_iid = need_pos[order], iid[need_pos][order]
    if len(need_iid) > 1 and bool((need_iid[1:] == need_iid[:-1]).any()):
        raise ValueError("duplicate instance ids among the scored rows (each row must be one instance)")
    return need, has_task, need_pos, need_iid, notes


def _by_fold(fold: np.ndarray, folds: int, g, m, strata: Strata) -> tuple[list, list, list, list]:
    """Per fold: its disagreement rows, its agreement rows, their context codes and agreed labels."""
    dis, agree = g != m, g == m
    dis_of_fold = [np.flatnonzero(dis & (fold == k)).astype(I32) for k in range(folds)]
    agree_of_fold = [np.flatnonzero(agree & (fold == k)).astype(I32) for k in range(folds)]
    binary = bool(np.isin(g[agree], (0.0, 1.0)).all())
    labels = [g[rows].astype(np.int8) if binary else g[rows] for rows in agree_of_fold]
    return dis_of_fold, agree_of_fold, [strata.a_ctx[rows] for rows in agree_of_fold], labels


def design_layout(
    instances: pd.DataFrame,
    tasks: pd.DataFrame,
    design: Design,
    index: UnitIndex,
    g: np.ndarray,
    m: np.ndarray,
    iid: np.ndarray,
    *,
    realised: dict | None = None,
    memo: dict | None = None,
    memo_key: tuple = (),
) -> Layout:
    """The decision-independent arrays of the estimator (module docstring). ``memo``: a dict
    the caller keeps between calls on the same rows (one entry, keyed by the labels, the design
    and the tasks); ``realised``: the realised draws instead of the hashed ones."""
    task_iid = np.sort(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64))
    key = None
    if realised is None and memo is not None:
        key = ("cluster-layout", *memo_key, design.key(), fingerprint(task_iid))
        hit = memo.get("cluster-layout")
        if hit is not None and hit[0] == key and same_as_snapshot(hit[1], g, m, iid):
            return hit[2]
    rows = instances.iloc[index.row_pos]
    cl = _clusters(rows, index, design, g, m, realised)
    pi_a_row, a_group, audit_sel = _audits(rows, index, design, cl, g, m, iid, realised)
    need, has_task, need_pos, need_iid, notes = _needs(cl, audit_sel, iid, tasks, g, m)
    c_models, c_questions = index.models[cl.c_model], index.questions[np.arange(cl.n_clusters) % cl.nq]
    fold = design.fold_of(c_models, c_questions)[cl.row_cluster].astype(np.int8)
    strata = _strata(rows, index, cl, g, m)
    counts = cluster_counts(index, cl.row_cluster, cl.n_clusters)
    den_m = {num: counts[DENOMINATORS[num]].reshape(cl.nm, cl.nq).sum(axis=1) for num in NUMERATORS}
    dis_f, agree_f, ctx_f, lab_f = _by_fold(fold, int(design.folds), g, m, strata)
    need_kind = np.where((g == m)[need_pos], "audit", "disagreement")
    out = Layout(
        n=len(rows),
        clusters=cl,
        pi_a_row=pi_a_row,
        audit_sel=audit_sel,
        need=need,
        has_task=has_task,
        folds=int(design.folds),
        fold=fold,
        strata=strata,
        counts=counts,
        coef=coefficients(den_m),
        notes=notes,
        need_iid=need_iid,
        need_pos=need_pos.astype(I32),
        dis_of_fold=dis_f,
        agree_of_fold=agree_f,
        agree_ctx_of_fold=ctx_f,
        agree_label_of_fold=lab_f,
        dis_per_model=np.bincount(cl.row_model[g != m], minlength=cl.nm),
        audits_per_model=np.bincount(cl.row_model[audit_sel], minlength=cl.nm),
        need_reference=design.second_opinion_reference(need_iid, need_kind, g[need_pos]),
        need_depth=design.opinion_depth(need_kind),
        a_group=a_group,
        need_required=np.where(design.doubled(need_iid), 2, 1),
    )
    if key is not None:
        memo["cluster-layout"] = (key, snapshot(g, m, iid), out)
    return out

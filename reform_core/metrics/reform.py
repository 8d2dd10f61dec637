"""ReFormBench scores: TCPR, EMCR and their reporting tables (docs/metrics.md#benchmark-scores,
#reporting-tables; ReFormBench, arXiv:2610.19693, §3.4–3.5, App. A.1–A.8).

Input frames follow :mod:`reform_core.frames`:

* INSTANCES — one row per (model, instruction, constraint) with at least ``model,
  question, instruction, condition, task_type, feature, mode, baseline_opposed`` and a
  pass column (``p``: calibrated probability, or a judge's 0/1 label column — the engine
  only needs a column name).
* BASELINE — ``model, question, feature``: the features present in each model's
  unconstrained response (used by :func:`mark_baseline_opposed`).

Design: the eligible-unit structure depends only on which targets occur in which variants,
never on the pass values. :func:`build_index` determines it once — instructions and
eligible units as index arrays into the scored rows — and :meth:`UnitIndex.evaluate`
scores any pass vector with vectorised products (``np.multiply.reduceat``). All tables are
grouped sums of those per-instruction / per-unit values. ``loop_reference`` holds the
literal per-unit loop used as a cross-check and benchmark baseline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN, MODES
from reform_core.frames import require_columns as _require
from reform_core.unit_index import KS, UnitIndex, build_index, opposition, same_as_snapshot, snapshot, sorted_slots

TABLE2_COLUMNS = ["model", "tcpr", "emcr", "r1", "r2", "r3", "n_instructions", "n1", "n2", "n3"]


def mark_baseline_opposed(
    instances: pd.DataFrame,
    baseline: pd.DataFrame,
    *,
    annotated: pd.DataFrame | None = None,
    model: str = "model",
    question: str = "question",
    feature: str = "feature",
    mode: str = "mode",
    out: str = "baseline_opposed",
) -> pd.DataFrame:
    """Classify each constraint as baseline-opposed (docs/metrics.md#targets-and-baseline-opposition;
    ReFormBench §3.3, App. A.6).

    With ``P[m,q]`` the features present in model m's baseline response to question q, a
    target (feature, mode) is opposed iff it forbids a feature in ``P[m,q]`` or requires
    one outside it.

    Missing data is not "feature absent" (docs/metrics.md#missing-data): when ``annotated`` is given, rows
    whose (model, question) is not in it get ``<NA>`` (opposition unknown) and are left
    out of EMCR by :func:`build_index`.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with ``model, question, feature, mode``.
    baseline : DataFrame
        BASELINE frame, one row per (model, question, feature) present.
    annotated : DataFrame, optional
        ``model, question`` pairs that have a baseline annotation (default: every pair is
        taken as annotated, the paper's setting).

    Returns
    -------
    DataFrame
        A copy of ``instances`` with the column ``out`` (pandas ``boolean``, ``<NA>`` where
        unknown).
    """
    _require(instances, [model, question, feature, mode], "instances")
    _require(baseline, [model, question, feature], "baseline")
    bad = ~instances[mode].isin(MODES)
    if bad.any():
        raise ValueError(f"column {mode!r} must be one of {MODES}; found {instances.loc[bad, mode].iloc[0]!r}")
    present_keys = pd.MultiIndex.from_frame(baseline[[model, question, feature]].astype(str))
    keys = pd.MultiIndex.from_frame(instances[[model, question, feature]].astype(str))
    present = keys.isin(present_keys)
    result = instances.copy()
    opposed = pd.array(np.where(instances[mode].to_numpy() == "forbid", present, ~present), dtype="boolean")
    if annotated is not None:
        _require(annotated, [model, question], "annotated")
        known = pd.MultiIndex.from_frame(instances[[model, question]].astype(str)).isin(
            pd.MultiIndex.from_frame(annotated[[model, question]].astype(str))
        )
        opposed[~known] = pd.NA
    result[out] = opposed
    return result


def unknown_baseline_targets(
    instances: pd.DataFrame,
    *,
    condition: str | None = CONDITION_MAIN,
    model: str = "model",
    question: str = "question",
    feature: str = "feature",
    mode: str = "mode",
    opposed: str = "baseline_opposed",
    condition_col: str = "condition",
) -> pd.Series:
    """Per model, the targets (question, feature, mode) whose baseline opposition is unknown
    (no baseline annotation): they are left out of EMCR and counted here
    (docs/metrics.md#missing-data).

    Returns
    -------
    Series
        Count per model (every model of the scored rows, 0 where none).
    """
    _require(instances, [model, question, feature, mode, opposed], "instances")
    df = instances if condition is None else instances[instances[condition_col] == condition]
    known, _ = opposition(df[opposed])
    models = pd.Index(sorted(df[model].astype(str).unique()), name=model)
    unknown = df.loc[~known, [model, question, feature, mode]].astype(str).drop_duplicates()
    return unknown.groupby(model).size().reindex(models, fill_value=0).astype(int).rename("no_baseline_targets")


def group_sums(index: UnitIndex, pv: np.ndarray, group: str = "model") -> dict[str, np.ndarray]:
    """Additive per-group sums that every score is a ratio of.

    ``group`` is ``"model"``, ``"task"`` (model × task, code ``model·n_tasks + task``) or
    ``"question"`` (model × question, code ``model·n_questions + question``). Returns
    arrays of length n_groups: ``n_inst, allpass`` and, per K, ``units{K}, joint{K},
    spread{K}, fail{K} (Σ 1 − Ĵ), cover{K} (Σ |I|)``.
    """
    return aggregate(index, *index.evaluate(pv), group=group)


def aggregate(
    index: UnitIndex, allpass: np.ndarray, joint: np.ndarray, spread: np.ndarray | None = None, group: str = "model"
) -> dict[str, np.ndarray]:
    """Group sums of per-instruction ``allpass`` and per-unit ``joint`` / ``spread`` values
    (see :func:`group_sums`; ``spread``/``fail``/``cover`` keys only when ``spread`` is given)."""
    if group == "model":
        n, gi, gu = len(index.models), index.inst_model, index.unit_model
    elif group == "task":
        nt = len(index.tasks)
        n, gi, gu = (
            len(index.models) * nt,
            index.inst_model * nt + index.inst_task,
            index.unit_model * nt + index.unit_task,
        )
    elif group == "question":
        nq = len(index.questions)
        n = len(index.models) * nq
        gi, gu = index.inst_model * nq + index.inst_question, index.unit_model * nq + index.unit_question
    else:
        raise ValueError(f"group must be 'model', 'task' or 'question', got {group!r}")
    out = {"n_inst": np.bincount(gi, minlength=n).astype(float), "allpass": np.bincount(gi, allpass, minlength=n)}
    for k in KS:
        sel = index.unit_k == k
        g = gu[sel]
        out[f"units{k}"] = np.bincount(g, minlength=n).astype(float)
        out[f"joint{k}"] = np.bincount(g, joint[sel], minlength=n)
        if spread is not None:
            out[f"spread{k}"] = np.bincount(g, spread[sel], minlength=n)
            out[f"fail{k}"] = np.bincount(g, 1.0 - joint[sel], minlength=n)
            out[f"cover{k}"] = np.bincount(g, index.unit_cover[sel], minlength=n)
    return out


def _ratio(num, den) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def rates_from_sums(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TCPR, R1..R3 and EMCR in % from pooled sums (ReFormBench eqs. 1, 4, 5, 9).

    EMCR is NaN where some K has no eligible unit.
    """
    out = {"tcpr": 100 * _ratio(s["allpass"], s["n_inst"])}
    for k in KS:
        out[f"r{k}"] = 100 * _ratio(s[f"joint{k}"], s[f"units{k}"])
    out["emcr"] = (out["r1"] + out["r2"] + out["r3"]) / 3
    return out


def _table(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    r = rates_from_sums(s)
    cols = {
        "tcpr": r["tcpr"],
        "emcr": r["emcr"],
        "r1": r["r1"],
        "r2": r["r2"],
        "r3": r["r3"],
        "n_instructions": s["n_inst"].astype(int),
    }
    for k in KS:
        cols[f"n{k}"] = s[f"units{k}"].astype(int)
    return cols


# --------------------------------------------------------------------------- public API


def _index_and_p(instances, p, index, roles) -> tuple[UnitIndex, np.ndarray]:
    index = index if index is not None else build_index(instances, **roles)
    return index, index.pass_vector(instances, p)


def _table2_from(index: UnitIndex, s: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({"model": index.models, **_table(s)})[TABLE2_COLUMNS]


def _model_sums(index: UnitIndex, task_sums: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    nm, nt = len(index.models), len(index.tasks)
    return {key: v.reshape(nm, nt).sum(axis=1) for key, v in task_sums.items()}


def table2(instances: pd.DataFrame, *, p: str = "p", index: UnitIndex | None = None, **roles) -> pd.DataFrame:
    """Table 2: per model TCPR, EMCR, R^(1..3) (%) and the denominators.

    TCPR = mean_i ∏_j p[i,j]; R^(K) = Σ Ĵ / |U_K| pooled over questions; EMCR =
    (R^(1) + R^(2) + R^(3)) / 3 (ReFormBench eqs. 1–5, 9; docs/metrics.md#benchmark-scores).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame (module docstring); ``p`` names the pass column (calibrated
        probability or one judge's 0/1 labels).
    index : UnitIndex, optional
        A prebuilt :func:`build_index` result for this frame (saves rebuilding).
    **roles
        Column roles and ``condition``, passed to :func:`build_index`.

    Returns
    -------
    DataFrame
        ``model, tcpr, emcr, r1, r2, r3, n_instructions, n1, n2, n3``.
    """
    index, pv = _index_and_p(instances, p, index, roles)
    return _table2_from(index, group_sums(index, pv))


def tcpr(instances: pd.DataFrame, *, p: str = "p", index: UnitIndex | None = None, **roles) -> pd.Series:
    """Three-constraint pass rate per model, % (ReFormBench eqs. 1, 9; docs/metrics.md#tcpr).

    ``TCPR = (1/N) Σ_i ∏_j p[i,j]`` over the instructions of the scored condition.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with ``model, question, instruction, condition, task_type,
        feature, mode, baseline_opposed`` and the pass column ``p`` (values in [0, 1];
        a judge's 0/1 label column works too).
    p : str
        Pass column.
    **roles
        ``condition`` (default ``"main"``) and column roles of :func:`build_index`.

    Returns
    -------
    Series
        TCPR in % indexed by model.
    """
    t = table2(instances, p=p, index=index, **roles)
    return pd.Series(t["tcpr"].to_numpy(), index=pd.Index(t["model"], name="model"), name="tcpr")


def emcr(instances: pd.DataFrame, *, p: str = "p", index: UnitIndex | None = None, **roles) -> pd.Series:
    """Equal-weight multi-constraint correction rate per model, % (ReFormBench eqs. 2–5, 9;
    docs/metrics.md#emcr).

    Eligible units at K: ``S ⊆ T_q``, ``|S| = K``, ``∩_{t∈S} V(q,t) ≠ ∅``,
    ``|∪_{t∈S} V(q,t)| ≥ 2``; ``Ĵ = ∏_{t∈S} ∏_{i∈V(q,t)} p[i,t]``; ``R^(K) = Σ Ĵ / |U_K|``
    pooled over questions; ``EMCR = mean(R^(1), R^(2), R^(3))`` (NaN if some K has no unit).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame as for :func:`tcpr`; ``baseline_opposed`` selects T_q (see
        :func:`mark_baseline_opposed`).
    p : str
        Pass column.
    **roles
        ``condition`` (default ``"main"``) and column roles of :func:`build_index`.

    Returns
    -------
    Series
        EMCR in % indexed by model.
    """
    t = table2(instances, p=p, index=index, **roles)
    return pd.Series(t["emcr"].to_numpy(), index=pd.Index(t["model"], name="model"), name="emcr")


def task_table(
    instances: pd.DataFrame, *, p: str = "p", index: UnitIndex | None = None, overall: str = "overall", **roles
) -> pd.DataFrame:
    """Tables A6/A7: TCPR, EMCR, R^(K) and unit counts per model and task type.

    The overall row of each model pools the task sums (ReFormBench App. A.5.2): TCPR weights
    tasks by instruction count; EMCR pools expected successes and eligible counts within
    each K across tasks before the equal-weight mean. It equals :func:`table2`.

    Returns
    -------
    DataFrame
        ``model, task_type, tcpr, emcr, r1, r2, r3, n_instructions, n1, n2, n3``; tasks
        with no instruction for a model are omitted; ``pooled`` marks the rows over all
        tasks (their ``task_type`` is ``overall``; task names are free text, so a task
        literally named "overall" is told apart by ``pooled``).
    """
    index, pv = _index_and_p(instances, p, index, roles)
    return _task_from(index, group_sums(index, pv, "task"), overall)


def _task_from(index: UnitIndex, s: dict[str, np.ndarray], overall: str = "overall") -> pd.DataFrame:
    nm, nt = len(index.models), len(index.tasks)
    per_task = pd.DataFrame({"model": np.repeat(index.models, nt), "task_type": np.tile(index.tasks, nm), **_table(s)})
    over = pd.DataFrame({"model": index.models, "task_type": overall, **_table(_model_sums(index, s))})
    out = pd.concat(
        [per_task[per_task["n_instructions"] > 0].assign(pooled=False), over.assign(pooled=True)], ignore_index=True
    )
    return out[["model", "task_type"] + TABLE2_COLUMNS[1:] + ["pooled"]]


def _rows_of(instances: pd.DataFrame, column: str, value) -> pd.DataFrame:
    """The rows whose ``column`` equals ``value`` (the frame itself when all do: no copy)."""
    keep = (instances[column] == value).to_numpy()
    return instances if keep.all() else instances[keep]


def task_summary(
    task: pd.DataFrame,
    instances: pd.DataFrame,
    *,
    question: str = "question",
    instruction: str = "instruction",
    task_type: str = "task_type",
    condition: str | None = CONDITION_MAIN,
    condition_col: str = "condition",
    counts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Table A5: per task type, question and instruction counts, mean TCPR and EMCR over
    models (equal weight per model, as in the paper) with how many models each mean covers
    (``models_tcpr``, ``models_emcr`` of ``models`` answering the task; a model whose task
    EMCR is undefined — no eligible unit — is not in the EMCR mean) and the model with the
    highest EMCR.

    Parameters
    ----------
    task : DataFrame
        Output of :func:`task_table`.
    instances : DataFrame
        The INSTANCES frame it was computed from (for the counts).
    counts : DataFrame, optional
        The counts (``questions, instructions`` by task type) when already computed.
    """
    if counts is None:
        df = instances if condition is None else _rows_of(instances, condition_col, condition)
        counts = df.groupby(task_type).agg(questions=(question, "nunique"), instructions=(instruction, "nunique"))
    rows = task[task["task_type"].isin(counts.index)]
    if "pooled" in rows.columns:
        rows = rows[~rows["pooled"].astype(bool)]
    mean = rows.groupby("task_type")[["tcpr", "emcr"]].mean()
    mean["models"] = rows.groupby("task_type")["model"].nunique()
    mean["models_tcpr"] = rows.groupby("task_type")["tcpr"].count()
    mean["models_emcr"] = rows.groupby("task_type")["emcr"].count()
    best = rows.dropna(subset=["emcr"]).sort_values(["task_type", "emcr"]).groupby("task_type").tail(1)
    best = (
        best[["task_type", "model", "emcr"]]
        .set_index("task_type")
        .rename(columns={"model": "best_model", "emcr": "best_emcr"})
    )
    out = counts.join(mean).join(best).reset_index().rename(columns={task_type: "task_type"})
    return out


def coverage_table(
    instances: pd.DataFrame, *, index: UnitIndex | None = None, baseline: pd.DataFrame | None = None, **roles
) -> pd.DataFrame:
    """Table A8: eligible unit counts ``n{K}`` and mean variant coverage ``cover{K}`` =
    mean |I_{q,S}| per K (ReFormBench App. A.6), plus ``positive_annotations`` (rows of the
    BASELINE frame per model) when ``baseline`` is given.
    """
    index = index if index is not None else build_index(instances, **roles)
    return _coverage_from(index, group_sums(index, np.ones(len(index.row_pos))), baseline)


def _coverage_from(index: UnitIndex, s: dict[str, np.ndarray], baseline: pd.DataFrame | None) -> pd.DataFrame:
    out = pd.DataFrame({"model": index.models})
    if baseline is not None:
        _require(baseline, ["model"], "baseline")
        out["positive_annotations"] = (
            out["model"].map(baseline["model"].astype(str).value_counts()).fillna(0).astype(int)
        )
    for k in KS:
        out[f"n{k}"] = s[f"units{k}"].astype(int)
        out[f"cover{k}"] = _ratio(s[f"cover{k}"], s[f"units{k}"])
    return out


def violation_spread(instances: pd.DataFrame, *, p: str = "p", index: UnitIndex | None = None, **roles) -> pd.DataFrame:
    """Table A2: violation spread ``Ĉ^(K) = Σ Ŵ / Σ (1 − Ĵ)`` over eligible units
    (ReFormBench App. A.2 eqs. 11–12), with ``Ŵ = Σ_{i∈I} (1 − ∏_{t∈S_i} p[i,t])``.

    Returns
    -------
    DataFrame
        ``model, c1, c2, c3`` (NaN where no unit is expected to fail) and the pooled
        numerators ``w{K}`` and denominators ``fail{K}``.
    """
    index, pv = _index_and_p(instances, p, index, roles)
    return _spread_from(index, group_sums(index, pv))


def _spread_from(index: UnitIndex, s: dict[str, np.ndarray]) -> pd.DataFrame:
    out = pd.DataFrame({"model": index.models})
    for k in KS:
        out[f"c{k}"] = _ratio(s[f"spread{k}"], s[f"fail{k}"])
    for k in KS:
        out[f"w{k}"], out[f"fail{k}"] = s[f"spread{k}"], s[f"fail{k}"]
    return out


def judge_agreement(
    instances: pd.DataFrame,
    adjudications: pd.DataFrame | None = None,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    choice: str | None = None,
    side_a: str = "A",
    condition: str | None = CONDITION_MAIN,
    condition_col: str = "condition",
    iid: str = "iid",
    total: str = "Total",
    memo: dict | None = None,
) -> pd.DataFrame:
    """Table A3: dual-judge agreement and adjudication outcome per model (ReFormBench App. A.3.1).

    Agreement = share of instances where both labels are present and equal (denominator:
    instances with both labels). An adjudication agrees with judge A when its ``choice``
    equals ``side_a`` (if ``choice`` names a column) or else when its label ``a`` equals judge
    A's label; only adjudications of disagreements count. Shares use the model's number of
    adjudicated samples. A last row ``total`` pools all models. ``memo`` (a dict the caller
    keeps, e.g. a unit index's) keeps the labels' part for the next call on the same labels.

    Returns
    -------
    DataFrame
        ``model, judgments, agreement (%), disagreements, adjudicated, agrees_a,
        agrees_a_pct, agrees_b, agrees_b_pct``.
    """
    _require(instances, ["model", judge_a, judge_b, iid], "instances")
    df = instances if condition is None else _rows_of(instances, condition_col, condition)
    g = pd.to_numeric(df[judge_a], errors="coerce").to_numpy(float)
    m = pd.to_numeric(df[judge_b], errors="coerce").to_numpy(float)
    ids = df[iid].to_numpy()
    key = ("a3", judge_a, judge_b, condition)
    fixed = memo.get("a3") if memo is not None else None
    if fixed is None or fixed[0] != key or not same_as_snapshot(fixed[1], g, m, ids):
        fixed = _a3_labels_part(df, g, m, ids, key, keep=memo is not None)
        if memo is not None:
            memo["a3"] = fixed
    _, _, codes, models, dis, base, lookup = fixed
    at = np.zeros(0, dtype=np.int64)  # the adjudicated disagreements' rows, ascending
    with_a_at = np.zeros(0, dtype=bool)
    if adjudications is not None:
        at, with_a_at = _a3_adjudicated(adjudications, ids, g, dis, lookup, iid=iid, choice=choice, side_a=side_a)
    n_models = len(models)
    adj_n = np.bincount(codes[at], minlength=n_models).astype(np.int64)
    with_a_n = np.bincount(codes[at[with_a_at]], minlength=n_models).astype(np.int64)
    cols = {**base, "adj": adj_n, "with_a": with_a_n, "with_b": adj_n - with_a_n}
    sums = pd.DataFrame(cols, index=pd.Index(models, name="model"))[["both", "agree", "dis", "adj", "with_a", "with_b"]]
    sums.loc[total] = sums.sum()
    return _a3_table(sums)


def _a3_labels_part(
    df: pd.DataFrame, g: np.ndarray, m: np.ndarray, ids: np.ndarray, key: tuple, *, keep: bool
) -> tuple:
    """Table A3's part that depends on the labels alone: ``(key, snapshot of the labels when
    ``keep``, model codes, model names, disagreement mask, per-model counts of rows judged by
    both / agreements / disagreements, (sorted disagreement ids, their rows) or None when ids
    repeat)``."""
    both = ~np.isnan(g) & ~np.isnan(m)
    dis = both & (g != m)
    codes, models = pd.factorize(df["model"].astype(str).to_numpy(), sort=True)
    base = {
        c: np.bincount(codes, v, minlength=len(models)).astype(np.int64)
        for c, v in (("both", both), ("agree", both & (g == m)), ("dis", dis))
    }
    # the disagreements' ids sorted, and their rows in that order: decisions are looked up there
    dis_rows = np.flatnonzero(dis)
    order = np.argsort(ids[dis_rows], kind="stable")
    dis_ids, dis_rows = ids[dis_rows][order], dis_rows[order]
    unique = len(dis_ids) < 2 or not bool((dis_ids[1:] == dis_ids[:-1]).any())
    return (
        key,
        snapshot(g, m, ids) if keep else None,
        codes.astype(np.int32),
        np.asarray(models, dtype=object),
        dis,
        base,
        (dis_ids, dis_rows) if unique else None,
    )


def _a3_adjudicated(
    adjudications: pd.DataFrame,
    ids: np.ndarray,
    g: np.ndarray,
    dis: np.ndarray,
    lookup,
    *,
    iid: str,
    choice: str | None,
    side_a: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the adjudicated disagreements (ascending; an id's last decision counts) and
    whether each decision agrees with judge A."""
    _require(adjudications, [iid] + ([choice] if choice else ["a"]), "adjudications")
    adj = adjudications.drop_duplicates(iid, keep="last").set_index(iid)
    if lookup is not None and lookup[0].dtype.kind in "iu" and adj.index.dtype.kind in "iu":
        dis_ids, dis_rows = lookup
        slot = sorted_slots(dis_ids, adj.index.to_numpy())
        at = np.sort(dis_rows[slot[slot >= 0]])
    else:  # ids that are not integers, or repeated: the general path
        at = np.flatnonzero(pd.Index(ids).isin(adj.index) & dis)
    if choice:
        side = pd.Series(ids[at]).map(adj[choice].astype(str)).to_numpy()
        return at, side == side_a
    label = pd.Series(ids[at]).map(adj["a"]).to_numpy(dtype=float)
    return at, label == g[at]


def _a3_table(sums: pd.DataFrame) -> pd.DataFrame:
    """Table A3 from its per-model counts (and the total row): shares in percent."""
    return pd.DataFrame(
        {
            "model": sums.index,
            "judgments": sums["both"].to_numpy(int),
            "agreement": 100 * _ratio(sums["agree"], sums["both"]),
            "disagreements": sums["dis"].to_numpy(int),
            "adjudicated": sums["adj"].to_numpy(int),
            "agrees_a": sums["with_a"].to_numpy(int),
            "agrees_a_pct": 100 * _ratio(sums["with_a"], sums["adj"]),
            "agrees_b": sums["with_b"].to_numpy(int),
            "agrees_b_pct": 100 * _ratio(sums["with_b"], sums["adj"]),
        }
    )


def rank_comparison(table: pd.DataFrame, *, a: str = "tcpr", b: str = "emcr") -> pd.DataFrame:
    """Model pairs that metrics ``a`` and ``b`` order differently (ReFormBench §4.2;
    docs/metrics.md#rank-comparison).

    Parameters
    ----------
    table : DataFrame
        One row per model with columns ``model``, ``a`` and ``b`` (e.g. :func:`table2`).

    Returns
    -------
    DataFrame
        One row per discordant pair: ``model_1, model_2`` (model_1 higher on ``a``),
        ``{a}_1, {a}_2, {b}_1, {b}_2``, and ``rank_{a}_1 …`` ranks (1 = best).
    """
    _require(table, ["model", a, b], "table")
    t = table[["model", a, b]].reset_index(drop=True)
    t[f"rank_{a}"] = t[a].rank(ascending=False, method="min")
    t[f"rank_{b}"] = t[b].rank(ascending=False, method="min")
    i, j = np.triu_indices(len(t), 1)
    da = t[a].to_numpy()[i] - t[a].to_numpy()[j]
    db = t[b].to_numpy()[i] - t[b].to_numpy()[j]
    sel = da * db < 0
    i, j = np.where(da[sel] > 0, i[sel], j[sel]), np.where(da[sel] > 0, j[sel], i[sel])
    first, second = t.iloc[i].reset_index(drop=True), t.iloc[j].reset_index(drop=True)
    out = pd.DataFrame({"model_1": first["model"], "model_2": second["model"]})
    for col in (a, b, f"rank_{a}", f"rank_{b}"):
        out[f"{col}_1"], out[f"{col}_2"] = first[col], second[col]
    return out


def reform_tables(
    instances: pd.DataFrame,
    *,
    p: str = "p",
    baseline: pd.DataFrame | None = None,
    adjudications: pd.DataFrame | None = None,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    choice: str | None = None,
    index: UnitIndex | None = None,
    evaluation: tuple | None = None,
    **roles,
) -> dict[str, pd.DataFrame]:
    """Every ReFormBench table from one index and one evaluation of ``p``.

    ``evaluation``: ``index.evaluate`` of ``p``'s pass vector where the caller already has it
    (the default estimator computes it with its point estimates).

    Returns a dict: ``table2`` (:func:`table2`), ``a2`` (:func:`violation_spread`),
    ``a5`` (:func:`task_summary`), ``a6_a7`` (:func:`task_table`), ``a8``
    (:func:`coverage_table`), ``ranks`` (:func:`rank_comparison`) and, when both judge
    label columns are present, ``a3`` (:func:`judge_agreement`).
    """
    index, pv = _index_and_p(instances, p, index, roles)
    if evaluation is not None and tuple(map(len, evaluation)) == (
        len(index.inst_starts),
        len(index.unit_k),
        len(index.unit_k),
    ):
        task_sums = aggregate(index, *evaluation, group="task")
    else:
        task_sums = group_sums(index, pv, "task")
    s = _model_sums(index, task_sums)
    t2 = _table2_from(index, s)
    task = _task_from(index, task_sums)
    condition = roles.get("condition", CONDITION_MAIN)
    out = {
        "table2": t2,
        "a2": _spread_from(index, s),
        "a5": task_summary(
            task,
            instances,
            condition=condition,
            counts=_a5_counts(index, instances, condition, roles.get("condition_col", "condition")),
        ),
        "a6_a7": task,
        "a8": _coverage_from(index, s, baseline),
        "ranks": rank_comparison(t2),
    }
    if judge_a in instances.columns and judge_b in instances.columns:
        out["a3"] = judge_agreement(
            instances,
            adjudications,
            judge_a=judge_a,
            judge_b=judge_b,
            choice=choice,
            condition=condition,
            memo=index.memo,
        )
    return out


def _a5_counts(index: UnitIndex, instances: pd.DataFrame, condition, condition_col: str) -> pd.DataFrame:
    """Questions and instructions per task type of the index's rows of ``condition`` (kept with the index)."""
    got = index.memo.get("a5-counts")
    if got is None or got[0] != condition:
        df = instances.iloc[index.row_pos]
        df = df if condition is None else _rows_of(df, condition_col, condition)
        got = (
            condition,
            df.groupby("task_type").agg(questions=("question", "nunique"), instructions=("instruction", "nunique")),
        )
        index.memo["a5-counts"] = got
    return got[1]

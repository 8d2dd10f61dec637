"""Constraint composition (Table 3) and prompting comparison (Figure 4) —
docs/metrics.md#composition and #prompting-comparison; ReFormBench (arXiv:2610.19693) §4.3,
§4.4 and App. A.8.

Frames follow :mod:`reform_core.frames` (INSTANCES). Single-constraint versions of a main
instruction share its ``pair_group`` and keep the constraint's ``position``; so do
prompted versions. An empty ``pair_group`` falls back to the instruction key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN
from reform_core.frames import require_columns as _require
from reform_core.metrics.reform import group_sums, rates_from_sums
from reform_core.unit_index import KS, build_index, opposition

METRICS = ("tcpr", "emcr", "r1", "r2", "r3")


def _pair_key(df: pd.DataFrame, pair_group: str, instruction: str) -> pd.Series:
    group = df[pair_group].astype(str)
    return group.where(df[pair_group].notna() & (group != ""), df[instruction].astype(str))


def _probabilities(df: pd.DataFrame, p: str) -> np.ndarray:
    x = pd.to_numeric(df[p], errors="coerce").to_numpy(dtype=float)
    if (np.isnan(x) | (x < 0) | (x > 1)).any():
        raise ValueError(f"column {p!r} must hold pass probabilities in [0, 1] (no missing values)")
    return x


def composition_table(
    instances: pd.DataFrame,
    *,
    p: str = "p",
    single: str = "single",
    joint: str = CONDITION_MAIN,
    model: str = "model",
    instruction: str = "instruction",
    pair_group: str = "pair_group",
    position: str = "position",
    opposed: str = "baseline_opposed",
    condition_col: str = "condition",
) -> pd.DataFrame:
    """Table 3: separate versus joint answering of the same constraints.

    ``P^(a) = (1/N) Σ_i ∏_j p^(a)[i,j]`` for a ∈ {single, joint} over the N pair groups
    (ReFormBench App. A.8 eq. 15); target pass rates are mean p over the baseline-opposed and
    baseline-aligned constraints; group gap = opposed − aligned; Δ = joint − separate in pp
    from unrounded values (§4.3).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES with both conditions; each single-constraint row pairs with the joint
        row of the same ``(model, pair_group, position)``.

    Returns
    -------
    DataFrame
        ``model, measure`` (``all_pass, opposed, aligned, gap``), ``separate, joint,
        delta_pp`` (%), ``n`` (pair groups for ``all_pass``, targets otherwise); one block per
        model that has single-constraint rows.

    Raises
    ------
    ValueError
        If a pair group's single-constraint positions differ from its joint positions.
    """
    _require(instances, [p, model, instruction, pair_group, position, opposed, condition_col], "instances")
    cond = instances[condition_col]
    s = instances[cond == single].assign(_key=lambda d: _pair_key(d, pair_group, instruction))
    if s.empty:
        raise ValueError(f"no instance has {condition_col} == {single!r}")
    j = instances[cond == joint].assign(_key=lambda d: _pair_key(d, pair_group, instruction))
    j = j[j[model].isin(s[model].unique())]
    keys = [model, "_key", position]
    merged = s[keys + [p, opposed]].merge(j[keys + [p]], on=keys, how="outer", suffixes=("_s", "_j"), indicator=True)
    groups = (merged["_merge"] == "both").groupby([merged[model], merged["_key"]]).all()
    single_groups = s.groupby([model, "_key"]).size().index
    bad = groups.index.isin(single_groups) & ~groups.to_numpy()
    if bad.any():
        m, g = groups.index[bad][0]
        raise ValueError(
            f"pair group {g!r} of model {m!r}: single-constraint positions do not match the joint instruction"
        )
    merged = merged[merged["_merge"] == "both"].copy()
    merged["ps"] = _probabilities(merged, f"{p}_s")
    merged["pj"] = _probabilities(merged, f"{p}_j")
    merged["known"], merged["opp"] = opposition(merged[opposed])  # unknown (no baseline annotation): neither group

    rows = []
    for m, d in merged.groupby(model, sort=True):
        prods = d.groupby("_key")[["ps", "pj"]].prod()
        sep_all, joint_all = 100 * prods["ps"].mean(), 100 * prods["pj"].mean()
        opp, ali = d[d["opp"]], d[d["known"] & ~d["opp"]]
        vals = {
            "all_pass": (sep_all, joint_all, len(prods)),
            "opposed": (100 * opp["ps"].mean(), 100 * opp["pj"].mean(), len(opp)),
            "aligned": (100 * ali["ps"].mean(), 100 * ali["pj"].mean(), len(ali)),
        }
        vals["gap"] = (vals["opposed"][0] - vals["aligned"][0], vals["opposed"][1] - vals["aligned"][1], len(d))
        for measure, (a, b, n) in vals.items():
            rows.append({"model": m, "measure": measure, "separate": a, "joint": b, "delta_pp": b - a, "n": n})
    return pd.DataFrame(rows)


def prompting_comparison(
    instances: pd.DataFrame,
    *,
    p: str = "p",
    base: str = CONDITION_MAIN,
    other: str = "prompted",
    model: str = "model",
    instruction: str = "instruction",
    pair_group: str = "pair_group",
    position: str = "position",
    condition_col: str = "condition",
    **roles,
) -> pd.DataFrame:
    """Prompting comparison: two conditions on the same instructions (ReFormBench §4.4).

    The baseline, the target links and hence the eligible units are those of the ``base``
    condition; the ``other`` condition's pass values are mapped onto the same rows by
    ``(model, pair_group, position)``, so both conditions are scored on identical
    denominators. Differences are in pp from unrounded values.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES with both conditions (the other condition's rows need ``p``,
        ``pair_group`` and ``position`` only).
    **roles
        Further column roles of :func:`reform_core.unit_index.build_index`.

    Returns
    -------
    DataFrame
        ``model, metric`` (``tcpr, emcr, r1, r2, r3``), ``base, other, diff_pp`` and the
        shared denominator ``n`` (instructions for TCPR, eligible units for R^(K), their
        sum for EMCR); one block per model with rows in ``other``.

    Raises
    ------
    ValueError
        If a base row of such a model has no counterpart in ``other``.
    """
    _require(instances, [p, model, instruction, pair_group, position, condition_col], "instances")
    o = instances[instances[condition_col] == other]
    if o.empty:
        raise ValueError(f"no instance has {condition_col} == {other!r}")
    keep = instances[model].isin(o[model].unique()).to_numpy()
    frame = instances[keep]
    index = build_index(
        frame, condition=base, model=model, instruction=instruction, condition_col=condition_col, **roles
    )
    b = frame[[model, pair_group, instruction, position]].iloc[index.row_pos]
    base_key = pd.MultiIndex.from_arrays([b[model].astype(str), _pair_key(b, pair_group, instruction), b[position]])
    o_key = pd.MultiIndex.from_arrays([o[model].astype(str), _pair_key(o, pair_group, instruction), o[position]])
    if o_key.duplicated().any():
        raise ValueError(f"condition {other!r} has duplicate (model, pair_group, position) rows")
    pos = o_key.get_indexer(base_key)
    if (pos < 0).any():
        r = b.iloc[int(np.flatnonzero(pos < 0)[0])]
        raise ValueError(
            f"no {other!r} row for model {r[model]!r}, instruction {r[instruction]!r}, position {r[position]!r}"
        )
    pv_base = index.pass_vector(frame, p)
    pv_other = _probabilities(o, p)[pos]
    sb, so = group_sums(index, pv_base), group_sums(index, pv_other)
    rb, ro = rates_from_sums(sb), rates_from_sums(so)
    n = {"tcpr": sb["n_inst"], **{f"r{k}": sb[f"units{k}"] for k in KS}}
    n["emcr"] = sum(sb[f"units{k}"] for k in KS)
    rows = [
        {
            "model": m,
            "metric": metric,
            "base": rb[metric][i],
            "other": ro[metric][i],
            "diff_pp": ro[metric][i] - rb[metric][i],
            "n": int(n[metric][i]),
        }
        for i, m in enumerate(index.models)
        for metric in METRICS
    ]
    return pd.DataFrame(rows)

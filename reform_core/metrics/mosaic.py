"""MOSAIC metrics over modular constraint lists (SPEC §6; seed 003 §3.2, §4).

Input: a long frame with one row per (response, constraint) —

    response   prompt/response id r
    constraint constraint id c
    position   1-based position p of c in the prompt's constraint list
    score      checker or judge score in [0, 1]; binarised as ``score >= 0.5`` (seed 003 §3.3)

plus optional grouping columns (e.g. ``model``) named in ``by``. Each function takes the
column roles as keyword arguments and returns a tidy DataFrame.
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

THRESHOLD = 0.5


def _by_list(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _prepare(df: pd.DataFrame, cols: dict[str, str], by: list[str]) -> pd.DataFrame:
    """Validate the frame and add the binary outcome column ``_y``."""
    needed = list(cols.values()) + by
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"missing column(s) {missing}; frame has {list(df.columns)}")
    score = pd.to_numeric(df[cols["score"]], errors="coerce")
    bad = score.isna() | (score < 0) | (score > 1)
    if bad.any():
        raise ValueError(
            f"column {cols['score']!r}: scores must be numbers in [0, 1]; "
            f"bad value {df[cols['score']][bad].tolist()[0]!r} in row {df.index[bad].tolist()[0]!r}"
        )
    keys = by + [cols["response"], cols["constraint"]]
    dup = df.duplicated(keys)
    if dup.any():
        row = df.loc[dup, keys].iloc[0].tolist()
        raise ValueError(f"columns {keys}: (response, constraint) {row} occurs more than once")
    out = df[needed].copy()
    out["_y"] = (score >= THRESHOLD).astype(int)
    return out


def _groups(frame: pd.DataFrame, by: list[str]):
    if not by:
        yield (), frame
        return
    for key, part in frame.groupby(by, sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), part


def _finish(rows: list[dict], by: list[str], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=by + columns)


def _wide(part: pd.DataFrame, response: str, constraint: str) -> pd.DataFrame:
    """Binary outcomes: rows = responses, columns = constraints, NaN where c is absent."""
    return part.pivot(index=response, columns=constraint, values="_y")


def scc(
    df: pd.DataFrame,
    *,
    response: str = "response",
    constraint: str = "constraint",
    score: str = "score",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Single-constraint compliance SCC_c = Σ_r is_followed(c, r) / |R_c| (seed 003 §3.2).

    R_c are the responses whose prompt contains c. Returns columns
    ``[*by, constraint, n, scc]``.
    """
    by = _by_list(by)
    frame = _prepare(df, {"response": response, "constraint": constraint, "score": score}, by)
    rows = []
    for key, part in _groups(frame, by):
        for c, y in part.groupby(constraint, sort=True)["_y"]:
            rows.append({**dict(zip(by, key)), constraint: c, "n": len(y), "scc": y.mean()})
    return _finish(rows, by, [constraint, "n", "scc"])


def pcc(
    df: pd.DataFrame,
    *,
    response: str = "response",
    constraint: str = "constraint",
    score: str = "score",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Pairwise compliance PCC_{ci,cj}: share of responses following both (seed 003 §3.2).

    Over the responses whose prompt contains both constraints (SPEC §6). One row per
    unordered pair that co-occurs at least once, ``constraint_i < constraint_j``:
    columns ``[*by, constraint_i, constraint_j, n, pcc]``.
    """
    by = _by_list(by)
    frame = _prepare(df, {"response": response, "constraint": constraint, "score": score}, by)
    rows = []
    for key, part in _groups(frame, by):
        wide = _wide(part, response, constraint)
        for ci, cj in combinations(sorted(wide.columns), 2):
            both = wide[[ci, cj]].dropna()
            if len(both):
                rows.append(
                    {**dict(zip(by, key)), "constraint_i": ci, "constraint_j": cj, "n": len(both),
                     "pcc": float((both[ci] * both[cj]).mean())}
                )
    return _finish(rows, by, ["constraint_i", "constraint_j", "n", "pcc"])


def poscc(
    df: pd.DataFrame,
    *,
    response: str = "response",
    constraint: str = "constraint",
    position: str = "position",
    score: str = "score",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Positional compliance PosCC_p = Σ_{r∈R_p} is_followed(c_{r,p}, r) / |R_p| (seed 003 §3.2).

    R_p are the responses with at least p constraints. Positions must run 1..|C_r| within
    each response. Columns ``[*by, position, n, poscc]``.
    """
    by = _by_list(by)
    cols = {"response": response, "constraint": constraint, "position": position, "score": score}
    frame = _prepare(df, cols, by)
    pos = pd.to_numeric(frame[position], errors="coerce")
    if pos.isna().any() or (pos != pos.round()).any():
        raise ValueError(f"column {position!r}: positions must be integers")
    frame[position] = pos.astype(int)
    for key, part in frame.groupby(by + [response], sort=False):
        got = sorted(part[position].tolist())
        if got != list(range(1, len(got) + 1)):
            name = key[-1] if isinstance(key, tuple) else key
            raise ValueError(
                f"column {position!r}: response {name!r} has positions {got}, expected 1..{len(got)}"
                + (f" (group {dict(zip(by, key))})" if by else "")
            )
    rows = []
    for key, part in _groups(frame, by):
        for p, y in part.groupby(position, sort=True)["_y"]:
            rows.append({**dict(zip(by, key)), position: int(p), "n": len(y), "poscc": y.mean()})
    return _finish(rows, by, [position, "n", "poscc"])


def prompt_accuracy(
    df: pd.DataFrame,
    *,
    response: str = "response",
    constraint: str = "constraint",
    score: str = "score",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Prompt-level accuracy PA_r = followed / |C_r| (SPEC §6; seed 003 §3.2, Kovalevskyi 2024).

    Columns ``[*by, response, n_constraints, followed, pa]``.
    """
    by = _by_list(by)
    frame = _prepare(df, {"response": response, "constraint": constraint, "score": score}, by)
    agg = frame.groupby(by + [response], sort=True)["_y"].agg(n_constraints="size", followed="sum").reset_index()
    agg["pa"] = agg["followed"] / agg["n_constraints"]
    return agg[by + [response, "n_constraints", "followed", "pa"]]


def constraint_correlations(
    df: pd.DataFrame,
    *,
    response: str = "response",
    constraint: str = "constraint",
    score: str = "score",
    by: str | Sequence[str] | None = None,
    min_n: int = 3,
) -> pd.DataFrame:
    """Pearson correlation of two constraints' binary outcomes, with p-value (seed 003 §4).

    Over the responses containing both constraints, via ``scipy.stats.pearsonr`` (two-sided
    p-value). ``r`` and ``p_value`` are NaN when fewer than ``min_n`` responses share the
    pair or either outcome is constant. Columns
    ``[*by, constraint_i, constraint_j, n, r, p_value]``.
    """
    if min_n < 3:
        raise ValueError(f"min_n: a correlation needs at least 3 responses, got {min_n}")
    by = _by_list(by)
    frame = _prepare(df, {"response": response, "constraint": constraint, "score": score}, by)
    rows = []
    for key, part in _groups(frame, by):
        wide = _wide(part, response, constraint)
        for ci, cj in combinations(sorted(wide.columns), 2):
            both = wide[[ci, cj]].dropna()
            if not len(both):
                continue
            r = p = np.nan
            if len(both) >= min_n and both[ci].nunique() > 1 and both[cj].nunique() > 1:
                res = stats.pearsonr(both[ci].to_numpy(float), both[cj].to_numpy(float))
                r, p = float(res.statistic), float(res.pvalue)
            rows.append(
                {**dict(zip(by, key)), "constraint_i": ci, "constraint_j": cj, "n": len(both), "r": r, "p_value": p}
            )
    return _finish(rows, by, ["constraint_i", "constraint_j", "n", "r", "p_value"])

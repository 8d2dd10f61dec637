"""MOSAIC metrics over modular constraint lists (docs/metrics.md#mosaic-scores; MOSAIC,
arXiv:2601.18554, §3.2, §4).

Input: a long frame with one row per (response, constraint) —

    response   prompt/response id r
    constraint constraint id c
    position   1-based position p of c in the prompt's constraint list
    score      checker or judge score in [0, 1]; binarised as ``score >= 0.5`` (MOSAIC §3.3)

plus optional grouping columns (e.g. ``model``) named in ``by``. Each function takes the
column roles as keyword arguments and returns a tidy DataFrame.
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

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
    """Single-constraint compliance SCC_c = Σ_r is_followed(c, r) / |R_c| (MOSAIC §3.2).

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
    """Pairwise compliance PCC_{ci,cj}: share of responses following both (MOSAIC §3.2).

    Over the responses whose prompt contains both constraints (docs/metrics.md#mosaic-scores). One row per
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
                    {
                        **dict(zip(by, key)),
                        "constraint_i": ci,
                        "constraint_j": cj,
                        "n": len(both),
                        "pcc": float((both[ci] * both[cj]).mean()),
                    }
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
    """Positional compliance PosCC_p = Σ_{r∈R_p} is_followed(c_{r,p}, r) / |R_p| (MOSAIC §3.2).

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
    """Prompt-level accuracy PA_r = followed / |C_r| (docs/metrics.md#mosaic-scores; MOSAIC §3.2,
    Kovalevskyi 2024).

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
    """Pearson correlation of two constraints' binary outcomes, with p-value (MOSAIC §4).

    Over the responses containing both constraints, via ``scipy.stats.pearsonr`` (two-sided
    p-value). ``r`` and ``p_value`` are NaN when fewer than ``min_n`` responses share the
    pair or either outcome is constant. Columns
    ``[*by, constraint_i, constraint_j, n, r, p_value]``.
    """
    if min_n < 3:
        raise ValueError(f"min_n: a correlation needs at least 3 responses, got {min_n}")
    from scipy.stats import pearsonr  # imported when used: a slow import

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
                res = pearsonr(both[ci].to_numpy(float), both[cj].to_numpy(float))
                r, p = float(res.statistic), float(res.pvalue)
            rows.append(
                {**dict(zip(by, key)), "constraint_i": ci, "constraint_j": cj, "n": len(both), "r": r, "p_value": p}
            )
    return _finish(rows, by, ["constraint_i", "constraint_j", "n", "r", "p_value"])


# --------------------------------------------------------------------------- intervals


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _estimate(
    num: np.ndarray,
    den: np.ndarray,
    *,
    w: np.ndarray | None = None,
    reps: np.ndarray | None = None,
    level: float,
    what: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point ``Σ num / Σ den`` per column and the percentile interval of its replicates.

    Replicates are ``w @ num / w @ den`` for bootstrap weights ``w`` (float32 products of
    integers, converted before dividing), or given as ``reps``; a replicate with an empty
    denominator is undefined, and a column undefined in too many replicates gets NaN bounds
    (``agreement.percentile_interval``)."""
    from reform_core.agreement import percentile_interval

    point = _ratio(num.sum(axis=0), den.sum(axis=0))
    lo, hi = np.full(num.shape[1], np.nan), np.full(num.shape[1], np.nan)
    if w is not None:
        reps = _ratio((w @ num.astype(np.float32)).astype(float), (w @ den.astype(np.float32)).astype(float))
    if reps is not None:
        reps = reps.reshape(len(reps), -1)
        for j in range(reps.shape[1]):
            try:
                lo[j], hi[j] = percentile_interval(reps[:, j], level=level, what=what)
            except ValueError:
                pass
    return point, lo, hi


def study_metrics(
    df: pd.DataFrame,
    *,
    prompt: str = "prompt",
    constraint: str = "constraint",
    position: str = "position",
    score: str = "score",
    by: str | Sequence[str] | None = None,
    n_boot: int = 0,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> dict[str, pd.DataFrame]:
    """PA, SCC, PosCC and PCC with percentile bootstrap intervals over prompts.

    The point values are those of :func:`prompt_accuracy` (mean PA_r), :func:`scc`,
    :func:`poscc` and :func:`pcc` (MOSAIC §3.2; docs/metrics.md#mosaic-scores), written as weighted ratios
    ``Σ_r w_r·followed / Σ_r w_r·present`` with unit weights. A replicate draws the study's
    prompts with replacement (multinomial counts ``w``, :func:`reform_core.agreement.item_bootstrap_weights`);
    one draw serves every group of ``by`` (e.g. every model), so the groups stay matched.

    Rows are checked (response, constraint) pairs; a response is one prompt within a group.
    A constraint without a row (not checked) is left out: PA_r is the share followed among
    the checked constraints of r, PosCC_p is taken over the responses with a checked
    constraint at position p (with complete checks: the responses with at least p
    constraints, as in the paper). ``all_followed`` is the share of responses following
    every checked constraint (prompt-level accuracy in Kovalevskyi's strict sense).

    Returns ``{"pa": [*by, n, pa, all_followed, pa_low, pa_high, all_followed_low,
    all_followed_high], "scc": [*by, constraint, n, scc, ci_low, ci_high], "poscc": [*by,
    position, n, poscc, ci_low, ci_high], "pcc": [*by, constraint_i, constraint_j, n, pcc,
    ci_low, ci_high]}`` (shares in [0, 1]; intervals NaN when ``n_boot`` is 0 or the
    statistic is undefined in too many replicates).
    """
    by = _by_list(by)
    frame = _study_frame(df, by, prompt=prompt, constraint=constraint, position=position, score=score)
    if n_boot and not isinstance(rng, np.random.Generator):
        raise ValueError("study_metrics: intervals need rng=numpy.random.default_rng(seed)")
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level!r}")
    prompts = pd.Index(sorted(frame[prompt].unique()))
    weights = _prompt_weights(len(prompts), n_boot, rng)
    out: dict[str, list[dict]] = {"pa": [], "scc": [], "poscc": [], "pcc": []}
    for key, part in _groups(frame, by):
        tag = dict(zip(by, key))
        y = part.pivot(index=prompt, columns=constraint, values="_y")
        p = part.pivot(index=prompt, columns=position, values="_y").reindex(index=y.index)
        w = weights[:, prompts.get_indexer(y.index)] if weights is not None else None
        out["pa"].append(_pa_row(tag, y, w, level))
        for what, table, label in (("scc", y, constraint), ("poscc", p, position)):
            out[what] += _cell_rows(tag, table, label, what, w, level)
        out["pcc"] += _pcc_rows(tag, y, w, level)
    columns = {
        "pa": ["n", "pa", "all_followed", "pa_low", "pa_high", "all_followed_low", "all_followed_high"],
        "scc": [constraint, "n", "scc", "ci_low", "ci_high"],
        "poscc": [position, "n", "poscc", "ci_low", "ci_high"],
        "pcc": ["constraint_i", "constraint_j", "n", "pcc", "ci_low", "ci_high"],
    }
    return {k: _finish(out[k], by, columns[k]) for k in columns}


def _study_frame(
    df: pd.DataFrame, by: list[str], *, prompt: str, constraint: str, position: str, score: str
) -> pd.DataFrame:
    """The checked rows with the binary outcome ``_y`` (:func:`_prepare`) and integer positions;
    ValueError on a position that is not an integer >= 1 or occurs twice in a prompt."""
    cols = {"response": prompt, "constraint": constraint, "position": position, "score": score}
    frame = _prepare(df, cols, by)
    pos = pd.to_numeric(frame[position], errors="coerce")
    if pos.isna().any() or (pos != pos.round()).any() or (pos < 1).any():
        raise ValueError(f"column {position!r}: positions must be integers >= 1")
    frame[position] = pos.astype(int)
    dup = frame.duplicated(by + [prompt, position])
    if dup.any():
        row = frame.loc[dup, by + [prompt, position]].iloc[0].tolist()
        raise ValueError(f"columns {by + [prompt, position]}: position {row} occurs more than once")
    return frame


def _prompt_weights(n_prompts: int, n_boot: int, rng: np.random.Generator | None) -> np.ndarray | None:
    """The replicates' multinomial counts of the study's prompts (``n_boot`` × prompts,
    :func:`reform_core.agreement.item_bootstrap_weights`), None without replicates."""
    if not (n_boot and n_prompts):
        return None
    from reform_core.agreement import item_bootstrap_weights

    # counts times 0/1 sums stay integers far below 2**24: exact in float32, at half the cost
    return item_bootstrap_weights(n_prompts, int(n_boot), rng).astype(np.float32)


def _pa_row(tag: dict, y: pd.DataFrame, w: np.ndarray | None, level: float) -> dict:
    """One group's ``pa`` row: mean PA_r and the all-followed share over its prompts ``y``
    (prompts × constraints, NaN where not checked), with their intervals."""
    present = y.notna().to_numpy(float)
    followed = y.fillna(0).to_numpy(float)
    n_checked = present.sum(axis=1)
    row = {**tag, "n": len(y)}
    for name, values in (
        ("pa", followed.sum(axis=1) / n_checked),
        ("all_followed", (followed.sum(axis=1) == n_checked).astype(float)),
    ):
        reps = None if w is None else _ratio(w.astype(float) @ values, w.sum(axis=1, dtype=float))
        est, lo, hi = _estimate(values[:, None], np.ones((len(y), 1)), reps=reps, level=level, what=name)
        row[name], row[f"{name}_low"], row[f"{name}_high"] = est[0], lo[0], hi[0]
    return row


def _cell_rows(tag: dict, table: pd.DataFrame, label: str, what: str, w: np.ndarray | None, level: float) -> list[dict]:
    """One group's rows of SCC (``table``: prompts × constraints) or PosCC (prompts ×
    positions): per column the share followed among the prompts checking it, with its interval."""
    pres = table.notna().to_numpy(float)
    est, lo, hi = _estimate(table.fillna(0).to_numpy(float), pres, w=w, level=level, what=what)
    return [
        {**tag, label: c, "n": int(pres[:, j].sum()), what: est[j], "ci_low": lo[j], "ci_high": hi[j]}
        for j, c in enumerate(table.columns)
    ]


def _pcc_rows(tag: dict, y: pd.DataFrame, w: np.ndarray | None, level: float) -> list[dict]:
    """One group's PCC rows: per pair of constraints checked together in some prompt, the
    share of those prompts following both, with its interval."""
    present = y.notna().to_numpy(float)
    followed = y.fillna(0).to_numpy(float)
    pairs = [(i, j) for i, j in combinations(range(y.shape[1]), 2) if (present[:, i] * present[:, j]).any()]
    if not pairs:
        return []
    a, b = np.array(pairs).T
    both = present[:, a] * present[:, b]
    est, lo, hi = _estimate(followed[:, a] * followed[:, b], both, w=w, level=level, what="pcc")
    names = list(y.columns)
    return [
        {
            **tag,
            "constraint_i": names[i],
            "constraint_j": names[j],
            "n": int(both[:, k].sum()),
            "pcc": est[k],
            "ci_low": lo[k],
            "ci_high": hi[k],
        }
        for k, (i, j) in enumerate(pairs)
    ]

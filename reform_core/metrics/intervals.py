"""95 % intervals for TCPR, EMCR, R^(K) and the constraint level per model (docs/metrics.md#intervals).

Cluster bootstrap over questions: a replicate resamples the questions with replacement
(multinomial counts ``w_q``, shared by all models so model differences stay paired) and
recomputes every score as a ratio of weighted per-question sums, e.g.
``TCPR* = Σ_q w_q A_q / Σ_q w_q N_q``, ``R^(K)* = Σ_q w_q Ĵ_{q,K} / Σ_q w_q U_{q,K}`` and the
constraint level (mean p over constraints; IFEval's instruction-level accuracy)
``Σ_q w_q P_q / Σ_q w_q C_q`` with P_q the sum of p over a question's constraints, C_q their number.
All replicates are one matrix product ``weights @ per-question sums``.

With stratified calibration the adjudications are also resampled within each reviewed
stratum h (n_h draws with replacement of binary labels, i.e. ``π̂*_h ~ Binomial(n_h,
π̂_h)/n_h``), which changes ``p_u`` of the unreviewed disagreements of h. An instruction's
all-pass product and a unit's Ĵ then factor as ``c · ∏_h π_h^{e_h}`` with ``c`` the product
over the other rows and ``e_h`` the number of its rows in unreviewed stratum h, so each
replicate only needs ``exp(E @ log π*)`` for the items touching such rows. Reviewed and
agreed instances keep their labels; strata without reviews (provisional fallback) keep
their value. Intervals are percentile intervals (Efron & Tibshirani 1993, §13.3).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from reform_core.metrics.reform import aggregate, group_sums, rates_from_sums
from reform_core.unit_index import KS, UnitIndex, build_index

METRICS = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
_SUM_KEYS = ("n_inst", "allpass") + tuple(f"{s}{k}" for k in KS for s in ("units", "joint"))


def _question_matrix(index: UnitIndex, sums: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    nm, nq = len(index.models), len(index.questions)
    return {key: sums[key].reshape(nm, nq) for key in _SUM_KEYS}


def row_strata(
    index: UnitIndex,
    instances: pd.DataFrame,
    rates: pd.DataFrame,
    pv: np.ndarray,
    *,
    stratum: str = "stratum",
    source: str = "source",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map scored rows to the reviewed strata whose π̂_h they carry.

    Parameters
    ----------
    rates : DataFrame
        :func:`reform_core.calibration.stratum_rates` output (``stratum, n_reviewed, pi_hat``).

    Returns
    -------
    (h, pi_hat, n_reviewed)
        ``h[r]`` = stratum number of scored row r if it is an unreviewed disagreement of a
        reviewed stratum (``source == "stratum"``), else -1; and per stratum its π̂_h and
        review count.
    """
    for col in (stratum, source):
        if col not in instances.columns:
            raise ValueError(
                f"instances lack column {col!r}; resampling adjudications needs calibrate_stratified output"
            )
    for col in ("stratum", "n_reviewed", "pi_hat"):
        if col not in rates.columns:
            raise ValueError(f"rates lack column {col!r}; pass stratum_rates(...) output")
    reviewed = rates[rates["n_reviewed"] > 0]
    code = pd.Index(reviewed["stratum"].astype(str))
    df = instances[[stratum, source]].iloc[index.row_pos]
    h = np.where(df[source].to_numpy() == "stratum", code.get_indexer(df[stratum].astype(str)), -1)
    pi_hat = reviewed["pi_hat"].to_numpy(dtype=float)
    if (df[source].to_numpy() == "stratum").any() and (h[df[source].to_numpy() == "stratum"] < 0).any():
        raise ValueError("an unreviewed disagreement's stratum is not among the reviewed strata of rates")
    if (np.abs(pv[h >= 0] - pi_hat[h[h >= 0]]) > 1e-12).any():
        raise ValueError(
            "p of unreviewed disagreements differs from rates['pi_hat']: rates do not match the calibration"
        )
    return h.astype(np.int64), pi_hat, reviewed["n_reviewed"].to_numpy(dtype=np.int64)


def constraint_level_replicates(
    index: UnitIndex,
    pv: np.ndarray,
    weights: np.ndarray,
    *,
    row_stratum: np.ndarray | None = None,
    pi: np.ndarray | None = None,
) -> np.ndarray:
    """The constraint level (%) of each replicate, (B, n_models): Σ_q w_q P*_q / Σ_q w_q C_q, where a
    row of an unreviewed disagreement of reviewed stratum h passes with π*_h (linear in the rows)."""
    nm, nq = len(index.models), len(index.questions)
    inst_of_row = np.repeat(np.arange(len(index.inst_starts)), np.diff(np.r_[index.inst_starts, len(index.inst_rows)]))
    rows = index.inst_rows
    group = index.inst_model[inst_of_row] * nq + index.inst_question[inst_of_row]
    x = pv[rows].astype(float)
    variable = np.zeros(len(rows), dtype=bool) if row_stratum is None or pi is None else row_stratum[rows] >= 0
    x[variable] = 0.0
    count = np.bincount(group, minlength=nm * nq).reshape(nm, nq).astype(float)
    total = np.bincount(group, x, minlength=nm * nq).reshape(nm, nq)
    num, den = weights @ total.T, weights @ count.T
    if variable.any():
        per = sp.csr_matrix(
            (np.ones(int(variable.sum())), (group[variable], row_stratum[rows][variable])), shape=(nm * nq, pi.shape[0])
        )
        for m in range(nm):  # Σ_q w_q Σ_h n_{q,h} π*_h
            num[:, m] += ((per[m * nq : (m + 1) * nq].T @ weights.T).T * pi.T).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 100 * num / np.where(den > 0, den, 1), np.nan)


def point_scores(index: UnitIndex, pv: np.ndarray) -> dict[str, np.ndarray]:
    """The point value (%) of every metric of :data:`METRICS` per model (the replicates' keys)."""
    out = rates_from_sums(group_sums(index, pv))
    out["constraint_level"] = constraint_level_replicates(index, pv, np.ones((1, len(index.questions))))[0]
    return out


def replicate_scores(
    index: UnitIndex,
    pv: np.ndarray,
    weights: np.ndarray,
    *,
    row_stratum: np.ndarray | None = None,
    pi: np.ndarray | None = None,
    chunk: int = 64,
) -> dict[str, np.ndarray]:
    """Scores (%) of bootstrap replicates given question weights and stratum rates.

    Parameters
    ----------
    index : UnitIndex
        From :func:`reform_core.unit_index.build_index`.
    pv : ndarray
        Point pass vector of the indexed rows.
    weights : ndarray, shape (B, n_questions)
        Question multiplicities of each replicate (codes of ``index.questions``).
    row_stratum, pi : ndarray, optional
        ``row_stratum`` from :func:`row_strata`; ``pi`` (n_strata, B) replicate rates π*_h.

    Returns
    -------
    dict
        ``tcpr, emcr, r1, r2, r3, constraint_level`` → arrays (B, n_models); NaN where a
        replicate has no instruction / unit in the denominator.
    """
    return replicate_score_sets(index, pv, [weights], row_stratum=row_stratum, pi=pi, chunk=chunk)[0]


def replicate_score_sets(
    index: UnitIndex,
    pv: np.ndarray,
    weight_sets: list[np.ndarray],
    *,
    row_stratum: np.ndarray | None = None,
    pi: np.ndarray | None = None,
    chunk: int = 64,
) -> list[dict[str, np.ndarray]]:
    """:func:`replicate_scores` for several question-weight matrices with the same rate draws
    ``pi`` (the measurement interval's unit weights and the population interval's bootstrap
    weights): the replicate pass probabilities ``exp(E @ log π*)`` are computed once for all."""
    sets = _weight_sets(index, weight_sets)
    B = sets[0].shape[0]
    variable = row_stratum is not None and pi is not None and (row_stratum >= 0).any()
    pv_fixed = pv.copy()
    if variable:
        pv_fixed[row_stratum >= 0] = 1.0
    allpass, joint, _ = index.evaluate(pv_fixed)

    if variable:
        v = _variable_items(index, len(pv), row_stratum, pi.shape[0])
        fixed_allpass, fixed_joint = np.where(v.var_inst, 0.0, allpass), np.where(v.var_unit, 0.0, joint)
    else:
        fixed_allpass, fixed_joint = allpass, joint

    qs = _question_matrix(index, aggregate(index, fixed_allpass, fixed_joint, group="question"))
    nums = [{key: w @ qs[key].T for key in _SUM_KEYS} for w in sets]  # (B, n_models) each

    if variable:
        nm = len(index.models)
        extras = _variable_sums(index, v, allpass, joint, pi, sets, chunk)
        for num, extra in zip(nums, extras):
            extra = extra.reshape(nm, 4, B)
            num["allpass"] = num["allpass"] + extra[:, 0].T
            for k in KS:
                num[f"joint{k}"] = num[f"joint{k}"] + extra[:, k].T
    outs = []
    for num, w in zip(nums, sets):
        out = rates_from_sums(num)
        out["constraint_level"] = constraint_level_replicates(index, pv, w, row_stratum=row_stratum, pi=pi)
        outs.append(out)
    return outs


def _weight_sets(index: UnitIndex, weight_sets: list[np.ndarray]) -> list[np.ndarray]:
    """The question-weight matrices as float arrays, each checked to be (B, n_questions) with one B."""
    sets = [np.asarray(w, dtype=float) for w in weight_sets]
    for w in sets:
        if w.ndim != 2 or w.shape[1] != len(index.questions):
            raise ValueError(f"weights must have shape (B, {len(index.questions)})")
    B = sets[0].shape[0]
    if any(w.shape[0] != B for w in sets):
        raise ValueError("every weight matrix needs the same number of replicates")
    return sets


class _VariableItems(NamedTuple):
    """Per instance / unit, its number of rows in each drawn-rate stratum, and whether it has any."""

    e_inst: sp.csr_matrix  # (n_inst, H)
    e_unit: sp.csr_matrix  # (n_units, H)
    var_inst: np.ndarray  # bool per instance
    var_unit: np.ndarray  # bool per unit


def _variable_items(index: UnitIndex, n_rows: int, row_stratum: np.ndarray, H: int) -> _VariableItems:
    """The instances and units whose pass probability depends on the drawn stratum rates."""
    n_inst, n_units = len(index.inst_starts), len(index.unit_k)
    inst_of_row = np.empty(n_rows, dtype=np.int64)
    inst_of_row[index.inst_rows] = np.repeat(np.arange(n_inst), np.diff(np.r_[index.inst_starts, len(index.inst_rows)]))
    unit_mem_starts = index.uv_starts[index.unit_uv_starts] if n_units else np.zeros(0, dtype=np.int64)
    unit_of_mem = np.repeat(np.arange(n_units), np.diff(np.r_[unit_mem_starts, len(index.mem_rows)]))
    rs = row_stratum >= 0
    e_inst = sp.csr_matrix((np.ones(rs.sum()), (inst_of_row[rs], row_stratum[rs])), shape=(n_inst, H))
    ms = row_stratum[index.mem_rows] >= 0
    e_unit = sp.csr_matrix((np.ones(ms.sum()), (unit_of_mem[ms], row_stratum[index.mem_rows][ms])), shape=(n_units, H))
    var_inst, var_unit = np.diff(e_inst.indptr) > 0, np.diff(e_unit.indptr) > 0
    return _VariableItems(e_inst, e_unit, var_inst, var_unit)


def _variable_sums(
    index: UnitIndex,
    v: _VariableItems,
    allpass: np.ndarray,
    joint: np.ndarray,
    pi: np.ndarray,
    sets: list[np.ndarray],
    chunk: int,
) -> list[np.ndarray]:
    """Per weight matrix, the (n_models · 4, B) weighted sums of the variable items' replicate
    values ``c · exp(E @ log π*)`` (row model · 4 + target: 0 = allpass, K = joint{K})."""
    B = sets[0].shape[0]
    nm = len(index.models)
    var_inst, var_unit = v.var_inst, v.var_unit
    e = sp.vstack([v.e_inst[var_inst], v.e_unit[var_unit]]).tocsr()
    c = np.r_[allpass[var_inst], joint[var_unit]]
    q_item = np.r_[index.inst_question[var_inst], index.unit_question[var_unit]]
    # target sum per item: 0 = allpass, K = joint{K}; column = model · 4 + target
    target = np.r_[np.zeros(var_inst.sum(), dtype=np.int64), index.unit_k[var_unit]]
    model = np.r_[index.inst_model[var_inst], index.unit_model[var_unit]]
    agg = sp.csr_matrix((np.ones(len(c)), (model * 4 + target, np.arange(len(c)))), shape=(nm * 4, len(c)))
    # an item with one variable row (most of them) takes its stratum's π* as it is; only items
    # with several multiply them, as exp(E @ log π*) (no exp and no sparse product for the rest)
    nnz = np.diff(e.indptr)
    single = nnz == 1
    single[single] = e.data[e.indptr[:-1][single]] == 1.0
    h_single = e.indices[e.indptr[:-1][single]]
    multi = ~single
    e_multi = e[multi] if multi.any() else None
    with np.errstate(divide="ignore"):
        log_pi = np.log(pi) if e_multi is not None else None
    extras = [np.empty((nm * 4, B)) for _ in sets]
    unit = [bool((w == 1.0).all()) for w in sets]  # all weights 1: no multiplication needed
    for b0 in range(0, B, chunk):
        b1 = min(B, b0 + chunk)
        base = np.empty((len(c), b1 - b0))
        base[single] = pi[h_single, b0:b1]
        if e_multi is not None:
            base[multi] = np.exp(e_multi @ log_pi[:, b0:b1])
        base *= c[:, None]
        for w, extra, ones in zip(sets, extras, unit):
            extra[:, b0:b1] = agg @ (base if ones else base * w[b0:b1].T[q_item])
    return extras


def bootstrap_intervals(
    instances: pd.DataFrame,
    *,
    p: str = "p",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    rates: pd.DataFrame | None = None,
    stratum: str = "stratum",
    source: str = "source",
    index: UnitIndex | None = None,
    **roles,
) -> pd.DataFrame:
    """Percentile intervals for TCPR, EMCR, R^(1..3) and the constraint level per model.

    Cluster bootstrap over questions (module docstring); with ``rates`` the adjudications
    are also resampled within each reviewed stratum.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame as for :func:`reform_core.metrics.reform.table2`; with ``rates``,
        the output of :func:`reform_core.calibration.calibrate_stratified` (``stratum``,
        ``source`` columns).
    n_boot : int
        Number of replicates.
    level : float
        Interval level in (0, 1).
    rng : numpy.random.Generator, optional
        Source of randomness; pass a seeded one for reproducible intervals.
    rates : DataFrame, optional
        :func:`reform_core.calibration.stratum_rates` output of the same calibration.
    **roles
        ``condition`` and column roles of :func:`reform_core.unit_index.build_index`.

    Returns
    -------
    DataFrame
        ``model, metric, estimate, ci_low, ci_high, n_boot, n_valid`` (n_valid: replicates
        with a defined value).
    """
    rng = _bootstrap_rng(n_boot, level, rng)
    index = index if index is not None else build_index(instances, **roles)
    pv = index.pass_vector(instances, p)
    nq = len(index.questions)
    weights = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot)
    h = pi = None
    if rates is not None:
        h, pi_hat, n_rev = row_strata(index, instances, rates, pv, stratum=stratum, source=source)
        pi = rng.binomial(n_rev[:, None], pi_hat[:, None], size=(len(pi_hat), n_boot)) / n_rev[:, None]
    reps = replicate_scores(index, pv, weights, row_stratum=h, pi=pi)
    return pd.DataFrame(_percentile_rows(index.models, reps, point_scores(index, pv), level, n_boot))


def _bootstrap_rng(n_boot: int, level: float, rng: np.random.Generator | None) -> np.random.Generator:
    """Check ``n_boot`` and ``level``; the generator to draw from (a fresh unseeded one for None)."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    rng = np.random.default_rng() if rng is None else rng
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _percentile_rows(
    models, reps: dict[str, np.ndarray], point: dict[str, np.ndarray], level: float, n_boot: int
) -> list[dict]:
    """One output row per metric and model: point estimate and percentile interval of the replicates."""
    alpha = 100 * (1 - level) / 2
    rows = []
    for metric in METRICS:
        r = reps[metric]
        valid = ~np.isnan(r)
        lo = np.full(r.shape[1], np.nan)
        hi = np.full(r.shape[1], np.nan)
        ok = valid.any(axis=0)
        if ok.any():
            lo[ok], hi[ok] = np.nanpercentile(r[:, ok], [alpha, 100 - alpha], axis=0)
        for i, model in enumerate(models):
            rows.append(
                {
                    "model": model,
                    "metric": metric,
                    "estimate": point[metric][i],
                    "ci_low": lo[i],
                    "ci_high": hi[i],
                    "n_boot": n_boot,
                    "n_valid": int(valid[:, i].sum()),
                }
            )
    return rows

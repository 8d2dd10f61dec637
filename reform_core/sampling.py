"""Adjudication sampling: disagreement strata, Cochran/FPC sizing, allocation, seeded draws.

Implements docs/metrics.md#judging-and-calibration (ReFormBench, arXiv:2610.19693, §3.5 and
App. A.3.1): within each evaluated model the
disagreements of a judge pair are stratified by direction × feature category × constraint
mode; the model's sample size follows Cochran's formula with a finite-population
correction; the size is allocated across strata in proportion to stratum size, covering
every non-empty stratum; the draw is seeded and reproducible.

Frames follow :mod:`reform_core.frames` (INSTANCES, DISAGREEMENTS).
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY, condition_suffix
from reform_core.sample_size import check_int, cochran_size  # noqa: F401 - cochran_size re-exported (stable interface)

DIRECTION_A1B0 = "A1B0"
DIRECTION_A0B1 = "A0B1"
DISAGREEMENT_COLUMNS = ["iid", "model", "category", "mode", "direction", "stratum", "condition"]
PLAN_COLUMNS = ["model", "condition", "stratum", "direction", "category", "mode", "size", "planned"]


def _require_columns(df: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")


def _require_complete(df: pd.DataFrame, what: str) -> None:
    for col in df.columns:
        if df[col].isna().any():
            raise ValueError(f"{what} has missing values in column {col!r}")


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")


def disagreements(instances: pd.DataFrame, *, judge_a: str = "label_a", judge_b: str = "label_b") -> pd.DataFrame:
    """Instances on which the two judges of a pair differ, with their stratum
    (docs/metrics.md#disagreements-and-strata).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with ``iid, model, category, mode`` and the two label columns.
    judge_a, judge_b : str
        Names of the label columns of judge A and judge B (values 1 / 0 / NaN).
        Rows where either label is missing are not disagreements.

    Returns
    -------
    DataFrame
        DISAGREEMENTS frame: ``iid, model, category, mode, direction, stratum, condition``
        with direction ``"A1B0"`` (A pass, B fail) or ``"A0B1"``, sorted by ``iid``. The
        stratum of a condition other than main carries it (``…|mode|single``); without a
        ``condition`` column every row is main.
    """
    _require_columns(instances, [INSTANCE_KEY, "model", "category", "mode", judge_a, judge_b], "instances")
    a = pd.to_numeric(instances[judge_a], errors="coerce")
    b = pd.to_numeric(instances[judge_b], errors="coerce")
    for name, raw, num in ((judge_a, instances[judge_a], a), (judge_b, instances[judge_b], b)):
        bad = (raw.notna() & num.isna()) | (num.notna() & ~num.isin([0, 1]))
        if bad.any():
            raise ValueError(f"column {name!r} must hold 0, 1 or NaN; found {raw[bad].iloc[0]!r}")
    mask = a.notna() & b.notna() & (a != b)
    out = instances.loc[mask, [INSTANCE_KEY, "model", "category", "mode"]].copy()
    _require_complete(out, "instances")
    out["direction"] = np.where(a[mask] == 1, DIRECTION_A1B0, DIRECTION_A0B1)
    cond = (
        instances.loc[mask, "condition"]
        if "condition" in instances.columns
        else pd.Series(CONDITION_MAIN, index=out.index)
    )
    out["condition"] = cond.where(cond.notna() & (cond.astype(str) != ""), CONDITION_MAIN).astype(str).to_numpy()
    out["stratum"] = (
        out["model"].astype(str)
        + "|"
        + out["direction"]
        + "|"
        + out["category"].astype(str)
        + "|"
        + out["mode"].astype(str)
        + condition_suffix(out["condition"].to_numpy())
    )
    return out.sort_values(INSTANCE_KEY).reset_index(drop=True)[DISAGREEMENT_COLUMNS]


def allocate(stratum_sizes: pd.Series, n: int) -> pd.Series:
    """Allocate a sample of ``n`` across strata (docs/metrics.md#allocation; ReFormBench App. A.3.1).

    Each stratum first gets ``⌊n' · N_h / N⌋`` with ``n' = min(n, N)`` (proportional
    allocation), raised to 1 for every non-empty stratum. If these minimums overshoot
    ``n'``, units are taken back one at a time from the stratum with the highest sampling
    fraction ``n_h / N_h`` that still holds more than one; the remaining units go one at a
    time to the stratum with the lowest sampling fraction that still has room. Ties are
    broken by stratum key. No stratum gets more than its size, every non-empty stratum gets
    at least one, and the total is exactly ``n'`` whenever ``n'`` is at least the number of
    non-empty strata (otherwise the every-stratum minimum forces that number).

    Parameters
    ----------
    stratum_sizes : Series
        Stratum size N_h (non-negative integers) indexed by stratum key.
    n : int
        Requested total sample size.

    Returns
    -------
    Series
        Allocated n_h (int64), same index and order as ``stratum_sizes``.
    """
    n = check_int(n, "n")
    if not isinstance(stratum_sizes, pd.Series):
        raise ValueError("stratum_sizes must be a pandas Series indexed by stratum key")
    if stratum_sizes.index.has_duplicates:
        raise ValueError("stratum_sizes has duplicate stratum keys")
    values = pd.to_numeric(stratum_sizes, errors="coerce").to_numpy(dtype=float)
    if np.isnan(values).any() or (values < 0).any() or (values != np.floor(values)).any():
        raise ValueError("stratum_sizes must hold non-negative integers")
    sizes = values.astype(np.int64)
    total = int(sizes.sum())
    if total == 0 or n == 0:
        return pd.Series(np.zeros(len(sizes), dtype=np.int64), index=stratum_sizes.index)
    target = min(n, total)
    alloc = (target * sizes) // total  # exact integer floor of the proportional quota
    alloc = np.where(sizes > 0, np.maximum(alloc, 1), 0)
    keys = np.array([str(k) for k in stratum_sizes.index], dtype=object)
    key_rank = np.argsort(np.argsort(keys, kind="stable"), kind="stable")
    target = max(target, int((sizes > 0).sum()))
    while alloc.sum() > target:  # the every-stratum minimum overshot: give back from the fullest
        spare = alloc > 1
        fraction = np.where(spare, alloc / np.maximum(sizes, 1), -np.inf)
        best = np.lexsort((key_rank, -fraction))[0]
        alloc[best] -= 1
    while alloc.sum() < target:
        room = alloc < sizes
        fraction = np.where(room, alloc / np.maximum(sizes, 1), np.inf)
        best = np.lexsort((key_rank, fraction))[0]
        alloc[best] += 1
    return pd.Series(alloc.astype(np.int64), index=stratum_sizes.index)


def plan(
    disagreements: pd.DataFrame,
    *,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
) -> pd.DataFrame:
    """Per model × condition × stratum sample plan (docs/metrics.md#sample-size, #allocation).

    Each model's size comes from :func:`cochran_size` with N = that model's
    disagreements of one condition (the main strata are sized from main disagreements
    only, as in the paper; another condition gets its own Cochran size), then is spread
    over its strata by :func:`allocate`.

    Parameters
    ----------
    disagreements : DataFrame
        DISAGREEMENTS frame (``model, direction, category, mode, stratum``).
    confidence, p, margin : float
        Cochran parameters, see :func:`cochran_size`.

    Returns
    -------
    DataFrame
        ``model, condition, stratum, direction, category, mode, size, planned``, one row
        per non-empty stratum, sorted by model, condition and stratum.
    """
    _require_columns(disagreements, ["model", "direction", "category", "mode", "stratum"], "disagreements")
    _require_complete(disagreements[["model", "direction", "category", "mode", "stratum"]], "disagreements")
    if "condition" not in disagreements.columns:
        disagreements = disagreements.assign(condition=CONDITION_MAIN)
    if disagreements.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("size", "planned") else object) for c in PLAN_COLUMNS})
    strata = (
        disagreements.groupby(
            ["model", "condition", "stratum", "direction", "category", "mode"], sort=True, observed=True
        )
        .size()
        .rename("size")
        .reset_index()
    )
    parts = []
    for _, group in strata.groupby(["model", "condition"], sort=True):
        sizes = group.set_index("stratum")["size"]
        n = cochran_size(int(sizes.sum()), confidence=confidence, p=p, margin=margin)
        group = group.copy()
        group["planned"] = allocate(sizes, n).to_numpy()
        parts.append(group)
    out = pd.concat(parts, ignore_index=True)
    out["size"] = out["size"].astype(np.int64)
    out["planned"] = out["planned"].astype(np.int64)
    return out[PLAN_COLUMNS]


def _draw_within(frame: pd.DataFrame, group: str, quota: pd.Series, rng: np.random.Generator) -> pd.DataFrame:
    """Simple random sample of ``quota[g]`` rows within each group ``g``; adds ``queue_order``."""
    frame = frame.sort_values([group, INSTANCE_KEY], kind="stable").reset_index(drop=True)
    key = rng.random(len(frame))
    rank = pd.Series(key).groupby(frame[group].to_numpy()).rank(method="first").to_numpy() - 1
    want = frame[group].map(quota).fillna(0).to_numpy()
    chosen = frame.loc[rank < want].reset_index(drop=True)
    chosen["queue_order"] = rng.permutation(len(chosen)).astype(np.int64)
    return chosen.sort_values("queue_order").reset_index(drop=True)


def draw(disagreements: pd.DataFrame, plan: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
    """Seeded, reproducible stratified draw of disagreements following a plan (docs/metrics.md#allocation).

    Within each stratum, ``planned`` instances are drawn without replacement. The result
    depends only on the set of rows and the generator state, not on the input row order.

    Parameters
    ----------
    disagreements : DataFrame
        DISAGREEMENTS frame.
    plan : DataFrame
        Output of :func:`plan` (``stratum, planned``).
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    DataFrame
        The sampled DISAGREEMENTS rows plus ``queue_order`` (0..n−1, a random
        permutation giving the adjudication queue order), sorted by ``queue_order``.
    """
    _check_rng(rng)
    _require_columns(disagreements, [c for c in DISAGREEMENT_COLUMNS if c != "condition"], "disagreements")
    _require_columns(plan, ["stratum", "planned"], "plan")
    if plan["stratum"].duplicated().any():
        raise ValueError("plan has duplicate strata")
    quota = plan.set_index("stratum")["planned"]
    sizes = disagreements["stratum"].value_counts()
    over = quota[quota > sizes.reindex(quota.index).fillna(0)]
    if len(over):
        raise ValueError(f"plan asks for more than the stratum holds: {over.index[0]!r}")
    if disagreements[INSTANCE_KEY].duplicated().any():
        raise ValueError("disagreements has duplicate iid values")
    return _draw_within(disagreements, "stratum", quota, rng)


def audit_sample(agreements: pd.DataFrame, n: int, rng: np.random.Generator, *, by: str = "model") -> pd.DataFrame:
    """Random audit sample of judge *agreements* (beyond the paper; the default estimator's
    audit: docs/estimator.md#the-audit-of-agreements).

    Estimates how often both judges are wrong together. The ``n`` items are spread
    over the groups of ``by`` (default: evaluated model) with :func:`allocate`, then
    drawn without replacement within each group.

    Parameters
    ----------
    agreements : DataFrame
        Instances where the judges agree (needs ``iid`` and ``by``).
    n : int
        Total audit size (capped at the number of agreements).
    rng : numpy.random.Generator
        Source of randomness.
    by : str
        Grouping column.

    Returns
    -------
    DataFrame
        The sampled rows plus ``queue_order``, sorted by ``queue_order``.
    """
    _check_rng(rng)
    n = check_int(n, "n")
    _require_columns(agreements, [INSTANCE_KEY, by], "agreements")
    if agreements[INSTANCE_KEY].duplicated().any():
        raise ValueError("agreements has duplicate iid values")
    quota = allocate(agreements[by].value_counts().sort_index(), n)
    return _draw_within(agreements, by, quota, rng)


def double_adjudication(sample: pd.DataFrame, fraction: float, rng: np.random.Generator) -> pd.DataFrame:
    """Mark a random ``fraction`` of sampled items for a second annotator (beyond the paper; used to
    estimate adjudicator error: docs/estimator.md#adjudicator-error).

    Parameters
    ----------
    sample : DataFrame
        A drawn sample (needs ``iid``).
    fraction : float
        Share in [0, 1] of items to double-adjudicate; ``round(fraction · len)`` items.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    DataFrame
        A copy of ``sample`` with a boolean column ``double``.
    """
    _check_rng(rng)
    _require_columns(sample, [INSTANCE_KEY], "sample")
    if not isinstance(fraction, numbers.Real) or not 0 <= fraction <= 1:
        raise ValueError(f"fraction must lie in [0, 1], got {fraction!r}")
    out = sample.copy()
    k = int(round(fraction * len(out)))
    order = np.argsort(out[INSTANCE_KEY].to_numpy(), kind="stable")
    flags = np.zeros(len(out), dtype=bool)
    flags[order[rng.choice(len(out), size=k, replace=False)]] = True
    out["double"] = flags
    return out

"""Inter-rater agreement: Fleiss' κ, Cohen's κ, the ICC family, yes-rates and item bootstrap.

All functions take a *long* frame (one row per rating) with named column roles and are
pure; randomness comes only from a passed ``numpy.random.Generator``.

Sources: Fleiss (1971) "Measuring nominal scale agreement among many raters"; Cohen (1960);
Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability" for α with missing data;
Shrout & Fleiss (1979) "Intraclass correlations: uses in assessing rater reliability" and
McGraw & Wong (1996) for the ICC family and its F-based intervals; the WISE paper (*When
Verifiable Counts Depend on Wording: Auditing Wording Robustness in Instruction Following*)
App. Q (Tables 24, 25) for the human wording validation (yes-rates, item bootstrap with
2,000 replicates that resample items and keep all annotators), defined in
docs/metrics.md#human-wording-validation.

Degenerate data are reported, never returned as silent NaN: missing ratings raise a
``ValueError`` (or are dropped with ``missing="drop"``), and a statistic that is undefined
for the data (e.g. κ when every rating falls in one category, ICC when all ratings are
equal) raises :class:`UndefinedStatisticError`, a ``ValueError`` subclass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

ICC_KINDS = ("1,1", "2,1", "3,1", "1,k", "2,k", "3,k")
ALL = "all"  # label of the pooled row / column in yes_rates
# A bootstrap interval is only reported when the statistic is defined in at least this
# share of replicates (replicates without variation are dropped before the percentiles).
MIN_DEFINED_SHARE = 0.95


class UndefinedStatisticError(ValueError):
    """The statistic is mathematically undefined for these data (e.g. no variation)."""


class Estimate(NamedTuple):
    """A point estimate with a two-sided interval (``ci_low``, ``ci_high``)."""

    value: float
    ci_low: float
    ci_high: float


ICCResult = Estimate  # the public name of the ICC return type, kept for callers


# --------------------------------------------------------------------------- helpers


def _require_columns(df: pd.DataFrame, columns, fn: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{fn}: missing column(s) {missing}; the frame has {list(df.columns)}")


def _check_missing_arg(missing: str, fn: str) -> None:
    if missing not in ("raise", "drop"):
        raise ValueError(f"{fn}: missing must be 'raise' or 'drop', got {missing!r}")


def _wide(df: pd.DataFrame, row: str, col: str, value: str, *, fn: str, missing: str) -> pd.DataFrame:
    """Pivot a long frame to a complete ``row × col`` table (items × raters).

    Raises on duplicate (row, col) pairs; missing values or incomplete rows raise unless
    ``missing == "drop"``, in which case incomplete rows are dropped.
    """
    _check_missing_arg(missing, fn)
    _require_columns(df, [row, col, value], fn)
    d = df[[row, col, value]]
    na = d[value].isna()
    if na.any():
        if missing == "raise":
            ex = d.loc[na, [row, col]].head(3).to_dict("records")
            raise ValueError(
                f"{fn}: {int(na.sum())} row(s) have no value in column {value!r} (e.g. {ex}); "
                f"pass missing='drop' to keep only {row}s rated by every {col}"
            )
        d = d[~na]
    dup = d.duplicated([row, col], keep=False)
    if dup.any():
        ex = d.loc[dup, [row, col]].drop_duplicates().head(3).to_dict("records")
        raise ValueError(f"{fn}: ({row}, {col}) pairs rated more than once, e.g. {ex}")
    wide = d.pivot(index=row, columns=col, values=value)
    incomplete = wide.isna().any(axis=1)
    if incomplete.any():
        if missing == "raise":
            ex = list(wide.index[incomplete][:3])
            raise ValueError(
                f"{fn}: {int(incomplete.sum())} {row}(s) lack a rating from some {col} "
                f"(e.g. {ex}); pass missing='drop' to keep only complete {row}s"
            )
        wide = wide[~incomplete]
    if wide.shape[1] < 2:
        raise ValueError(f"{fn}: needs at least 2 distinct values in column {col!r}, got {wide.shape[1]}")
    if wide.shape[0] < 2:
        raise ValueError(f"{fn}: needs at least 2 complete {row}s, got {wide.shape[0]}")
    return wide


def _require_rng(rng, fn: str) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{fn}: a bootstrap needs rng=numpy.random.default_rng(seed), got {rng!r}")
    return rng


def _check_n_boot(n_boot, fn: str) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"{fn}: bootstrap must be an integer number of replicates >= 2, got {n_boot!r}")
    return int(n_boot)


def _check_level(level: float, fn: str) -> float:
    if not 0 < level < 1:
        raise ValueError(f"{fn}: level must lie in (0, 1), got {level!r}")
    return float(level)


def item_bootstrap_weights(n_items: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities of an item bootstrap: ``(n_boot, n_items)`` counts summing to ``n_items``.

    Row ``b`` says how often each item appears in replicate ``b`` when ``n_items`` items are
    drawn with replacement (equivalent to index resampling; WISE paper App. Q).
    """
    return rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot)


def percentile_interval(replicates: np.ndarray, *, level: float = 0.95, what: str = "statistic") -> tuple[float, float]:
    """Percentile bootstrap interval over the replicates where the statistic is defined.

    Replicates that are NaN (statistic undefined on that resample, e.g. no variation) are
    dropped; if fewer than ``MIN_DEFINED_SHARE`` of them are defined the data are too close
    to constant for an interval and :class:`UndefinedStatisticError` is raised.
    """
    reps = np.asarray(replicates, dtype=float)
    ok = np.isfinite(reps)
    if ok.mean() < MIN_DEFINED_SHARE:
        raise UndefinedStatisticError(
            f"{what} is undefined in {int((~ok).sum())} of {reps.size} bootstrap replicates "
            "(resamples without variation); no interval can be given"
        )
    lo, hi = np.quantile(reps[ok], [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


# --------------------------------------------------------------------------- Fleiss κ


def _category_counts(df, item, rater, label, *, fn, missing) -> np.ndarray:
    wide = _wide(df, item, rater, label, fn=fn, missing=missing)
    long = wide.stack()
    return pd.crosstab(long.index.get_level_values(0), long.to_numpy()).to_numpy(dtype=float)


def _fleiss_weighted(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Fleiss (1971) κ of item-resampled tables, vectorised.

    ``counts``: items × categories (n raters per item); ``weights``: replicates × items
    multiplicities. κ = (P̄ − P̄_e) / (1 − P̄_e) with P_i = (Σ_j n_ij² − n) / (n(n − 1)),
    p_j = Σ_i n_ij / (N n), P̄_e = Σ_j p_j². NaN where P̄_e = 1 (one category only).
    """
    n = counts[0].sum()
    n_items = weights.sum(axis=1, keepdims=True)
    p_i = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    p_bar = (weights @ p_i) / n_items[:, 0]
    p_j = (weights @ counts) / (n_items * n)
    p_e = (p_j**2).sum(axis=1)
    out = np.full(len(weights), np.nan)
    ok = p_e < 1 - 1e-12
    out[ok] = (p_bar[ok] - p_e[ok]) / (1 - p_e[ok])
    return out


def fleiss_kappa(
    df: pd.DataFrame, *, item: str = "item", rater: str = "rater", label: str = "label", missing: str = "raise"
) -> float:
    """Fleiss' κ for nominal labels given by the same number of raters to every item.

    Parameters
    ----------
    df : DataFrame
        Long frame, one row per (item, rater) with the assigned category in ``label``.
    item, rater, label : str
        Column roles.
    missing : {"raise", "drop"}
        Missing labels / items not rated by every rater raise a ``ValueError`` or are
        dropped (the whole item).

    Returns
    -------
    float
        Fleiss (1971) κ, computed by ``statsmodels.stats.inter_rater.fleiss_kappa`` on the
        items × categories count table. Reference: Fleiss' diagnoses data give 0.4302.

    Raises
    ------
    UndefinedStatisticError
        If every label falls in a single category (chance agreement is 1).
    """
    counts = _category_counts(df, item, rater, label, fn="fleiss_kappa", missing=missing)
    return _fleiss_from_counts(counts, label, "fleiss_kappa")


def _fleiss_from_counts(counts: np.ndarray, label: str, fn: str) -> float:
    if counts.shape[1] < 2:
        raise UndefinedStatisticError(
            f"{fn}: every value of column {label!r} is the same category; κ is undefined (no variation)"
        )
    from statsmodels.stats.inter_rater import fleiss_kappa  # imported when used: a slow import

    return float(fleiss_kappa(counts, method="fleiss"))


def fleiss_kappa_ci(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    missing: str = "raise",
) -> Estimate:
    """Fleiss' κ with an item-bootstrap percentile interval (WISE paper App. Q, Table 25;
    docs/metrics.md#agreement-intervals).

    Each of ``n_boot`` replicates resamples items with replacement and keeps all raters of
    each sampled item; κ is recomputed per replicate (vectorised Fleiss 1971 formula, equal
    to statsmodels' on each replicate). Replicates where κ is undefined (a single category)
    are dropped, see :func:`percentile_interval`.
    """
    fn = "fleiss_kappa_ci"
    rng = _require_rng(rng, fn)
    n_boot = _check_n_boot(n_boot, fn)
    level = _check_level(level, fn)
    counts = _category_counts(df, item, rater, label, fn=fn, missing=missing)
    value = _fleiss_from_counts(counts, label, fn)
    reps = _fleiss_weighted(counts, item_bootstrap_weights(len(counts), n_boot, rng))
    lo, hi = percentile_interval(reps, level=level, what="Fleiss' κ")
    return Estimate(value, lo, hi)


# --------------------------------------------------------------------------- Cohen κ


def _ordered_categories(values: np.ndarray, categories, *, fn: str, column: str, why: str) -> list:
    """The category order for an ordinal statistic.

    ``categories`` given: every observed value must be one of them; the list is the order
    (first = lowest). Not given: numeric values are ordered numerically; anything else (strings,
    mixed types) is refused, because an alphabetical order ("high" < "low" < "medium") is
    almost never the intended one.
    """
    present = pd.unique(pd.Series(values, dtype=object))
    if categories is not None:
        order = list(categories)
        if len(set(order)) != len(order):
            raise ValueError(f"{fn}: categories has duplicate entries: {order}")
        unknown = [v for v in present if v not in set(order)]
        if unknown:
            raise ValueError(f"{fn}: column {column!r} holds value(s) {unknown[:5]} not in categories={order}")
        return order
    numeric = [
        v
        for v in present
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
    ]
    if len(numeric) != len(present):
        raise ValueError(
            f"{fn}: {why} needs the order of the labels in column {column!r}, which are not numbers "
            f"(e.g. {[v for v in present if v not in numeric][:3]}); pass categories=[lowest, …, highest]"
        )
    return sorted(numeric)


def cohen_kappa(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: tuple[str, str] | None = None,
    weights: str | None = None,
    categories: list | None = None,
    missing: str = "raise",
) -> float:
    """Cohen's κ between two raters (Cohen 1960), via ``sklearn.metrics.cohen_kappa_score``.

    Parameters
    ----------
    df : DataFrame
        Long frame, one row per (item, rater).
    raters : (str, str), optional
        The two raters to compare; required when the frame holds more than two.
    weights : {None, "linear", "quadratic"}
        Passed to scikit-learn (weighted κ for ordinal labels, Cohen 1968): the disagreement
        weight of categories i and j is ``|i − j|`` or ``(i − j)²`` in their *position* in
        the category order, so the order matters.
    categories : list, optional
        The ordered categories (lowest first). Weighted κ uses this order; numeric labels
        default to numeric order; string labels without ``categories`` are refused (no silent
        alphabetical order). Unweighted κ ignores the order but still checks membership.
    missing : {"raise", "drop"}
        Items not labelled by both raters raise, or are dropped.

    Raises
    ------
    UndefinedStatisticError
        If both raters give every item the same single label (κ = 0/0).
    """
    fn = "cohen_kappa"
    _require_columns(df, [item, rater, label], fn)
    present = list(pd.unique(df[rater]))
    if raters is None:
        if len(present) != 2:
            raise ValueError(f"{fn}: column {rater!r} has {len(present)} raters {present[:5]}; pass raters=(a, b)")
        raters = tuple(present)
    else:
        absent = [r for r in raters if r not in present]
        if len(raters) != 2 or raters[0] == raters[1] or absent:
            raise ValueError(
                f"{fn}: raters must be two distinct values of column {rater!r}; got {raters}, absent {absent}"
            )
    sub = df[df[rater].isin(raters)]
    wide = _wide(sub, item, rater, label, fn=fn, missing=missing)
    a, b = wide[raters[0]].to_numpy(), wide[raters[1]].to_numpy()
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"{fn}: weights must be None, 'linear' or 'quadratic', got {weights!r}")
    order = None
    if weights is not None or categories is not None:
        order = _ordered_categories(np.r_[a, b], categories, fn=fn, column=label, why=f"weighted κ ({weights})")
    if len(set(a) | set(b)) < 2:
        raise UndefinedStatisticError(f"{fn}: both raters give every item the same label; κ is undefined")
    from sklearn.metrics import cohen_kappa_score  # imported when used: a slow import

    return float(cohen_kappa_score(a, b, weights=weights, labels=order))


# --------------------------------------------------------------------------- Krippendorff α

ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _alpha_counts(
    df: pd.DataFrame, item: str, rater: str, label: str, level: str, categories, fn: str
) -> tuple[np.ndarray, np.ndarray]:
    """Pairable units × values count table ``n_uc`` and the (ordered) values.

    Missing labels are left out (α is defined for incomplete data); units with fewer than two
    values are not pairable and drop out (Krippendorff 2011, §C).
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"{fn}: level must be one of {ALPHA_LEVELS}, got {level!r}")
    _require_columns(df, [item, rater, label], fn)
    d = df[[item, rater, label]]
    d = d[d[label].notna()]
    dup = d.duplicated([item, rater], keep=False)
    if dup.any():
        ex = d.loc[dup, [item, rater]].drop_duplicates().head(3).to_dict("records")
        raise ValueError(f"{fn}: ({item}, {rater}) pairs rated more than once, e.g. {ex}")
    values = d[label].to_numpy()
    if level == "nominal":
        order = list(categories) if categories is not None else list(pd.unique(pd.Series(values, dtype=object)))
        if categories is not None:
            _ordered_categories(values, categories, fn=fn, column=label, why="α")
    elif level == "ordinal":
        order = _ordered_categories(values, categories, fn=fn, column=label, why="ordinal α")
    else:
        if categories is not None:
            raise ValueError(f"{fn}: categories applies to nominal/ordinal α only; {level} α uses the numbers")
        try:
            numeric = pd.to_numeric(pd.Series(values))
        except (TypeError, ValueError):
            raise ValueError(f"{fn}: {level} α needs numeric values in column {label!r}") from None
        if pd.api.types.is_bool_dtype(d[label]) or numeric.isna().any():
            raise ValueError(f"{fn}: {level} α needs numeric values in column {label!r}")
        values = numeric.to_numpy(dtype=float)
        if level == "ratio" and (values < 0).any():
            raise ValueError(f"{fn}: ratio α needs non-negative values in column {label!r}")
        order = sorted(set(values.tolist()))
    codes = pd.Index(order).get_indexer(values) if len(values) else np.zeros(0, dtype=np.int64)
    units = pd.factorize(d[item], sort=True)[0] if len(d) else np.zeros(0, dtype=np.int64)  # row order free
    counts = np.zeros((units.max() + 1 if len(units) else 0, len(order)))
    np.add.at(counts, (units, codes), 1.0)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0:
        raise ValueError(f"{fn}: no {item} has two or more ratings; α needs pairable values")
    return counts, np.asarray(order, dtype=object)


def _alpha_delta(level: str, order: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    """Squared difference δ²_ck (Krippendorff 2011, §§C–F); ``n_c`` (…, V) marginal totals.

    nominal: 1 if c ≠ k; ordinal: (Σ_{g=c}^{k} n_g − (n_c + n_k)/2)² over the category order;
    interval: (c − k)²; ratio: ((c − k)/(c + k))².
    """
    v = len(order)
    if level == "nominal":
        return 1.0 - np.eye(v)
    if level == "ordinal":
        cum = np.cumsum(n_c, axis=-1)
        lo = np.minimum.outer(np.arange(v), np.arange(v))
        hi = np.maximum.outer(np.arange(v), np.arange(v))
        between = cum[..., hi] - cum[..., lo] + n_c[..., lo]  # Σ_{g=lo}^{hi} n_g
        return (between - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    x = order.astype(float)
    diff = np.subtract.outer(x, x)
    if level == "interval":
        return diff**2
    total = np.add.outer(x, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (diff / np.where(total > 0, total, 1.0)) ** 2, 0.0)


def _alpha_weighted(counts: np.ndarray, order: np.ndarray, level: str, weights: np.ndarray) -> np.ndarray:
    """α of unit-resampled tables, vectorised (NaN where the expected disagreement is 0).

    Coincidences ``o_ck = Σ_u w_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1)``, ``n_c = Σ_k o_ck``,
    ``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck`` (Krippendorff 2011, eq. for α with
    the coincidence matrix).
    """
    m = counts.sum(axis=1)
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(counts.shape[1])) / (m - 1)[
        :, None, None
    ]
    o = np.tensordot(weights, per_unit, axes=(1, 0))  # (B, V, V)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    delta = _alpha_delta(level, order, n_c)
    if delta.ndim == 2:
        delta = np.broadcast_to(delta, o.shape)
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    out = np.full(len(weights), np.nan)
    ok = expected > 1e-12 * np.maximum(n, 1) ** 2 * np.maximum(delta.max(axis=(1, 2)), 1e-300)
    out[ok] = 1 - (n[ok] - 1) * observed[ok] / expected[ok]
    return out


def krippendorff_alpha(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    level: str = "nominal",
    categories: list | None = None,
) -> float:
    """Krippendorff's α for any number of raters, with missing ratings (Krippendorff 2011).

    Parameters
    ----------
    df : DataFrame
        Long frame, one row per (item, rater); a missing ``label`` (NaN/None) or an absent row
        is a missing rating. Items with fewer than two ratings are not pairable and ignored.
    level : {"nominal", "ordinal", "interval", "ratio"}
        Metric of the difference function δ² (see :func:`_alpha_delta`).
    categories : list, optional
        Ordered categories for ``ordinal`` (lowest first; required for non-numeric labels —
        no silent alphabetical order) or the category set for ``nominal``.

    Returns
    -------
    float
        ``α = 1 − D_o / D_e``. Reference: Krippendorff (2011) "Computing Krippendorff's
        Alpha-Reliability", 4 observers × 12 units with missing values: nominal 0.743,
        ordinal 0.815, interval 0.849, ratio 0.797.

    Raises
    ------
    UndefinedStatisticError
        If every pairable value is the same (no expected disagreement).
    """
    fn = "krippendorff_alpha"
    counts, order = _alpha_counts(df, item, rater, label, level, categories, fn)
    value = _alpha_weighted(counts, order, level, np.ones((1, len(counts))))[0]
    if not np.isfinite(value):
        raise UndefinedStatisticError(f"{fn}: every pairable value of column {label!r} is the same; α is undefined")
    return float(value)


def krippendorff_alpha_ci(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    level: str = "nominal",
    categories: list | None = None,
    n_boot: int = 2000,
    ci_level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> Estimate:
    """Krippendorff's α with an item-bootstrap percentile interval.

    Like :func:`fleiss_kappa_ci` (WISE paper App. Q): each replicate resamples the pairable
    items with replacement, keeping all ratings of each drawn item, and recomputes α
    (vectorised; ordinal δ² uses the replicate's own marginals). ``ci_level`` is the
    confidence level (``level`` names the metric).
    """
    fn = "krippendorff_alpha_ci"
    rng = _require_rng(rng, fn)
    n_boot = _check_n_boot(n_boot, fn)
    ci_level = _check_level(ci_level, fn)
    value = krippendorff_alpha(df, item=item, rater=rater, label=label, level=level, categories=categories)
    counts, order = _alpha_counts(df, item, rater, label, level, categories, fn)
    reps = _alpha_weighted(counts, order, level, item_bootstrap_weights(len(counts), n_boot, rng))
    lo, hi = percentile_interval(reps, level=ci_level, what="Krippendorff's α")
    return Estimate(value, lo, hi)


# --------------------------------------------------------------------------- ICC


def _mean_squares(y: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Two-way ANOVA mean squares of item-resampled ``targets × raters`` tables, vectorised.

    ``y``: n × k ratings; ``weights``: replicates × n target multiplicities (a row of ones is
    the table itself). Returns MS_rows (targets), MS_cols (raters), MS_err and MS_within
    (Shrout & Fleiss 1979, Table 1: BMS, JMS, EMS, WMS).
    """
    n = weights.sum(axis=1)
    k = y.shape[1]
    # Centre first: mean squares are shift-invariant, and uncentred sums of squares lose every
    # digit to cancellation when the ratings carry a large common offset (e.g. 1e8).
    y = y - y.mean()
    row_mean = y.mean(axis=1)
    grand = (weights @ row_mean) / n
    ss_rows = k * (weights @ row_mean**2 - n * grand**2)
    col_mean = (weights @ y) / n[:, None]
    ss_cols = n * ((col_mean**2).sum(axis=1) - k * grand**2)
    ss_tot = weights @ (y**2).sum(axis=1) - n * k * grand**2
    ss_err = ss_tot - ss_rows - ss_cols
    # Round-off leaves ~1e-16 relative residue where a sum of squares is exactly 0 (perfect
    # agreement, pure rater offsets): snap those to 0 so that the zero cases are recognised.
    tiny = 1e-12 * np.maximum(ss_tot, 1e-300)
    ss_rows, ss_cols, ss_err = (np.where(np.abs(x) <= tiny, 0.0, x) for x in (ss_rows, ss_cols, ss_err))
    return {
        "bms": ss_rows / (n - 1),
        "jms": ss_cols / (k - 1),
        "ems": ss_err / ((n - 1) * (k - 1)),
        "wms": (ss_cols + ss_err) / (n * (k - 1)),
        "n": n,
        "k": k,
    }


def _icc_value(kind: str, ms: dict) -> np.ndarray:
    """ICC of Shrout & Fleiss (1979) eqs. for the six kinds (McGraw & Wong 1996 names)."""
    bms, jms, ems, wms, n, k = (ms[x] for x in ("bms", "jms", "ems", "wms", "n", "k"))
    num, den = {
        "1,1": (bms - wms, bms + (k - 1) * wms),
        "2,1": (bms - ems, bms + (k - 1) * ems + k * (jms - ems) / n),
        "3,1": (bms - ems, bms + (k - 1) * ems),
        "1,k": (bms - wms, bms),
        "2,k": (bms - ems, bms + (jms - ems) / n),
        "3,k": (bms - ems, bms),
    }[kind]
    scale = np.maximum(np.abs(bms) + np.abs(jms) + np.abs(ems), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(den) > 1e-12 * scale, num / den, np.nan)


def _icc_f_interval(kind: str, ms: dict, level: float) -> tuple[float, float]:
    """F-distribution interval of the ICC (Shrout & Fleiss 1979; McGraw & Wong 1996, Table 7).

    Same formulas as ``pingouin.intraclass_corr`` (which rounds its bounds to 2 decimals).
    """
    from scipy import stats  # imported when used: a slow import

    bms, jms, ems, wms = (float(ms[x][0]) for x in ("bms", "jms", "ems", "wms"))
    n, k = float(ms["n"][0]), ms["k"]
    a = 1 - level
    df1 = n - 1
    denominator = wms if kind in ("1,1", "1,k") else ems
    if denominator == 0.0:
        return _icc_interval_without_error(kind, bms, jms, n, k, a)
    if kind in ("1,1", "1,k"):
        f_obs, df2 = bms / wms, n * (k - 1)
    else:
        f_obs, df2 = bms / ems, (n - 1) * (k - 1)
    if kind in ("1,1", "3,1", "1,k", "3,k"):
        f_lo = f_obs / stats.f.ppf(1 - a / 2, df1, df2)
        f_hi = f_obs * stats.f.ppf(1 - a / 2, df2, df1)
        if kind.endswith(",1"):
            return (f_lo - 1) / (f_lo + k - 1), (f_hi - 1) / (f_hi + k - 1)
        return 1 - 1 / f_lo, 1 - 1 / f_hi
    # two-way random, absolute agreement: Satterthwaite df (McGraw & Wong 1996, case 2A)
    icc2 = float(_icc_value("2,1", ms)[0])
    fj = jms / ems
    v = (df2 * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2) / (
        df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    )
    f_u = stats.f.ppf(1 - a / 2, df1, v)
    f_l = stats.f.ppf(1 - a / 2, v, df1)
    lo = n * (bms - f_u * ems) / (f_u * (k * jms + (k * n - k - n) * ems) + n * bms)
    hi = n * (f_l * bms - ems) / (k * jms + (k * n - k - n) * ems + n * f_l * bms)
    if kind == "2,k":
        lo, hi = lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))
    return float(lo), float(hi)


def _icc_interval_without_error(kind: str, bms: float, jms: float, n: float, k: int, a: float) -> tuple[float, float]:
    """F interval when the error mean square of the F test is 0 (F = ∞).

    * Kinds 1 and 3: WMS = 0 (one-way) or EMS = 0 (consistency) means every rater agrees
      exactly up to the model's allowed offsets, the ICC is exactly 1, and the F bounds
      ``(F/F_crit − 1)/(F/F_crit + k − 1)`` and ``1 − F_crit/F`` tend to 1: the interval is
      ``[1, 1]``.
    * Kind 2 (absolute agreement) with EMS = 0 but rater offsets (JMS > 0): the ICC is below 1
      and the McGraw & Wong (1996, case 2A) bounds have finite limits as EMS → 0: the
      Satterthwaite df tends to ``(n − 1)(k − 1)/(n − 1) = k − 1`` and
      ``lo = n·BMS / (F_u·k·JMS + n·BMS)``, ``hi = n·F_l·BMS / (k·JMS + n·F_l·BMS)``.
    """
    if kind[0] in "13":
        return 1.0, 1.0
    from scipy import stats  # imported when used: a slow import

    v = k - 1.0
    f_u = stats.f.ppf(1 - a / 2, n - 1, v)
    f_l = stats.f.ppf(1 - a / 2, v, n - 1)
    lo = n * bms / (f_u * k * jms + n * bms)
    hi = n * f_l * bms / (k * jms + n * f_l * bms)
    if kind == "2,k":
        lo, hi = lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))
    return float(lo), float(hi)


def icc(
    df: pd.DataFrame,
    *,
    target: str = "target",
    rater: str = "rater",
    rating: str = "rating",
    kind: str = "2,k",
    bootstrap: int | None = None,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    missing: str = "raise",
) -> ICCResult:
    """Intraclass correlation ICC(kind) with a confidence interval.

    Parameters
    ----------
    df : DataFrame
        Long frame, one numeric rating per (target, rater); the design must be complete
        (every rater rates every target).
    kind : {"1,1", "2,1", "3,1", "1,k", "2,k", "3,k"}
        Shrout & Fleiss (1979) form: 1 = one-way random, 2 = two-way random (absolute
        agreement), 3 = two-way mixed (consistency); ",1" single rater, ",k" mean of k raters.
        ICC(2,k) is the WISE validation statistic (docs/metrics.md#icc; WISE paper Table 25).
    bootstrap : int, optional
        ``None``: interval from the F distribution (Shrout & Fleiss 1979; McGraw & Wong
        1996). An integer: percentile interval from that many item-bootstrap replicates that
        resample targets and keep all raters (WISE paper App. Q); needs ``rng``.
    level : float
        Confidence level of the interval.
    missing : {"raise", "drop"}
        Missing ratings raise, or drop the targets that lack one.

    Returns
    -------
    ICCResult
        ``(value, ci_low, ci_high)``. Reference (Shrout & Fleiss 1979 data): ICC(1,1) =
        0.1657, ICC(2,1) = 0.2898, ICC(3,1) = 0.7148, ICC(2,k) = 0.6201.

    Sums of squares are computed on centred ratings (a common offset does not change the
    result). When the F test's error mean square is 0 — perfect agreement, or raters that
    differ by constant offsets only — the ICC is still defined and the F interval is its limit
    (``[1, 1]`` for kinds 1 and 3; see :func:`_icc_interval_without_error` for kind 2).

    Raises
    ------
    UndefinedStatisticError
        If the ratings have no variation (the ICC is 0/0).
    """
    fn = "icc"
    if kind not in ICC_KINDS:
        raise ValueError(f"{fn}: kind must be one of {ICC_KINDS}, got {kind!r}")
    level = _check_level(level, fn)
    _require_columns(df, [target, rater, rating], fn)
    if not pd.api.types.is_numeric_dtype(df[rating]) or pd.api.types.is_bool_dtype(df[rating]):
        raise ValueError(f"{fn}: column {rating!r} must hold numeric ratings, got dtype {df[rating].dtype}")
    y = _wide(df, target, rater, rating, fn=fn, missing=missing).to_numpy(dtype=float)
    ms = _mean_squares(y, np.ones((1, len(y))))
    value = float(_icc_value(kind, ms)[0])
    if not np.isfinite(value):
        raise UndefinedStatisticError(
            f"{fn}: the ratings in column {rating!r} have no variation; ICC({kind}) is undefined"
        )
    if bootstrap is None:
        lo, hi = _icc_f_interval(kind, ms, level)
        return ICCResult(value, float(lo), float(hi))
    rng = _require_rng(rng, fn)
    n_boot = _check_n_boot(bootstrap, fn)
    reps = _icc_value(kind, _mean_squares(y, item_bootstrap_weights(len(y), n_boot, rng)))
    lo, hi = percentile_interval(reps, level=level, what=f"ICC({kind})")
    return ICCResult(value, lo, hi)


# --------------------------------------------------------------------------- yes-rates


def _as_yes(series: pd.Series, fn: str) -> pd.Series:
    """Map a binary answer column (bool, 0/1, "yes"/"no") to 1.0 / 0.0."""
    if series.isna().any():
        raise ValueError(f"{fn}: column {series.name!r} has {int(series.isna().sum())} missing answer(s)")
    if series.dtype == object or pd.api.types.is_string_dtype(series):
        low = series.astype(str).str.strip().str.lower()
        mapped = low.map({"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0})
    else:
        mapped = series.astype(float).where(series.astype(float).isin([0.0, 1.0]))
    bad = mapped.isna()
    if bad.any():
        raise ValueError(
            f"{fn}: column {series.name!r} must be yes/no (bool, 0/1 or 'yes'/'no'); "
            f"got {list(pd.unique(series[bad]))[:5]}"
        )
    return mapped


def yes_rates(df: pd.DataFrame, *, by: str = "form", rater: str = "rater", label: str = "label") -> pd.DataFrame:
    """Share of "yes" answers per group and per rater (docs/metrics.md#yes-rates; WISE
    paper App. Q.1, Table 24).

    Parameters
    ----------
    df : DataFrame
        Long frame, one row per answer; ``label`` is yes/no (bool, 0/1 or "yes"/"no").
    by : str
        Grouping column (the wording form in WISE).
    rater : str
        Annotator column.

    Returns
    -------
    DataFrame
        Index: the values of ``by`` plus a final ``"all"`` row (per-rater rate over all
        answers); columns: the raters plus an ``"all"`` column (pooled rate of the group).
        Rates are in [0, 1].
    """
    fn = "yes_rates"
    _require_columns(df, [by, rater, label], fn)
    for col in (by, rater):
        if (df[col].astype(str) == ALL).any():
            raise ValueError(f"{fn}: column {col!r} holds the reserved value {ALL!r}")
    d = df[[by, rater]].assign(_yes=_as_yes(df[label], fn))
    table = d.pivot_table(index=by, columns=rater, values="_yes", aggfunc="mean", sort=False)
    table[ALL] = d.groupby(by, sort=False)["_yes"].mean()
    overall = d.groupby(rater, sort=False)["_yes"].mean()
    overall[ALL] = d["_yes"].mean()
    table.loc[ALL] = overall
    table.columns.name = None
    return table


def validation_agreement(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    answer: str = "answer",
    ratings: tuple[str, ...] = ("clarity", "naturalness", "ambiguity", "complexity"),
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Agreement table of the human wording validation (docs/metrics.md#agreement-intervals;
    WISE paper Table 25).

    Parameters
    ----------
    df : DataFrame
        Wide-by-measure long frame: one row per (item, rater) with the yes/no ``answer``
        ("does this require exactly N?") and one column per 1–5 rating in ``ratings``.
    n_boot, level, rng
        Item-bootstrap settings shared by every measure (replicates resample items and keep
        all raters); the generator is consumed in row order, so a seed reproduces the table.

    Returns
    -------
    DataFrame
        One row per measure (``answer`` first, then ``ratings``) with columns ``statistic``
        ("Fleiss' kappa" or "ICC(2,k)"), ``value``, ``ci_low``, ``ci_high``.
    """
    fn = "validation_agreement"
    _require_columns(df, [item, rater, answer, *ratings], fn)
    rows = {
        answer: (
            "Fleiss' kappa",
            *fleiss_kappa_ci(df, item=item, rater=rater, label=answer, n_boot=n_boot, level=level, rng=rng),
        )
    }
    for col in ratings:
        rows[col] = (
            "ICC(2,k)",
            *icc(df, target=item, rater=rater, rating=col, kind="2,k", bootstrap=n_boot, level=level, rng=rng),
        )
    return pd.DataFrame.from_dict(rows, orient="index", columns=["statistic", "value", "ci_low", "ci_high"])

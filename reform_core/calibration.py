"""Judgment calibration: turn two judges' labels and human adjudications into ``p_u``.

Two rules (docs/metrics.md#stratified-calibration and #pooled-calibration; ReFormBench,
arXiv:2610.19693, §3.5 eqs. 7–8 and App. A.3.2 eq. 13):

* **Stratified** (main results): ``p_u = g_u`` if the judges agree, ``a_u`` if the
  disagreement was reviewed, otherwise ``π̂_h`` = mean adjudicated label of the reviewed
  disagreements of its stratum ``h = model|direction|category|mode`` (plus ``|condition``
  for a condition other than main: each condition has its own strata, so adjudications of
  a single-constraint or prompted condition never move the main scores).
* **Pooled** (auxiliary analyses): ``p_u = g_u`` if the judges agree, else
  ``W_g·g_u + (1 − W_g)·m_u`` with ``W_g`` the share of a fixed adjudication pool that sides
  with judge ``g``.

Missing judge labels (NaN, e.g. a judge error): if only one judge has a label, ``p_u`` is
that label (``source = "single_judge"``); with no label at all ``p_u`` is NaN
(``source = "missing"``) and the row must be dropped before scoring — the scoring engine
refuses NaN. The number of such rows is stored in ``result.attrs["n_missing"]``.

An adjudication of an instance on which the judges agree (an audit of agreements) does not
change its ``p_u``: eq. 8 keeps the agreed label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY, STRATUM_COLUMNS, condition_suffix
from reform_core.frames import require_columns as _require

DIRECTION_A1B0 = "A1B0"  # judge A pass, judge B fail
DIRECTION_A0B1 = "A0B1"
SOURCES = ("agreed", "adjudicated", "stratum", "fallback", "single_judge", "missing")
RATE_COLUMNS = [
    "stratum",
    "model",
    "direction",
    "category",
    "mode",
    "condition",
    "n_disagreements",
    "n_reviewed",
    "pi_hat",
    "p_used",
    "provisional",
]


def _binary(values: pd.Series, name: str, allow_nan: bool) -> np.ndarray:
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isin(x, (0.0, 1.0)) | (allow_nan & np.isnan(x)))
    if bad.any():
        example = values.to_numpy()[bad][0]
        raise ValueError(f"column {name!r} must hold 0/1{' or NaN' if allow_nan else ''}; found {example!r}")
    return x


def _judge_labels(instances: pd.DataFrame, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    _require(instances, [judge_a, judge_b], "instances")
    return _binary(instances[judge_a], judge_a, True), _binary(instances[judge_b], judge_b, True)


def _adjudication_map(adjudications: pd.DataFrame, iid: str) -> pd.Series:
    """``a`` per instance: 0/1, or a share in [0, 1] when several annotators decided it
    (the mean of their labels, e.g. ½ for a split double adjudication)."""
    _require(adjudications, [iid, "a"], "adjudications")
    if adjudications[iid].duplicated().any():
        dup = adjudications.loc[adjudications[iid].duplicated(), iid].iloc[0]
        raise ValueError(f"adjudications hold more than one current decision for {iid}={dup!r}")
    a = pd.to_numeric(adjudications["a"], errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(a) | (a < 0) | (a > 1)
    if bad.any():
        raise ValueError(f"column 'a' must hold labels in [0, 1]; found {adjudications['a'].to_numpy()[bad][0]!r}")
    return pd.Series(a, index=adjudications[iid].to_numpy())


def _strata_frame(instances: pd.DataFrame, g: np.ndarray, m: np.ndarray, strata: Sequence[str]) -> pd.DataFrame:
    """Direction and stratum key of every row (meaningful only where the judges disagree)."""
    cols = [c for c in strata if c != "direction"]
    _require(instances, cols, "instances")
    direction = np.where(g == 1, DIRECTION_A1B0, DIRECTION_A0B1)
    # Each column factorised once (no per-row string is built); the few distinct combinations
    # are joined into names, then broadcast (150k rows: ~10x faster than joining per row).
    combined = np.zeros(len(instances), dtype=np.int64)
    col_codes, uniques = {}, {}
    for c in strata:
        codes, uniq = pd.factorize(direction if c == "direction" else instances[c], use_na_sentinel=False)
        col_codes[c], uniques[c] = codes, [str(u) for u in uniq]
        combined = combined * (len(uniq) + 1) + codes
    _, first_row, inverse = np.unique(combined, return_index=True, return_inverse=True)
    first = {c: col_codes[c][first_row] for c in strata}  # each column's code in each combination
    names = np.array(["|".join(uniques[c][first[c][j]] for c in strata) for j in range(len(first_row))], dtype=object)
    key = names[inverse.reshape(-1)] if len(inverse) else np.array([], dtype=object)
    condition = _conditions(instances)
    if len(key) and (condition != CONDITION_MAIN).any():
        key = key + condition_suffix(condition)
    return pd.DataFrame({"direction": direction, "stratum": key, "condition": condition}, index=instances.index)


def _conditions(instances: pd.DataFrame) -> np.ndarray:
    """Each row's condition (``main`` where empty or missing), as an object array; the few
    distinct values mapped once instead of converting every row."""
    if "condition" not in instances.columns:
        return np.full(len(instances), CONDITION_MAIN, dtype=object)
    codes, uniq = pd.factorize(instances["condition"], use_na_sentinel=False)
    names = np.array(
        [
            CONDITION_MAIN if (u is None or u is pd.NA or (isinstance(u, float) and np.isnan(u)) or u == "") else str(u)
            for u in uniq
        ],
        dtype=object,
    )
    return names[codes] if len(codes) else np.array([], dtype=object)


def _model_weight_a(
    model: np.ndarray, condition: np.ndarray, disagree: np.ndarray, g: np.ndarray, adj: np.ndarray
) -> pd.Series:
    """Per (model, condition), share of reviewed disagreements whose adjudicated label
    equals judge A's."""
    reviewed = disagree & ~np.isnan(adj)
    frame = pd.DataFrame(
        {"model": model[reviewed], "condition": condition[reviewed], "with_a": adj[reviewed] == g[reviewed]}
    )
    return frame.groupby(["model", "condition"])["with_a"].mean()


def stratum_rates(
    instances: pd.DataFrame,
    adjudications: pd.DataFrame,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    strata: Sequence[str] = STRATUM_COLUMNS,
    iid: str = INSTANCE_KEY,
) -> pd.DataFrame:
    """Stratum pass-rate estimates π̂_h (ReFormBench, arXiv:2610.19693, §3.5 eq. 7;
    docs/metrics.md#stratified-calibration).

    ``π̂_h = (1/|R_h|) Σ_{u∈R_h} a_u`` over the reviewed disagreements ``R_h`` of stratum
    ``h``. A stratum with no reviewed instance takes the model's pooled estimate
    ``W_A`` (share of that model's reviews of the same condition siding with judge A) for direction ``A1B0`` and
    ``1 − W_A`` for ``A0B1`` — i.e. the pooled rule of App. A.3.2 within the model — and
    ``0.5`` while the model has no review at all; such strata are ``provisional``.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with ``iid``, the stratum columns other than ``direction`` and the
        two judge label columns.
    adjudications : DataFrame
        ADJUDICATIONS frame (``iid``, ``a`` in {0, 1}); rows whose ``iid`` is not a
        disagreement in ``instances`` are ignored.
    judge_a, judge_b : str
        Label columns of judges A and B (``direction`` is ``"A1B0"`` when A passes).
    strata : sequence of str
        Columns forming the stratum key, ``direction`` included (default
        ``model, direction, category, mode``).

    Returns
    -------
    DataFrame
        One row per non-empty stratum: ``stratum, model, direction, category, mode,
        condition, n_disagreements, n_reviewed, pi_hat`` (NaN without reviews), ``p_used`` (π̂_h or
        the fallback) and ``provisional``.
    """
    g, m = _judge_labels(instances, judge_a, judge_b)
    _require(instances, [iid, "model"], "instances")
    disagree = ~np.isnan(g) & ~np.isnan(m) & (g != m)
    adj_map = _adjudication_map(adjudications, iid)
    adj = instances[iid].map(adj_map).to_numpy(dtype=float)
    keys = _strata_frame(instances, g, m, strata)
    d = pd.DataFrame(
        {
            "stratum": keys["stratum"].to_numpy()[disagree],
            "model": instances["model"].astype(str).to_numpy()[disagree],
            "direction": keys["direction"].to_numpy()[disagree],
            "category": instances["category"].astype(str).to_numpy()[disagree] if "category" in instances else "",
            "mode": instances["mode"].astype(str).to_numpy()[disagree] if "mode" in instances else "",
            "condition": keys["condition"].to_numpy()[disagree],
            "a": adj[disagree],
        }
    )
    out = (
        d.groupby(["stratum", "model", "direction", "category", "mode", "condition"], sort=True)["a"]
        .agg(n_disagreements="size", n_reviewed="count", pi_hat="mean")
        .reset_index()
    )
    w_a = _model_weight_a(instances["model"].astype(str).to_numpy(), keys["condition"].to_numpy(), disagree, g, adj)
    w = pd.Series(w_a.reindex(pd.MultiIndex.from_frame(out[["model", "condition"]])).to_numpy()).fillna(0.5).to_numpy()
    fallback = np.where(out["direction"] == DIRECTION_A1B0, w, 1.0 - w)
    out["provisional"] = out["n_reviewed"] == 0
    out["p_used"] = np.where(out["provisional"], fallback, out["pi_hat"])
    return out[RATE_COLUMNS]


def calibrate_stratified(
    instances: pd.DataFrame,
    adjudications: pd.DataFrame,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    strata: Sequence[str] = STRATUM_COLUMNS,
    iid: str = INSTANCE_KEY,
    rates: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Stratified calibration p_u (ReFormBench, arXiv:2610.19693, §3.5 eq. 8;
    docs/metrics.md#stratified-calibration).

    ``p_u = g_u`` if ``g_u = m_u``; ``a_u`` if u was reviewed; ``π̂_{h(u)}`` otherwise, with
    the fallback of :func:`stratum_rates` for strata without reviews (``provisional``).
    Missing labels follow the module rule (one label: use it; none: NaN).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame (``iid, model, category, mode`` and the two label columns).
    adjudications : DataFrame
        ADJUDICATIONS frame (``iid, a``).
    judge_a, judge_b, strata, iid
        Column roles, as in :func:`stratum_rates`.
    rates : DataFrame, optional
        The :func:`stratum_rates` result for the same arguments, if already computed.

    Returns
    -------
    DataFrame
        A copy of ``instances`` with ``p`` (float), ``stratum`` (key for disagreements,
        empty otherwise), ``source`` (one of :data:`SOURCES`) and ``provisional`` (bool).
        ``attrs["n_missing"]`` counts rows with no judge label (p NaN).
    """
    g, m = _judge_labels(instances, judge_a, judge_b)
    if rates is None:
        rates = stratum_rates(instances, adjudications, judge_a=judge_a, judge_b=judge_b, strata=strata, iid=iid)
    adj = instances[iid].map(_adjudication_map(adjudications, iid)).to_numpy(dtype=float)
    keys = _strata_frame(instances, g, m, strata)
    has_g, has_m = ~np.isnan(g), ~np.isnan(m)
    agreed = has_g & has_m & (g == m)
    disagree = has_g & has_m & (g != m)
    reviewed = disagree & ~np.isnan(adj)
    unreviewed = disagree & ~reviewed
    stratum = np.where(disagree, keys["stratum"].to_numpy(), "")
    rate = pd.Series(rates["p_used"].to_numpy(), index=rates["stratum"].to_numpy())
    prov = pd.Series(rates["provisional"].to_numpy(), index=rates["stratum"].to_numpy())

    p = np.full(len(instances), np.nan)
    source = np.full(len(instances), "missing", dtype=object)
    p[agreed], source[agreed] = g[agreed], "agreed"
    only_g, only_m = has_g & ~has_m, has_m & ~has_g
    p[only_g], source[only_g] = g[only_g], "single_judge"
    p[only_m], source[only_m] = m[only_m], "single_judge"
    p[reviewed], source[reviewed] = adj[reviewed], "adjudicated"
    st = pd.Series(stratum[unreviewed])
    p[unreviewed] = st.map(rate).to_numpy(dtype=float)
    provisional = np.zeros(len(instances), dtype=bool)
    provisional[unreviewed] = st.map(prov).to_numpy(dtype=bool)
    source[unreviewed] = np.where(provisional[unreviewed], "fallback", "stratum")

    out = instances.copy(deep=False)  # pandas copy-on-write: columns shared until written, never the caller's
    out["p"], out["stratum"], out["source"], out["provisional"] = p, stratum, source, provisional
    out.attrs["n_missing"] = int((source == "missing").sum())
    return out


def pooled_weights(adjudications: pd.DataFrame, *, choice: str = "choice") -> pd.Series:
    """Pooled judge weights ``W_g`` = share of a fixed adjudication pool siding with judge g.

    ReFormBench (arXiv:2610.19693) App. A.3.2: 6,689 of 7,125 adjudications favour GPT →
    ``W = 93.88 %`` (docs/metrics.md#pooled-calibration).

    Parameters
    ----------
    adjudications : DataFrame
        The fixed pool; column ``choice`` names the judge whose judgment was selected.

    Returns
    -------
    Series
        Share per judge (index = the ``choice`` values, sorted), summing to 1.
    """
    _require(adjudications, [choice], "adjudications")
    sides = adjudications[choice]
    if len(sides) == 0:
        raise ValueError("pooled_weights needs at least one adjudication in the pool")
    if sides.isna().any():
        raise ValueError(f"column {choice!r} has missing values; every pooled adjudication must name a judge")
    return sides.astype(str).value_counts(normalize=True).sort_index().rename("weight")


def calibrate_pooled(
    instances: pd.DataFrame, w_a: float, *, judge_a: str = "label_a", judge_b: str = "label_b"
) -> pd.DataFrame:
    """Pooled calibration (ReFormBench, arXiv:2610.19693, App. A.3.2 eq. 13;
    docs/metrics.md#pooled-calibration).

    ``p = g`` if ``g = m``, else ``W_A·g + (1 − W_A)·m``; missing labels follow the module
    rule.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with the two label columns.
    w_a : float
        Weight of judge A in [0, 1] (e.g. ``pooled_weights(pool)["A"]``).

    Returns
    -------
    DataFrame
        A copy of ``instances`` with ``p`` and ``source`` (``agreed``, ``pooled``,
        ``single_judge``, ``missing``); ``attrs["n_missing"]`` as in
        :func:`calibrate_stratified`.
    """
    w_a = float(w_a)
    if not 0.0 <= w_a <= 1.0:
        raise ValueError(f"w_a must lie in [0, 1], got {w_a}")
    g, m = _judge_labels(instances, judge_a, judge_b)
    has_g, has_m = ~np.isnan(g), ~np.isnan(m)
    both = has_g & has_m
    p = np.where(both & (g != m), w_a * g + (1.0 - w_a) * m, np.where(has_g, g, m))
    source = np.select([both & (g == m), both, has_g | has_m], ["agreed", "pooled", "single_judge"], "missing")
    out = instances.copy(deep=False)  # pandas copy-on-write: columns shared until written, never the caller's
    out["p"], out["source"] = p, source
    out.attrs["n_missing"] = int((source == "missing").sum())
    return out

"""WISE wording-robustness metrics (docs/metrics.md#wording-robustness).

They follow the WISE paper, *When Verifiable Counts Depend on Wording: Auditing Wording
Robustness in Instruction Following* (§3, §5.4, App. F, G, I, P); "WISE" below cites it.

Input frames
------------
OUTPUTS — one row per checked generation (model × item × form × repetition):

    provider   str    model provider (only for the provider–model–item bootstrap)
    model      str    evaluated model
    item       str    base task; the same items are asked under every form
    form       str    wording form, e.g. "POS", "AVOID1"
    passed     bool   checker verdict (0/1 or bool)
    direction  str    failure direction from ``detail["direction"]`` of a wise:* checker
    target     int    requested word count (floor diagnostic only)
    words      int    observed word count (floor diagnostic only)

COMPLIANCE — the model × form table C̄_mf (rows = models, columns = forms, shares in
[0, 1]) returned by :func:`model_compliance` (WISE eq. 9).

All rates are shares in [0, 1] (multiply by 100 for the paper's percentages); contrasts
are computed from unrounded values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.agreement import item_bootstrap_weights, percentile_interval

RANKING_COLUMNS = ("tau_b", "reversal_rate", "top3_jaccard", "max_rank_shift")
SCHEMES = ("provider-model-item", "model-item", "equal-model-item", "item")
TIE_DECIMALS = 12  # compliance values equal to this many decimals count as tied
# A ranking statistic's interval is taken over the replicates where it is defined (τ_b has no value
# when every model ties under a form); below this share of defined replicates it has none.
RANKING_MIN_DEFINED = 0.5


# --------------------------------------------------------------------------- checks


def _require_columns(df: pd.DataFrame, columns, fn: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{fn}: expected a DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{fn}: missing column(s) {missing}; the frame has {list(df.columns)}")


def _binary(series: pd.Series, fn: str) -> pd.Series:
    if series.isna().any():
        raise ValueError(f"{fn}: column {series.name!r} has {int(series.isna().sum())} missing verdict(s)")
    if not (pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series)):
        raise ValueError(f"{fn}: column {series.name!r} must be bool or 0/1, got dtype {series.dtype}")
    values = series.astype(float)
    bad = ~values.isin([0.0, 1.0])
    if bad.any():
        raise ValueError(f"{fn}: column {series.name!r} must be 0/1, got {list(pd.unique(series[bad]))[:5]}")
    return values


def _check_compliance(compliance: pd.DataFrame, reference: str | None, fn: str, *, shares: bool = True) -> pd.DataFrame:
    if not isinstance(compliance, pd.DataFrame):
        raise ValueError(f"{fn}: compliance must be a DataFrame (rows = models, columns = forms)")
    if reference is not None and reference not in compliance.columns:
        raise ValueError(f"{fn}: reference form {reference!r} is not a column; forms are {list(compliance.columns)}")
    if compliance.empty:
        raise ValueError(f"{fn}: compliance table is empty")
    values = compliance.apply(pd.to_numeric, errors="coerce")
    bad = values.isna()
    if bad.any().any():
        model, form = bad.stack()[lambda s: s].index[0]
        raise ValueError(f"{fn}: compliance of model {model!r} under form {form!r} is missing or not numeric")
    if shares and ((values < 0) | (values > 1)).any().any():
        raise ValueError(f"{fn}: compliance must be shares in [0, 1] (divide percentages by 100)")
    return values.astype(float)


# --------------------------------------------------------------------------- compliance


def model_compliance(
    df: pd.DataFrame, *, model: str = "model", form: str = "form", passed: str = "passed"
) -> pd.DataFrame:
    """Per-model compliance C̄_mf: the share of passing outputs over items × repetitions.

    WISE App. F, eq. 9. Returns rows = models, columns = forms (shares in [0, 1]); a
    model that lacks a form has NaN there (later functions reject it with a message).
    """
    fn = "model_compliance"
    _require_columns(df, [model, form, passed], fn)
    d = df[[model, form]].assign(_p=_binary(df[passed], fn))
    out = d.pivot_table(index=model, columns=form, values="_p", aggfunc="mean", sort=False)
    out.columns.name = None
    return out


def pooled_compliance(compliance: pd.DataFrame) -> pd.Series:
    """Pooled compliance C̄_f per form, equal weight per model (WISE §3, eq. 4;
    docs/metrics.md#compliance-and-contrasts)."""
    return _check_compliance(compliance, None, "pooled_compliance").mean(axis=0)


def wording_contrasts(compliance: pd.DataFrame, *, reference: str = "POS") -> pd.DataFrame:
    """Pooled compliance and Δ_f = C̄_f − C̄_ref per form (WISE eqs. 4, 5).

    Returns a frame indexed by form with columns ``compliance`` and ``delta``.
    """
    c = _check_compliance(compliance, reference, "wording_contrasts").mean(axis=0)
    return pd.DataFrame({"compliance": c, "delta": c - c[reference]})


def _robustness_row(c: pd.Series, reference: str) -> dict:
    return {
        "reference": c[reference],
        "c_mean": c.mean(),
        "c_worst": c.min(),
        "worst_form": c.idxmin(),
        "c_best": c.max(),
        "best_form": c.idxmax(),
        "g_wording": c.max() - c.min(),
    }


def robustness(compliance: pd.DataFrame, *, reference: str = "POS") -> pd.Series:
    """Pooled wording-robustness summary (WISE eqs. 6–8, Table 11;
    docs/metrics.md#robustness-summary).

    Returns ``reference`` (C̄ of the reference form), ``c_mean`` (mean over forms),
    ``c_worst`` / ``worst_form`` (minimum), ``c_best`` / ``best_form`` and ``g_wording``
    (max − min), all over the pooled per-form compliance.
    """
    c = _check_compliance(compliance, reference, "robustness").mean(axis=0)
    return pd.Series(_robustness_row(c, reference), dtype=object)


def model_robustness(compliance: pd.DataFrame, *, reference: str = "POS") -> pd.DataFrame:
    """The summary of :func:`robustness` per model (WISE §3; Table 19 "Gap")."""
    c = _check_compliance(compliance, reference, "model_robustness")
    return pd.DataFrame([_robustness_row(row, reference) for _, row in c.iterrows()], index=c.index)


def failure_directions(
    df: pd.DataFrame, *, model: str = "model", form: str = "form", direction: str = "direction"
) -> pd.DataFrame:
    """Failure-direction profile per form, equal weight per model (WISE Tables 4, 15, 16;
    docs/metrics.md#failure-direction).

    Each model's share of outputs in each direction (e.g. under / exact / over) under a
    form, averaged over models. Returns rows = forms, columns = direction labels.
    """
    fn = "failure_directions"
    _require_columns(df, [model, form, direction], fn)
    if df[direction].isna().any():
        raise ValueError(f"{fn}: column {direction!r} has {int(df[direction].isna().sum())} missing value(s)")
    shares = pd.crosstab([df[model], df[form]], df[direction], normalize="index")
    out = shares.groupby(level=1, sort=False).mean()
    out.index.name, out.columns.name = None, None
    return out


# --------------------------------------------------------------------------- rankings


def _ranking_metrics(c: np.ndarray, ref: int) -> dict[str, np.ndarray]:
    """Ranking-stability metrics of ``c`` (replicates × models × forms) against form ``ref``.

    Kendall τ_b = Σ s_ref s_f / sqrt(Σ|s_ref| Σ|s_f|) over model pairs (s = sign of the
    compliance difference); strict reversal rate over pairs untied under both forms (seed
    002 eq. 10); top-3 Jaccard of the sets of models with competition rank ≤ 3 (ties at the
    boundary all enter); maximum absolute change in average rank (rank 1 = best).
    """
    c = np.round(c, TIE_DECIMALS)
    a, b = np.triu_indices(c.shape[1], 1)
    s = np.sign(c[:, a, :] - c[:, b, :])
    s_ref = s[:, :, [ref]]
    prod = s * s_ref
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = prod.sum(axis=1) / np.sqrt(np.abs(s_ref).sum(axis=1) * np.abs(s).sum(axis=1))
        reversal = (prod < 0).sum(axis=1) / (prod != 0).sum(axis=1)
    from scipy import stats  # imported when used: a slow import

    avg_rank = stats.rankdata(-c, method="average", axis=1)
    top = stats.rankdata(-c, method="min", axis=1) <= 3
    jaccard = (top & top[:, :, [ref]]).sum(axis=1) / (top | top[:, :, [ref]]).sum(axis=1)
    shift = np.abs(avg_rank - avg_rank[:, :, [ref]]).max(axis=1)
    return {"tau_b": tau, "reversal_rate": reversal, "top3_jaccard": jaccard, "max_rank_shift": shift}


def ranking_stability(compliance: pd.DataFrame, reference: str = "POS") -> pd.DataFrame:
    """Stability of the model ranking under each form relative to ``reference``.

    docs/metrics.md#ranking-stability; WISE §3, §5.4 (Table 5) and App. F. Models are ranked by compliance (rank 1 =
    highest; ties get average ranks).

    Parameters
    ----------
    compliance : DataFrame
        Rows = models, columns = forms (any common scale).
    reference : str
        The reference form (POS).

    Returns
    -------
    DataFrame
        Indexed by the non-reference forms, columns:
        ``tau_b`` — Kendall's τ_b between the two compliance vectors
        (``scipy.stats.kendalltau``); NaN when either form gives every model the same value;
        ``reversal_rate`` — share in [0, 1] of model pairs strictly ordered under both forms
        whose order reverses (eq. 10); NaN when no pair is strictly ordered under both;
        ``top3_jaccard`` — Jaccard overlap of the top-3 sets (models with competition rank
        ≤ 3, so a tie at rank 3 includes all tied models);
        ``max_rank_shift`` — largest absolute change in a model's average rank.
    """
    c = _check_compliance(compliance, reference, "ranking_stability", shares=False)
    if len(c) < 2:
        raise ValueError(f"ranking_stability: needs at least 2 models, got {len(c)}")
    forms = [f for f in c.columns if f != reference]
    ref = list(c.columns).index(reference)
    values = np.round(c.to_numpy(), TIE_DECIMALS)
    metrics = _ranking_metrics(values[None], ref)
    out = pd.DataFrame({k: v[0] for k, v in metrics.items()}, index=c.columns).loc[forms, list(RANKING_COLUMNS)]
    from scipy.stats import kendalltau  # imported when used: a slow import

    x = values[:, ref]
    for f in forms:
        y = values[:, list(c.columns).index(f)]
        constant = np.ptp(x) == 0 or np.ptp(y) == 0
        out.loc[f, "tau_b"] = np.nan if constant else kendalltau(x, y, variant="b").statistic
    return out


# --------------------------------------------------------------------------- bootstrap


def _cells(df, *, model, item, form, passed, fn):
    """Per model: the item × form table of mean verdicts over repetitions."""
    _require_columns(df, [model, item, form, passed], fn)
    d = df[[model, item, form]].assign(_p=_binary(df[passed], fn))
    g = d.groupby([model, item, form], sort=True)["_p"].mean().unstack(form)
    if g.isna().any().any():
        m, i = g.index[g.isna().any(axis=1)][0]
        lacking = list(g.columns[g.loc[(m, i)].isna()])
        raise ValueError(
            f"{fn}: model {m!r}, item {i!r} has no output under form(s) {lacking}; "
            "the matched design needs every form for every (model, item)"
        )
    models = list(g.index.get_level_values(0).unique())
    return models, list(g.columns), [g.loc[m] for m in models]


def _item_means(table: pd.DataFrame, n_boot: int, rng) -> np.ndarray:
    a = table.to_numpy()
    return item_bootstrap_weights(len(a), n_boot, rng) @ a / len(a)


def _draw_instances(groups: list[np.ndarray], n_boot: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Replicate ids and model ids of a two-level draw: groups, then members within groups."""
    slot = rng.integers(0, len(groups), size=(n_boot, len(groups)))
    reps, models = [], []
    for g, members in enumerate(groups):
        rep_of_slot = np.nonzero(slot == g)[0]
        draws = rng.integers(0, len(members), size=(len(rep_of_slot), len(members)))
        reps.append(np.repeat(rep_of_slot, len(members)))
        models.append(members[draws].ravel())
    return np.concatenate(reps), np.concatenate(models)


def bootstrap_pooled(
    df: pd.DataFrame,
    *,
    scheme: str = "provider-model-item",
    n_boot: int = 2000,
    rng: np.random.Generator | None = None,
    provider: str = "provider",
    model: str = "model",
    item: str = "item",
    form: str = "form",
    passed: str = "passed",
) -> pd.DataFrame:
    """Bootstrap replicates of the pooled per-form compliance C̄_f (WISE §4, App. P;
    docs/metrics.md#bootstrap-intervals-and-holm).

    Every replicate keeps all forms and repetitions of each sampled (model, item), so form
    contrasts stay matched. Schemes:

    ``"provider-model-item"`` — resample providers, then models within each sampled
    provider, then items within each sampled model (main WISE intervals);
    ``"model-item"`` — resample models, then items within each sampled model;
    ``"equal-model-item"`` — keep every model, resample items independently within each
    model, average models with equal weight;
    ``"item"`` — keep every model, resample items jointly across models (the task bootstrap
    of Table 5; needs the same items for every model).

    Returns an ``n_boot × forms`` frame of pooled compliance shares.
    """
    fn = "bootstrap_pooled"
    if scheme not in SCHEMES:
        raise ValueError(f"{fn}: scheme must be one of {SCHEMES}, got {scheme!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{fn}: needs rng=numpy.random.default_rng(seed), got {rng!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"{fn}: n_boot must be an integer >= 2, got {n_boot!r}")
    models, forms, tables = _cells(df, model=model, item=item, form=form, passed=passed, fn=fn)
    if scheme == "item":
        return pd.DataFrame(_joint_item_means(tables, n_boot, rng, fn).mean(axis=1), columns=forms)
    if scheme == "equal-model-item":
        return pd.DataFrame(np.mean([_item_means(t, n_boot, rng) for t in tables], axis=0), columns=forms)
    if scheme == "model-item":
        groups = [np.arange(len(models))]
    else:
        _require_columns(df, [provider], fn)
        prov = df.groupby(model)[provider].unique()
        multi = prov[prov.map(len) > 1]
        if len(multi):
            raise ValueError(f"{fn}: model {multi.index[0]!r} has several providers {list(multi.iloc[0])}")
        of_model = np.array([prov[m][0] for m in models], dtype=object)
        groups = [np.nonzero(of_model == p)[0] for p in pd.unique(of_model)]
    reps, inst = _draw_instances(groups, n_boot, rng)
    sums = np.zeros((n_boot, len(forms)))
    for m, table in enumerate(tables):
        sel = inst == m
        if sel.any():
            np.add.at(sums, reps[sel], _item_means(table, int(sel.sum()), rng))
    return pd.DataFrame(sums / np.bincount(reps, minlength=n_boot)[:, None], columns=forms)


def _joint_item_means(tables: list[pd.DataFrame], n_boot: int, rng, fn: str) -> np.ndarray:
    """Replicates × models × forms compliance when items are resampled jointly across models."""
    items = tables[0].index
    for t in tables[1:]:
        if not t.index.equals(items):
            raise ValueError(f"{fn}: the joint item bootstrap needs the same items for every model")
    w = item_bootstrap_weights(len(items), n_boot, rng)
    return np.stack([w @ t.to_numpy() / len(items) for t in tables], axis=1)


def bootstrap_p_value(replicates: np.ndarray) -> float:
    """Two-sided bootstrap p-value of H0: contrast = 0, ``min(1, 2·min(P(δ* ≤ 0), P(δ* ≥ 0)))``.

    Computed from the same draws as the interval (WISE App. G).
    """
    r = np.asarray(replicates, dtype=float)
    return float(min(1.0, 2 * min(np.mean(r <= 0), np.mean(r >= 0))))


def holm(p_values) -> np.ndarray:
    """Holm step-down adjusted p-values within one family (``statsmodels`` ``multipletests``).

    WISE App. G: the correction is applied separately within each experimental family.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or p.size == 0 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"holm: p-values must be a non-empty 1-D list of numbers in [0, 1], got {p_values!r}")
    from statsmodels.stats.multitest import multipletests  # imported when used: a slow import

    return multipletests(p, method="holm")[1]


def contrast_intervals(
    df: pd.DataFrame,
    *,
    reference: str = "POS",
    scheme: str = "provider-model-item",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    provider: str = "provider",
    model: str = "model",
    item: str = "item",
    form: str = "form",
    passed: str = "passed",
) -> pd.DataFrame:
    """Contrasts Δ_f against the reference with bootstrap intervals and Holm p-values.

    WISE §4 "Uncertainty", Tables 2, 4, 10, 23. The point values are the pooled
    compliance (equal weight per model); intervals are percentile intervals of the
    :func:`bootstrap_pooled` replicates under ``scheme``; ``p_holm`` corrects the
    non-reference forms of this call as one family.

    Returns
    -------
    DataFrame
        Indexed by the non-reference forms: ``compliance``, ``delta``, ``ci_low``,
        ``ci_high``, ``p_value``, ``p_holm`` (shares / differences of shares).
    """
    fn = "contrast_intervals"
    if not 0 < level < 1:
        raise ValueError(f"{fn}: level must lie in (0, 1), got {level!r}")
    point = wording_contrasts(model_compliance(df, model=model, form=form, passed=passed), reference=reference)
    reps = bootstrap_pooled(
        df, scheme=scheme, n_boot=n_boot, rng=rng, provider=provider, model=model, item=item, form=form, passed=passed
    )
    forms = [f for f in point.index if f != reference]
    rows = []
    for f in forms:
        d = (reps[f] - reps[reference]).to_numpy()
        lo, hi = percentile_interval(d, level=level, what=f"{f} − {reference}")
        rows.append({"ci_low": lo, "ci_high": hi, "p_value": bootstrap_p_value(d)})
    out = point.loc[forms].join(pd.DataFrame(rows, index=forms))
    out["p_holm"] = holm(out["p_value"].to_numpy()) if forms else []
    return out


def ranking_stability_intervals(
    df: pd.DataFrame,
    *,
    reference: str = "POS",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    model: str = "model",
    item: str = "item",
    form: str = "form",
    passed: str = "passed",
) -> pd.DataFrame:
    """Task-bootstrap intervals of :func:`ranking_stability` (WISE Table 5).

    Items are resampled jointly across models (all models kept), the model × form
    compliance is recomputed per replicate, and each metric gets a percentile interval over
    the replicates where *it* is defined (τ_b and the reversal rate are undefined when all
    models tie under a form; the Jaccard and the rank shift always are): one statistic's
    undefined replicates never cost another statistic its interval. Returns a frame indexed
    by the non-reference forms with ``<metric>_low``, ``<metric>_high`` and
    ``<metric>_undefined`` (the count of replicates without a value) for the four metrics;
    the bounds are NaN where fewer than :data:`RANKING_MIN_DEFINED` of the replicates are
    defined.
    """
    fn = "ranking_stability_intervals"
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{fn}: needs rng=numpy.random.default_rng(seed), got {rng!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"{fn}: n_boot must be an integer >= 2, got {n_boot!r}")
    models, forms, tables = _cells(df, model=model, item=item, form=form, passed=passed, fn=fn)
    if reference not in forms:
        raise ValueError(f"{fn}: reference form {reference!r} not found; forms are {forms}")
    if len(models) < 2:
        raise ValueError(f"{fn}: needs at least 2 models, got {len(models)}")
    ref = forms.index(reference)
    metrics = _ranking_metrics(_joint_item_means(tables, n_boot, rng, fn), ref)
    out = {}
    for name in RANKING_COLUMNS:
        reps = [metrics[name][:, j] for j in range(len(forms)) if j != ref]
        bounds = [_defined_interval(r, level) for r in reps]
        out[f"{name}_low"] = [b[0] for b in bounds]
        out[f"{name}_high"] = [b[1] for b in bounds]
        out[f"{name}_undefined"] = [int((~np.isfinite(r)).sum()) for r in reps]
    return pd.DataFrame(out, index=[f for f in forms if f != reference])


def _defined_interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval over the finite replicates; NaN when fewer than RANKING_MIN_DEFINED are."""
    ok = np.isfinite(reps)
    if not ok.any() or ok.mean() < RANKING_MIN_DEFINED:
        return np.nan, np.nan
    lo, hi = np.quantile(reps[ok], [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


# --------------------------------------------------------------------------- floor regime


def target_profile(
    df: pd.DataFrame, *, model: str = "model", target: str = "target", words: str = "words", passed: str = "passed"
) -> pd.DataFrame:
    """Exact compliance and mean observed length per model and requested target (Table 12).

    Returns one row per (model, target) with ``exact`` (share passing), ``mean_words`` and
    ``mean_error`` (mean observed minus requested words).
    """
    fn = "target_profile"
    _require_columns(df, [model, target, words, passed], fn)
    for col in (target, words):
        if df[col].isna().any() or not pd.api.types.is_numeric_dtype(df[col]):
            raise ValueError(f"{fn}: column {col!r} must hold numbers without gaps")
    d = df[[model, target, words]].assign(_p=_binary(df[passed], fn))
    out = d.groupby([model, target], sort=True).agg(exact=("_p", "mean"), mean_words=(words, "mean")).reset_index()
    out["mean_error"] = out["mean_words"] - out[target]
    return out


def floor_regime(
    profile: pd.DataFrame,
    *,
    model: str = "model",
    target: str = "target",
    exact: str = "exact",
    mean_words: str = "mean_words",
    max_exact: float = 0.01,
    max_word_change: float = 1.0,
) -> pd.DataFrame:
    """Saved-output floor diagnostic of WISE App. I.

    A model is in the floor regime when its exact compliance is at most ``max_exact`` (1 %)
    at every target above the smallest, and its mean observed length changes by less than
    ``max_word_change`` (one word) from the smallest to the largest target.

    Parameters
    ----------
    profile : DataFrame
        Output of :func:`target_profile` (one row per model and target, shares in [0, 1]).

    Returns
    -------
    DataFrame
        Indexed by model: ``max_exact_above_min``, ``word_change`` (mean words at the largest
        minus at the smallest target) and ``floor`` (bool).
    """
    fn = "floor_regime"
    _require_columns(profile, [model, target, exact, mean_words], fn)
    rows = {}
    for m, g in profile.groupby(model, sort=False):
        g = g.sort_values(target)
        if g[target].nunique() != len(g) or len(g) < 2:
            raise ValueError(f"{fn}: model {m!r} needs one row per target and at least 2 targets")
        above = g[exact].iloc[1:]
        change = g[mean_words].iloc[-1] - g[mean_words].iloc[0]
        rows[m] = {
            "max_exact_above_min": float(above.max()),
            "word_change": float(change),
            "floor": bool(above.max() <= max_exact and abs(change) < max_word_change),
        }
    return pd.DataFrame.from_dict(rows, orient="index")

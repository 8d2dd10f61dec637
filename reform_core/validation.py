"""Statistical validation of calibration and intervals on the simulator (issue 5).

The simulator (:mod:`reform_core.simulate`) knows the true pass label of every instance,
so the whole adjudication pipeline can be run against it and compared with the truth:

1. ``simulate(seed, scale)`` builds a project; only the ``main`` condition is scored;
2. the judge disagreements are stratified, sized (Cochran/FPC) and allocated, and the
   sample is drawn with the seeded generator (SPEC §4, :mod:`reform_core.sampling`);
3. the simulator's oracle adjudicates the sample (the truth, flipped with
   ``human_error``);
4. stratified calibration gives ``p_u`` (SPEC §4, seed 000 §3.5 eqs. 7–8);
5. TCPR, EMCR and R^(1..3) are computed from the calibrated ``p``, from each judge's raw
   labels and from the hidden true labels, all on the same eligible units (the baseline is
   known, so the units do not depend on the labels; SPEC §3, seed 000 eqs. 1–5, 9);
6. the engine's 95 % interval (:func:`reform_core.metrics.intervals.bootstrap_intervals`:
   cluster bootstrap over questions that also resamples the adjudications within each
   stratum) and, as a diagnostic, an adjudication-only interval (question weights fixed at
   1, only the stratum rates resampled) are computed.

**Truth** is the finite-population score of the same instances computed from the hidden
true labels: ``p = truth``. **Closer** means a smaller mean absolute error over models and
replicates: ``MAE = mean |score − truth|`` in percentage points. **Coverage** is the share
of (replicate, model) pairs whose interval contains the truth score, with an exact
Clopper–Pearson interval (``scipy.stats.binomtest``).

Two extra estimators split the calibration error into its sources:

* ``oracle_disagreements`` — agreed instances keep the judges' label, every disagreement
  gets its true label: what calibration would reach with every disagreement adjudicated
  perfectly; its error is caused only by instances on which both judges are wrong;
* ``true_rates`` — as calibration, but each unreviewed disagreement gets the true pass
  share of its stratum's unreviewed disagreements instead of π̂_h: its error beyond
  ``oracle_disagreements`` is the cost of treating a disagreement's label as independent
  of the other instances of its instruction / eligible unit (the stratum-rate assumption).
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from reform_core import sampling
from reform_core.calibration import calibrate_stratified, stratum_rates
from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY
from reform_core.metrics import reform
from reform_core.metrics.intervals import METRICS, bootstrap_intervals, replicate_scores, row_strata
from reform_core.simulate import simulate

ESTIMATORS = ("calibrated", "judge_a", "judge_b", "oracle_disagreements", "true_rates")
REPLICATE_COLUMNS = [
    "seed", "model", "metric", "truth", *ESTIMATORS, "ci_low", "ci_high", "adj_low", "adj_high",
    "n_disagreements", "n_adjudicated",
]


def _check_level(level: float) -> None:
    if not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")


def _percentile_interval(reps: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of (B, n_models) replicates; NaN where none is defined."""
    alpha = 100 * (1 - level) / 2
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    ok = (~np.isnan(reps)).any(axis=0)
    if ok.any():
        lo[ok], hi[ok] = np.nanpercentile(reps[:, ok], [alpha, 100 - alpha], axis=0)
    return lo, hi


def run_replicate(
    seed: int,
    *,
    rng: np.random.Generator,
    scale: str = "paper",
    n_boot: int = 2000,
    level: float = 0.95,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
    **sim_options,
) -> pd.DataFrame:
    """One validation replicate: simulate, sample, adjudicate, calibrate, score, intervals.

    Sampling follows SPEC §4 (Cochran/FPC size per model, proportional allocation over
    direction × category × mode strata, seeded draw); calibration is stratified (seed 000
    §3.5 eqs. 7–8); scores follow SPEC §3 (seed 000 eqs. 1–5, 9); the engine interval is the
    percentile interval of the cluster bootstrap over questions with adjudication
    resampling (SPEC §3 "Beyond the paper"; Efron & Tibshirani 1993, §13.3).

    Parameters
    ----------
    seed : int
        Seed of the simulated project (:func:`reform_core.simulate.simulate`).
    rng : numpy.random.Generator
        Randomness of the sample draw, the oracle's human error and both bootstraps.
    scale : {"paper", "small"}
        Simulator scale; ``sim_options`` override its fields (e.g. ``n_questions``,
        ``n_instructions``, ``n_models``, ``human_error``).
    n_boot : int
        Bootstrap replicates of each interval.
    level : float
        Interval level.
    confidence, p, margin : float
        Cochran parameters (:func:`reform_core.sampling.cochran_size`).

    Returns
    -------
    DataFrame
        One row per (model, metric) with ``metric`` in ``tcpr, emcr, r1, r2, r3``:
        ``seed, model, metric, truth``, the estimates of :data:`ESTIMATORS` (%),
        ``ci_low, ci_high`` (engine interval), ``adj_low, adj_high`` (adjudication-only
        interval), ``n_disagreements, n_adjudicated`` (of that model).
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    _check_level(level)
    sim = simulate(seed, scale, **sim_options)
    ja, jb = (f"label_{j}" for j in sim.judges)
    inst = sim.instances()
    inst = inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)

    dis = sampling.disagreements(inst, judge_a=ja, judge_b=jb)
    plan = sampling.plan(dis, confidence=confidence, p=p, margin=margin)
    sample = sampling.draw(dis, plan, rng=rng)
    adj = pd.DataFrame({INSTANCE_KEY: sample[INSTANCE_KEY].to_numpy(),
                        "a": sim.oracle(sample[INSTANCE_KEY], rng).to_numpy()})
    cal = calibrate_stratified(inst, adj, judge_a=ja, judge_b=jb)
    # π̂_h depend only on the disagreements: rating that subset gives the same table, faster.
    rates = stratum_rates(inst[inst[INSTANCE_KEY].isin(dis[INSTANCE_KEY])], adj, judge_a=ja, judge_b=jb)

    truth = cal["truth"].to_numpy(dtype=float)
    disagree = cal[ja].to_numpy() != cal[jb].to_numpy()
    unreviewed = cal["source"].isin(["stratum", "fallback"]).to_numpy()
    true_share = pd.Series(truth[unreviewed]).groupby(cal["stratum"].to_numpy()[unreviewed]).transform("mean")
    columns = {
        "truth": truth,
        "calibrated": cal["p"].to_numpy(dtype=float),
        "judge_a": cal[ja].to_numpy(dtype=float),
        "judge_b": cal[jb].to_numpy(dtype=float),
        "oracle_disagreements": np.where(disagree, truth, cal[ja].to_numpy(dtype=float)),
    }
    columns["true_rates"] = columns["calibrated"].copy()
    columns["true_rates"][unreviewed] = true_share.to_numpy()
    scored = cal.assign(**{f"_v_{k}": v for k, v in columns.items()})

    index = reform.build_index(scored)
    tables = {k: reform.table2(scored, p=f"_v_{k}", index=index) for k in columns}
    engine = bootstrap_intervals(scored, n_boot=n_boot, level=level, rng=rng, rates=rates, index=index)

    # Adjudication-only interval: every question once, stratum rates resampled as the engine does.
    pv = index.pass_vector(scored, "p")
    h, pi_hat, n_rev = row_strata(index, scored, rates, pv)
    pi = rng.binomial(n_rev[:, None], pi_hat[:, None], size=(len(pi_hat), n_boot)) / n_rev[:, None]
    adj_reps = replicate_scores(index, pv, np.ones((n_boot, len(index.questions))), row_stratum=h, pi=pi)

    n_dis = dis.groupby("model").size()
    n_adj = sample.groupby("model").size()
    models = index.models
    parts = []
    for metric in METRICS:
        e = engine[engine["metric"] == metric].set_index("model").reindex(models)
        adj_lo, adj_hi = _percentile_interval(adj_reps[metric], level)
        part = pd.DataFrame({"seed": seed, "model": models, "metric": metric})
        for k in columns:
            part[k] = tables[k][metric].to_numpy()
        part["ci_low"], part["ci_high"] = e["ci_low"].to_numpy(), e["ci_high"].to_numpy()
        part["adj_low"], part["adj_high"] = adj_lo, adj_hi
        part["n_disagreements"] = n_dis.reindex(models).fillna(0).astype(np.int64).to_numpy()
        part["n_adjudicated"] = n_adj.reindex(models).fillna(0).astype(np.int64).to_numpy()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[REPLICATE_COLUMNS]


def run_replicates(seeds, **kwargs) -> pd.DataFrame:
    """:func:`run_replicate` for each seed, concatenated.

    Each replicate's generator is ``numpy.random.default_rng([seed, 1])`` — a stream
    distinct from the simulator's ``default_rng(seed)`` — so a replicate is reproducible
    from its seed alone. ``kwargs`` go to :func:`run_replicate`.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one replicate")
    return pd.concat([run_replicate(int(s), rng=np.random.default_rng([int(s), 1]), **kwargs) for s in seeds],
                     ignore_index=True)


def _coverage(hit: np.ndarray, level: float) -> tuple[float, float, float, int]:
    n = len(hit)
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    k = int(hit.sum())
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return k / n, ci.low, ci.high, k


def summarize(replicates: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Errors and coverage over replicates, per metric.

    ``MAE_e = mean over (replicate, model) of |e − truth|`` (percentage points) for each
    estimator e; ``bias_calibrated`` is the mean signed error; ``win_a`` / ``win_b`` are the
    shares of replicates whose model-mean absolute error of the calibrated score is below
    judge A's / B's. Coverage = share of (replicate, model) pairs with
    ``low ≤ truth ≤ high``, with an exact Clopper–Pearson interval (Clopper & Pearson
    1934; ``scipy.stats.binomtest(...).proportion_ci(method="exact")``). The binomial
    interval treats pairs as independent; models of one replicate share its questions, so
    it is, if anything, too narrow.

    Pairs whose truth is undefined (a model without eligible units at some K) are left out
    and counted in ``n_undefined``.

    Parameters
    ----------
    replicates : DataFrame
        Output of :func:`run_replicate` / :func:`run_replicates`.
    level : float
        Level of the coverage figure's binomial interval.

    Returns
    -------
    DataFrame
        One row per metric: ``metric, n_pairs, n_undefined, mae_<estimator>…,
        bias_calibrated, win_a, win_b, coverage, coverage_low, coverage_high, covered,
        width, adj_coverage, adj_coverage_low, adj_coverage_high, adj_width``.
    """
    _check_level(level)
    missing = [c for c in REPLICATE_COLUMNS if c not in replicates.columns]
    if missing:
        raise ValueError(f"replicates lack column(s) {missing}; pass run_replicate(...) output")
    if replicates.empty:
        raise ValueError("replicates is empty")
    rows = []
    for metric, df in replicates.groupby("metric", sort=False):
        defined = df["truth"].notna()
        d = df[defined]
        row = {"metric": metric, "n_pairs": len(d), "n_undefined": int((~defined).sum())}
        err = {e: (d[e] - d["truth"]).abs() for e in ESTIMATORS}
        for e in ESTIMATORS:
            row[f"mae_{e}"] = err[e].mean()
        row["bias_calibrated"] = (d["calibrated"] - d["truth"]).mean()
        per_rep = pd.DataFrame(err).groupby(d["seed"].to_numpy()).mean()
        row["win_a"] = (per_rep["calibrated"] < per_rep["judge_a"]).mean()
        row["win_b"] = (per_rep["calibrated"] < per_rep["judge_b"]).mean()
        for prefix, lo, hi in (("", "ci_low", "ci_high"), ("adj_", "adj_low", "adj_high")):
            hit = ((d[lo] <= d["truth"]) & (d["truth"] <= d[hi])).to_numpy()
            cov, cov_lo, cov_hi, k = _coverage(hit, level)
            row[f"{prefix}coverage"], row[f"{prefix}coverage_low"], row[f"{prefix}coverage_high"] = cov, cov_lo, cov_hi
            if not prefix:
                row["covered"] = k
            row[f"{prefix}width"] = (d[hi] - d[lo]).mean()
        rows.append(row)
    return pd.DataFrame(rows)

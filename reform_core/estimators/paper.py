"""The paper's calibration rules as estimators with two intervals
(docs/metrics.md#judging-and-calibration, #intervals-of-the-paper-rules).

``stratified`` (ReFormBench, arXiv:2610.19693, §3.5 eqs. 7–8; main results of the paper) and ``pooled`` (App.
A.3.2 eq. 13; the paper's auxiliary analyses) keep their point estimates exactly as
:mod:`reform_core.calibration` computes them; this module adds the two named intervals:

* **measurement** — the score of this fixed benchmark: only the calibration's estimated
  rates vary. Each reviewed stratum's pass rate is drawn from its Jeffreys posterior
  ``Beta(s + ½, n − s + ½)`` (s = sum of the decisions' labels, n = decisions), so a
  stratum reviewed at 0 % or 100 % still varies (a binomial resample of ``n`` identical
  labels would not: 130 of 311 strata of a paper-scale run had that zero variance);
  a stratum with no review yet (provisional fallback point) draws from the prior
  ``Beta(½, ½)`` — its rate is unknown, so it never contributes zero variance either;
  the pooled weight ``W_A`` likewise from ``Beta(k + ½, n − k + ½)``;
* **population** — adds a cluster bootstrap over questions (question weights shared by
  all models) to the same rate draws.

Both are percentile intervals of ``n_boot`` replicates computed with the engine's
``exp(E @ log π)`` trick (:func:`reform_core.metrics.intervals.replicate_scores`). These
rules assume that agreeing judges are right, that adjudicators are right and that truths
are independent across a question's variants (docs/metrics.md#default-estimator): under correlated truths their
measurement intervals do not cover — that is what the default estimator is for.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.calibration import calibrate_pooled, calibrate_stratified, stratum_rates
from reform_core.frames import INSTANCE_KEY, require_columns
from reform_core.metrics.intervals import METRICS, point_scores, replicate_score_sets
from reform_core.unit_index import UnitIndex, build_index


def _percentile(reps: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 100 * (1 - level) / 2
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    ok = (~np.isnan(reps)).any(axis=0)
    if ok.any():
        lo[ok], hi[ok] = np.nanpercentile(reps[:, ok], [alpha, 100 - alpha], axis=0)
    return lo, hi


def _intervals(
    index: UnitIndex,
    pv: np.ndarray,
    row_param: np.ndarray,
    draws: np.ndarray,
    *,
    n_boot: int,
    level: float,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Point, measurement and population intervals for rows whose ``p`` is a parameter.

    ``row_param[r]`` = index of the parameter carried by scored row r (-1: fixed);
    ``draws`` (n_params, n_boot) its replicate values.
    """
    nq = len(index.questions)
    ones = np.ones((n_boot, nq))
    boot = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot).astype(float)
    has = row_param is not None and (row_param >= 0).any()
    meas, pop = replicate_score_sets(
        index, pv, [ones, boot], row_stratum=row_param if has else None, pi=draws if has else None
    )
    point = point_scores(index, pv)
    rows = []
    for metric in METRICS:
        mlo, mhi = _percentile(meas[metric], level)
        plo, phi = _percentile(pop[metric], level)
        for i, model in enumerate(index.models):
            rows.append(
                {
                    "model": model,
                    "metric": metric,
                    "estimate": point[metric][i],
                    "measurement_lo": mlo[i],
                    "measurement_hi": mhi[i],
                    "population_lo": plo[i],
                    "population_hi": phi[i],
                }
            )
    return pd.DataFrame(rows)


def mean_decisions(decisions: pd.DataFrame, *, iid: str = INSTANCE_KEY, label: str = "h") -> pd.DataFrame:
    """One calibration label per instance: the mean of its decisions' labels (a doubly
    adjudicated instance whose annotators disagree counts ½). Columns ``iid, a, n``."""
    require_columns(decisions, [iid, label], "decisions")
    g = decisions.groupby(iid)[label]
    return pd.DataFrame({iid: g.mean().index.to_numpy(), "a": g.mean().to_numpy(dtype=float), "n": g.size().to_numpy()})


def stratified(
    instances: pd.DataFrame,
    decisions: pd.DataFrame,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    index: UnitIndex | None = None,
    condition: str | None = "main",
    calibrated: pd.DataFrame | None = None,
    rates: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified calibration (docs/metrics.md#stratified-calibration) with measurement and population intervals.

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame with the two label columns (unlabelled instructions excluded).
    decisions : DataFrame
        Human decisions on disagreements: ``iid, h`` (0/1), one row per decision;
        decisions on agreements are ignored (the rule keeps agreed labels).
    calibrated, rates : DataFrame, optional
        The :func:`~reform_core.calibration.calibrate_stratified` output of ``instances`` and
        its :func:`~reform_core.calibration.stratum_rates` from these decisions, when the
        caller already has them (the scoring run): not computed again.

    Returns
    -------
    (scores, calibrated)
        ``scores``: ``model, metric, estimate, measurement_lo/_hi, population_lo/_hi``;
        ``calibrated``: :func:`reform_core.calibration.calibrate_stratified` output.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    if calibrated is None or rates is None:
        adj = mean_decisions(decisions)
        dis = instances[judge_a].to_numpy(dtype=float) != instances[judge_b].to_numpy(dtype=float)
        adj = adj[adj[INSTANCE_KEY].isin(instances.loc[dis, INSTANCE_KEY])]
        rates = stratum_rates(instances, adj[[INSTANCE_KEY, "a"]], judge_a=judge_a, judge_b=judge_b)
        cal = calibrate_stratified(instances, adj[[INSTANCE_KEY, "a"]], judge_a=judge_a, judge_b=judge_b, rates=rates)
    else:
        cal = calibrated
    index = index if index is not None else build_index(cal, condition=condition)
    pv = index.pass_vector(cal, "p")
    reviewed = rates.reset_index(drop=True)
    code = pd.Index(reviewed["stratum"].astype(str))
    scored = cal.iloc[index.row_pos]
    h = np.where(
        np.isin(scored["source"].to_numpy(), ("stratum", "fallback")),
        code.get_indexer(scored["stratum"].astype(str)),
        -1,
    )
    # Jeffreys posterior of each stratum's rate: Beta(s + ½, n − s + ½); a stratum with no review
    # yet (its point is the provisional fallback) draws from the prior Beta(½, ½): its rate is unknown
    n_ = reviewed["n_reviewed"].to_numpy(dtype=float)
    s_ = np.nan_to_num(reviewed["pi_hat"].to_numpy(dtype=float)) * n_
    draws = rng.beta(s_[:, None] + 0.5, (n_ - s_)[:, None] + 0.5, size=(len(reviewed), n_boot))
    return _intervals(index, pv, h, draws, n_boot=n_boot, level=level, rng=rng), cal


def pooled(
    instances: pd.DataFrame,
    decisions: pd.DataFrame,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
    index: UnitIndex | None = None,
    condition: str | None = "main",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """App. A.3.2 pooled calibration with measurement and population intervals.

    ``W_A`` = share of the decisions on *disagreements* that side with judge A (decisions
    on audited agreements say nothing about which judge to trust and are left out).

    Returns
    -------
    (scores, calibrated)
        As :func:`stratified`; ``calibrated.attrs["w_a"]`` holds ``W_A`` and
        ``attrs["n_pool"]`` the decisions it rests on.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    require_columns(decisions, [INSTANCE_KEY, "h"], "decisions")
    g = pd.Series(instances[judge_a].to_numpy(dtype=float), index=instances[INSTANCE_KEY].to_numpy())
    m = pd.Series(instances[judge_b].to_numpy(dtype=float), index=instances[INSTANCE_KEY].to_numpy())
    d = decisions[decisions[INSTANCE_KEY].isin(g.index[(g != m).to_numpy()])]
    if d.empty:
        raise ValueError("pooled calibration needs decisions on disagreements to fix the judge weights")
    with_a = d["h"].to_numpy(dtype=float) == g.reindex(d[INSTANCE_KEY]).to_numpy()
    k, n = float(with_a.sum()), float(len(with_a))
    w_a = k / n
    cal = calibrate_pooled(instances, w_a, judge_a=judge_a, judge_b=judge_b)
    cal.attrs.update(w_a=w_a, n_pool=int(n))
    index = index if index is not None else build_index(cal, condition=condition)
    pv = index.pass_vector(cal, "p")
    scored = cal.iloc[index.row_pos]
    sg, sm = scored[judge_a].to_numpy(dtype=float), scored[judge_b].to_numpy(dtype=float)
    param = np.where(sg != sm, np.where(sg == 1, 0, 1), -1)  # p = W_A on A1B0, 1 − W_A on A0B1
    wd = rng.beta(k + 0.5, n - k + 0.5, size=n_boot)
    draws = np.vstack([wd, 1 - wd])
    return _intervals(index, pv, param, draws, n_boot=n_boot, level=level, rng=rng), cal


class PaperRule:
    """One of the paper's rules behind the estimation seam (:mod:`reform_core.estimators.base`).

    ``hints``: ``calibrated`` and ``rates`` — the stratified rule's calibration of these rows
    when the caller already has it (the scoring run), used instead of calibrating again."""

    needs_plan = False

    def __init__(self, name: str, fn, label: str, interval_method: str):
        self.name, self._fn, self.label, self.interval_method = name, fn, label, interval_method

    def estimate(self, data, options):
        from reform_core.estimators.base import METRICS as SCORES
        from reform_core.estimators.base import Estimate

        rng = np.random.default_rng(int(options.seed))
        extra = {}
        if self.name == "stratified" and data.hints.get("calibrated") is not None:
            extra = {"calibrated": data.hints["calibrated"], "rates": data.hints["rates"], "index": data.index}
        scores, cal = self._fn(
            data.instances,
            data.decisions[[INSTANCE_KEY, "h"]],
            judge_a=data.judge_a,
            judge_b=data.judge_b,
            n_boot=int(options.reps),
            level=options.level,
            rng=rng,
            condition=None,
            **extra,
        )
        table = scores.pivot(index="model", columns="metric", values="estimate").reindex(columns=list(SCORES))
        rows = pd.Series(cal["p"].to_numpy(dtype=float), index=cal[INSTANCE_KEY].to_numpy())
        return Estimate(
            estimator=self.name,
            table=table.reset_index(),
            intervals=scores,
            components=pd.DataFrame(columns=["model", "metric"]),
            rows=rows,
        )


_JEFFREYS = (
    "the calibration's rates drawn from their Jeffreys posteriors (a stratum reviewed at 0 % or 100 % "
    "still varies); population: plus a cluster bootstrap over questions."
)
STRATIFIED = PaperRule(
    "stratified", stratified, "the paper's stratified calibration (its main-results rule)", "Measurement: " + _JEFFREYS
)
POOLED = PaperRule(
    "pooled",
    pooled,
    "the paper's pooled calibration (its auxiliary rule; W from decisions on disagreements)",
    "Measurement: the pooled weight W_A drawn from its Jeffreys posterior; population: " + _JEFFREYS.split("; ")[-1],
)

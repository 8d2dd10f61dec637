"""Validation of the estimators on the simulator, under conditions that break their
assumptions (docs/metrics.md#default-estimator).

The simulator (:mod:`reform_core.simulate`) knows every instance's true label, so a
whole adjudication can be replayed against it:

1. ``simulate(seed, scale, human_error=e, both_wrong=b, correlated=c)``: a project whose
   judges are wrong together on a share ``b`` of instances and whose truths are
   correlated across a question's variants (or not); only the ``main`` condition is scored;
2. the **default plan** (:func:`reform_core.estimators.draws.default_design` and
   :func:`~reform_core.estimators.draws.draw`: question clusters, audit, double
   adjudication) is drawn with the replicate's seed;
3. every task gets its ``required`` decisions from distinct simulated annotators (a pool
   of :data:`ANNOTATORS`), each the true label flipped with probability ``e``;
4. each registered estimator scores the project from those same decisions: the default
   (``cluster``), the paper's ``stratified`` and ``pooled`` rules, and each judge's raw
   labels (``judge_a``, ``judge_b``); an optional ``extra`` callable adds comparators
   (the benchmark adds PPI++ on a uniform random sample of the same size);
5. **truth** is the finite-population score of the same instances from the hidden true
   labels (same eligible units: the baseline is known).

Error = estimate − truth in percentage points; **coverage** = share of (replicate, model)
pairs whose *measurement* interval holds the truth, with an exact Clopper–Pearson
interval (``scipy.stats.binomtest``); width = mean interval width.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from reform_core.estimators import base, draws
from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY
from reform_core.metrics import reform
from reform_core.simulate import SimProject, simulate
from reform_core.unit_index import build_index

ANNOTATORS = 8
METRICS = ("tcpr", "emcr", "r1", "r2", "r3")
ESTIMATORS = ("cluster", "stratified", "pooled", "judge_a", "judge_b")
REPLICATE_COLUMNS = [
    "seed",
    "model",
    "metric",
    "truth",
    "estimator",
    "estimate",
    "lo",
    "hi",
    "pop_lo",
    "pop_hi",
    "decisions",
]


def _check_level(level: float) -> None:
    if not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")


def simulated_decisions(
    truth: pd.Series,
    tasks: pd.DataFrame,
    human_error: float,
    rng: np.random.Generator,
    *,
    annotators: int = ANNOTATORS,
    reference: Optional[pd.Series] = None,
    depth: Optional[pd.Series] = None,
) -> pd.DataFrame:
    """Decisions of simulated annotators on a plan's tasks.

    Each task gets ``required`` decisions from distinct annotators (drawn uniformly from a
    pool of ``annotators``); each decision reports the true label, flipped with
    probability ``human_error``. ``reference``: the plan's second-opinion rule
    (:meth:`reform_core.estimators.design.Design.second_opinion_reference`, per iid; NaN = none): a
    task with a reference gets another decision from another annotator while every decision
    so far differs from it, up to ``depth`` decisions (per iid,
    :meth:`reform_core.estimators.design.Design.opinion_depth`; 2 where absent), as the work queue
    asks for them. Decisions come in the order they were made (a task's first decision first).

    Returns
    -------
    DataFrame
        ``iid, annotator, h``.
    """
    if not 0 <= human_error < 0.5:
        raise ValueError(f"human_error must lie in [0, 0.5), got {human_error!r}")
    req = tasks["required"].to_numpy(dtype=np.int64)
    ref = (
        np.full(len(tasks), np.nan)
        if reference is None
        else reference.reindex(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64)).to_numpy(dtype=float)
    )
    seq = np.isfinite(ref) & (req == 1)
    dep = (
        np.full(len(tasks), 2)
        if depth is None
        else depth.reindex(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64)).fillna(2).to_numpy(dtype=np.int64)
    )
    req = np.where(seq, dep, req)  # drawn in full; a decision is dropped once an earlier one matched the reference
    if (req > annotators).any():
        raise ValueError(f"a task needs more annotators than the pool of {annotators}")
    iids = np.repeat(tasks[INSTANCE_KEY].to_numpy(dtype=np.int64), req)
    start = np.repeat(np.cumsum(req) - req, req)
    slot = np.arange(len(iids)) - start
    # distinct annotators per task: the first ``required`` of a random order of the pool
    order = np.argsort(rng.random((len(tasks), annotators)), axis=1)
    ann = order[np.repeat(np.arange(len(tasks)), req), slot]
    y = truth.reindex(iids).to_numpy(dtype=float)
    if np.isnan(y).any():
        raise ValueError("a task's iid has no true label")
    h = np.where(rng.random(len(iids)) < human_error, 1 - y, y)
    if seq.any():
        seq_d = np.repeat(seq, req)
        matched = (h == np.repeat(ref, req)).astype(np.int64)
        # matches among the task's earlier decisions (cumulative within each task, exclusive)
        before = np.cumsum(matched) - matched
        before = before - before[start]
        keep = ~(seq_d & (before > 0))
        iids, ann, h = iids[keep], ann[keep], h[keep]
    return pd.DataFrame(
        {
            INSTANCE_KEY: iids,
            "annotator": np.array([f"annotator-{i + 1}" for i in range(annotators)], dtype=object)[ann],
            "h": h,
        }
    )


@dataclass
class Replicate:
    """One simulated, planned and adjudicated replicate (:func:`adjudicated_replicate`):
    the ``main`` instances, the judges' label columns, the default plan's parameters and
    tasks, the simulated decisions, the unit index, the true scores per model (``truth``,
    indexed by model) and the replicate's random stream after the decisions (what the
    estimators draw from next)."""

    instances: pd.DataFrame
    judge_a: str
    judge_b: str
    params: dict
    tasks: pd.DataFrame
    decisions: pd.DataFrame
    index: object
    truth: pd.DataFrame
    rng: np.random.Generator


def planned_decisions(
    inst: pd.DataFrame,
    judge_a: str,
    judge_b: str,
    plan_seed: int,
    human_error: float,
    rng: np.random.Generator,
    plan_options: Optional[dict] = None,
):
    """Step 2–3 of the module docstring on a simulated project: the default plan drawn with
    ``plan_seed`` and simulated decisions on its tasks (the plan's second-opinion rule
    followed). Returns ``(params, tasks, decisions)``."""
    params = draws.default_design(inst, seed=int(plan_seed), judge_a=judge_a, judge_b=judge_b, **(plan_options or {}))
    tasks = draws.draw(inst, params, judge_a=judge_a, judge_b=judge_b)
    by_iid = inst.set_index(INSTANCE_KEY)
    at = tasks[INSTANCE_KEY].to_numpy()
    agreed = by_iid[judge_a].reindex(at).to_numpy(dtype=float)
    reference = pd.Series(params.second_opinion_reference(tasks[INSTANCE_KEY], tasks["kind"], agreed), index=at)
    depth = pd.Series(params.opinion_depth(tasks["kind"]), index=at)
    decisions = simulated_decisions(
        by_iid["truth"].astype(float), tasks, human_error, rng, reference=reference, depth=depth
    )
    return params, tasks, decisions


def adjudicated_replicate(
    seed: int,
    *,
    scale: str = "paper",
    human_error: float = 0.0,
    both_wrong: float = 0.0,
    correlated: bool = True,
    plan_options: Optional[dict] = None,
    project: Optional[SimProject] = None,
    **sim_options,
) -> Replicate:
    """Steps 1–3 of the module docstring for one replicate (parameters: :func:`run_replicate`)."""
    if project is None:
        sim = simulate(seed, scale, both_wrong=both_wrong, correlated=correlated, **sim_options)
    else:
        sim = project
        if sim.seed != seed or sim.config.both_wrong != both_wrong or sim.config.correlated != correlated:
            raise ValueError("project was simulated for another seed or scenario")
    ja, jb = (f"label_{j}" for j in sim.judges)
    inst = sim.instances()
    inst = inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)
    rng = np.random.default_rng([int(seed), 1, int(round(1000 * human_error))])
    params, tasks, decisions = planned_decisions(inst, ja, jb, seed, human_error, rng, plan_options)
    index = build_index(inst)
    truth = reform.table2(inst, p="truth", index=index).set_index("model")
    return Replicate(inst, ja, jb, params, tasks, decisions, index, truth, rng)


def run_replicate(
    seed: int,
    *,
    scale: str = "paper",
    human_error: float = 0.0,
    both_wrong: float = 0.0,
    correlated: bool = True,
    n_boot: int = 1000,
    level: float = 0.95,
    error_boot: int = 50,
    estimators=ESTIMATORS,
    extra: Optional[Callable] = None,
    plan_options: Optional[dict] = None,
    project: Optional[SimProject] = None,
    **sim_options,
) -> pd.DataFrame:
    """One validation replicate (module docstring).

    Parameters
    ----------
    seed : int
        Seed of the simulated project, of the plan and of the decisions (stream
        ``default_rng([seed, 1, round(1000 · human_error)])`` for decisions and intervals).
    scale : {"paper", "small"}
        Simulator scale; ``sim_options`` override its fields (``n_questions`` …).
    human_error, both_wrong, correlated
        The scenario (see :class:`reform_core.simulate.SimConfig`).
    n_boot : int
        Bootstrap replicates of the paper rules' intervals and of the population intervals.
    error_boot : int
        Refits of the adjudicator-error model (default estimator).
    extra : callable, optional
        ``extra(instances, index, judge_a, judge_b, decisions, rng) -> DataFrame`` with
        columns ``model, metric, estimator, estimate, lo, hi`` (more comparators).
    plan_options : dict, optional
        Keyword arguments of :func:`reform_core.estimators.draws.default_design`.
    project : SimProject, optional
        An already simulated project to reuse (it must have been made by
        ``simulate(seed, scale, both_wrong=both_wrong, correlated=correlated, **sim_options)``;
        the adjudicator error does not enter the simulation, so scenarios that differ only
        in ``human_error`` can share one project).

    Returns
    -------
    DataFrame
        :data:`REPLICATE_COLUMNS`, one row per (model, metric, estimator).
    """
    _check_level(level)
    r = adjudicated_replicate(
        seed,
        scale=scale,
        human_error=human_error,
        both_wrong=both_wrong,
        correlated=correlated,
        plan_options=plan_options,
        project=project,
        **sim_options,
    )
    inst, ja, jb, params, tasks, decisions, index, truth, rng = (
        r.instances,
        r.judge_a,
        r.judge_b,
        r.params,
        r.tasks,
        r.decisions,
        r.index,
        r.truth,
        r.rng,
    )
    n_dec = decisions.merge(inst[[INSTANCE_KEY, "model"]], on=INSTANCE_KEY).groupby("model").size()
    parts = []

    def add(frame: pd.DataFrame, name: str) -> None:
        f = frame.copy()
        f["estimator"] = name
        parts.append(f)

    for name in ("cluster", "stratified", "pooled"):  # through the estimation seam, by name
        if name in estimators:
            data = base.EstimationData(
                instances=inst, decisions=decisions, judge_a=ja, judge_b=jb, design=params, tasks=tasks, index=index
            )
            options = base.Options(
                intervals=True, reps=n_boot, level=level, refits=error_boot, seed=int(rng.integers(2**31))
            )
            add(base.get(name).estimate(data, options).intervals, name)
    for name, col in (("judge_a", ja), ("judge_b", jb)):
        if name in estimators:
            t2 = reform.table2(inst, p=col, index=index)
            add(t2.melt(id_vars="model", value_vars=list(METRICS), var_name="metric", value_name="estimate"), name)
    if extra is not None:
        parts.append(extra(inst, index, ja, jb, decisions, rng))
    out = pd.concat(parts, ignore_index=True)
    out = out[out["metric"].isin(METRICS)]
    out = out.rename(
        columns={"measurement_lo": "lo", "measurement_hi": "hi", "population_lo": "pop_lo", "population_hi": "pop_hi"}
    )
    for col in ("lo", "hi", "pop_lo", "pop_hi"):
        if col not in out:
            out[col] = np.nan
    out["seed"] = int(seed)
    out["truth"] = [truth.loc[mm, mt] for mm, mt in zip(out["model"], out["metric"])]
    out["decisions"] = out["model"].map(n_dec).fillna(0).astype(int).to_numpy()
    return out[REPLICATE_COLUMNS].reset_index(drop=True)


def _coverage(hit: np.ndarray, level: float) -> tuple[float, float, float]:
    n = len(hit)
    if n == 0:
        return np.nan, np.nan, np.nan
    k = int(hit.sum())
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return k / n, ci.low, ci.high


def summarize(replicates: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Bias, MAE, coverage and width per (estimator, metric).

    ``bias`` = mean of estimate − truth over (replicate, model) pairs (pp), ``mae`` its
    mean absolute value, ``coverage`` = share of pairs whose measurement interval holds
    the truth (with an exact Clopper–Pearson interval; pairs treated as independent,
    models of one replicate share its questions, so it is if anything too narrow),
    ``width`` = mean measurement-interval width, ``pop_coverage`` / ``pop_width`` the
    same for the population interval. Pairs whose truth is undefined are left out and
    counted in ``n_undefined``.
    """
    _check_level(level)
    missing = [c for c in REPLICATE_COLUMNS if c not in replicates.columns]
    if missing:
        raise ValueError(f"replicates lack column(s) {missing}; pass run_replicate(...) output")
    if replicates.empty:
        raise ValueError("replicates is empty")
    rows = []
    for (estimator, metric), df in replicates.groupby(["estimator", "metric"], sort=False):
        d = df[df["truth"].notna() & df["estimate"].notna()]
        err = d["estimate"] - d["truth"]
        row = {
            "estimator": estimator,
            "metric": metric,
            "n_pairs": len(d),
            "n_undefined": len(df) - len(d),
            "bias": err.mean(),
            "bias_se": err.std(ddof=1) / np.sqrt(max(len(d), 1)),
            "mae": err.abs().mean(),
        }
        for prefix, lo, hi in (("", "lo", "hi"), ("pop_", "pop_lo", "pop_hi")):
            ok = d[lo].notna() & d[hi].notna()
            hit = ((d.loc[ok, lo] <= d.loc[ok, "truth"]) & (d.loc[ok, "truth"] <= d.loc[ok, hi])).to_numpy()
            cov, cov_lo, cov_hi = _coverage(hit, level)
            row.update(
                {
                    f"{prefix}coverage": cov,
                    f"{prefix}coverage_low": cov_lo,
                    f"{prefix}coverage_high": cov_hi,
                    f"{prefix}width": (d.loc[ok, hi] - d.loc[ok, lo]).mean() if ok.any() else np.nan,
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)

"""The default estimator: a question-cluster difference estimator with cross-fitted predictions.

Target: the scores of *this fixed benchmark* computed from the unknown true labels (TCPR,
R^(1..3), EMCR, the constraint-level rate; ``docs/metrics.md``). The derivation, the notation
(whose symbols these modules' names follow) and the measured reasons for each design choice are
in ``docs/estimator.md``. :func:`estimate` runs the steps in order, each a module of its own:

1. :mod:`.layout` — the design laid over the rows (clusters, audits, strata, folds);
2. :mod:`.progress` — the design as realised by the decisions so far (observed clusters);
3. :mod:`.items` — the adjudicator-error model and each decided item's estimate;
4. :mod:`.predictions` — cross-fitted predictions ``p̂`` and ``q̂``;
5. :mod:`.totals` — the cluster totals ``T_c`` and the point estimates;
6. :mod:`.variance` — the measurement variance by source (with :mod:`.audit_variance`);

then :mod:`.both_wrong` reports the audit's both-wrong rates and :mod:`.population` the
population intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.cluster.both_wrong import both_wrong, wrong_rates
from reform_core.estimators.cluster.items import classical, decisions_used, item_values
from reform_core.estimators.cluster.layout import DENOMINATORS, METRICS, NUMERATORS, Layout, design_layout
from reform_core.estimators.cluster.population import population_intervals, scores_frame
from reform_core.estimators.cluster.predictions import predict
from reform_core.estimators.cluster.progress import Progress, progress_of
from reform_core.estimators.cluster.result import ClusterEstimate
from reform_core.estimators.cluster.totals import cluster_totals
from reform_core.estimators.cluster.variance import error_bootstrap, gradients, metric_variance
from reform_core.estimators.design import Design
from reform_core.frames import INSTANCE_KEY, require_columns
from reform_core.unit_index import UnitIndex, build_index

__all__ = ["ClusterEstimate", "ERROR_BOOT", "estimate", "population_intervals", "scores_frame"]

ERROR_BOOT = 100  # bootstrap refits of the adjudicator-error model


def _labels(instances: pd.DataFrame, index: UnitIndex, judge_a: str, judge_b: str):
    require_columns(instances, [judge_a, judge_b, INSTANCE_KEY], "instances")
    g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(dtype=float)[index.row_pos]
    m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(dtype=float)[index.row_pos]
    if np.isnan(g).any() or np.isnan(m).any():
        raise ValueError("every scored row needs both judges' labels (exclude unlabelled instructions first)")
    return g, m, instances[INSTANCE_KEY].to_numpy(dtype=np.int64)[index.row_pos]


def _progress_frame(index: UnitIndex, lay: Layout, prog: Progress) -> pd.DataFrame:
    cl, nm = lay.clusters, lay.clusters.nm
    return pd.DataFrame(
        {
            "model": index.models,
            "clusters": np.bincount(cl.c_model, cl.c_exists, minlength=nm).astype(int),
            "clusters_sampled": prog.n_sampled,
            "clusters_observed": prog.n_observed,
            "disagreements": lay.dis_per_model.astype(int),
            "disagreements_decided": np.bincount(cl.row_model[prog.obs_dis], minlength=nm).astype(int),
            "audits_planned": lay.audits_per_model.astype(int),
            "audits_decided": prog.audited_m.astype(int),
            "tasks_planned": prog.tasks_planned.astype(int),
            "tasks_decided": prog.tasks_decided.astype(int),
            "awaiting_opinion": prog.awaiting_opinion.astype(int),
        }
    )


def _tables(index: UnitIndex, variances: dict, df_m: np.ndarray, level: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-model table (point, se, interval per metric) and the variance components."""
    tq = stats.t.ppf(0.5 + level / 2, df_m)
    table, comp_rows = {"model": index.models}, []
    for metric, mv in variances.items():
        se = mv.se
        table[metric] = mv.point
        table[f"se_{metric}"] = np.where(mv.undefined, np.nan, se)
        table[f"{metric}_lo"] = mv.point - tq * se
        table[f"{metric}_hi"] = mv.point + tq * se
        for mi, mm in enumerate(index.models):
            comp_rows.append(
                {
                    "model": mm,
                    "metric": metric,
                    "sampling": mv.sampling[mi],
                    "audit": mv.audit[mi],
                    "adjudicator_error": mv.adjudicator_error[mi],
                    "audit_direct": mv.audit_direct[mi],
                }
            )
    return pd.DataFrame(table), pd.DataFrame(comp_rows)


def estimate(
    instances: pd.DataFrame,
    tasks: pd.DataFrame,
    decisions: pd.DataFrame,
    design: Design,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    condition: str | None = "main",
    error_model: ae.ErrorModel | None = None,
    error_boot: int = ERROR_BOOT,
    rng: np.random.Generator | None = None,
    index: UnitIndex | None = None,
    level: float = 0.95,
    realised: dict | None = None,
    memo: dict | None = None,
) -> ClusterEstimate:
    """Estimate the fixed benchmark's scores and their measurement variance (module docstring).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame (frames.py) with the two judges' label columns; instructions with a
        missing label must already be excluded (the caller's missing-data rule).
    tasks : DataFrame
        The plan's tasks (``iid`` at least; :func:`reform_core.estimators.draws.draw`).
    decisions : DataFrame
        Every human decision on those tasks, in the order they were made: ``iid, annotator, h``
        (h = the truth the annotator reported, 0/1).
    design : Design
        The plan's design (:class:`reform_core.estimators.design.Design`).
    error_model : ErrorModel, optional
        Adjudicator error rates; default: fitted on ``decisions`` when some item was decided
        twice, else infallible adjudicators (with a note).
    error_boot : int
        Bootstrap refits of the error model for its variance term (0: none).
    rng : numpy.random.Generator, optional
        For the error-model bootstrap.
    level : float
        Level of the measurement intervals.
    realised : dict, optional
        The realised draws instead of the plan's hashed ones: ``clusters`` — (model, question)
        pairs in the first-stage sample — and ``audits`` — audited iids (to check the estimator
        against an exact enumeration of the design).
    memo : dict, optional
        A dict the caller keeps between calls on the same rows: the decision-independent arrays
        are kept there and reused.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    require_columns(tasks, [INSTANCE_KEY], "tasks")
    require_columns(decisions, [INSTANCE_KEY, "annotator", "h"], "decisions")
    index = index if index is not None else build_index(instances, condition=condition)
    g, m, iid = _labels(instances, index, judge_a, judge_b)
    lay = design_layout(
        instances, tasks, design, index, g, m, iid, realised=realised, memo=memo, memo_key=(judge_a, judge_b)
    )
    prog = progress_of(lay, decisions, g, m, index.models, closed=design.extra.get("closed"))
    dec = decisions_used(lay, prog, decisions, g, m, error_model)
    pred = predict(lay, prog, classical(lay, dec), g, m)
    it = item_values(lay, dec, pred.x, iid)
    tot = cluster_totals(index, lay, prog, pred, it, g, m, memo)
    model = dec.error_model
    err_draws = (
        error_bootstrap(dec.dec, model, it.layout, error_boot, rng)
        if model.identified and error_boot and len(dec.dec)
        else None
    )
    gz = gradients(tot)
    variances = {metric: metric_variance(metric, lay, prog, tot, gz, err_draws, iid) for metric in METRICS}
    df_m = np.maximum(prog.n_observed - 1, 1)
    return _result(index, lay, prog, dec, pred, it, tot, variances, g, df_m, level)


def _result(
    index: UnitIndex,
    lay: Layout,
    prog: Progress,
    dec,
    pred,
    it,
    tot,
    variances: dict,
    g: np.ndarray,
    df_m: np.ndarray,
    level: float,
) -> ClusterEstimate:
    """The steps' results gathered into a :class:`ClusterEstimate` (tables, reports, notes)."""
    table, comps = _tables(index, variances, df_m, level)
    ad = pred.audited_rows
    rates = wrong_rates(
        lay.strata.a_names[lay.strata.a_stratum[ad]], np.where(g[ad] == 1, 1 - it.y[ad], it.y[ad]), pred.w_ad, it.v[ad]
    )
    cl = lay.clusters
    task_of_q = np.zeros(len(index.questions), dtype=np.int64)
    task_of_q[index.inst_question] = index.inst_task
    return ClusterEstimate(
        models=index.models,
        questions=index.questions,
        tasks_of_question=np.asarray(index.tasks)[task_of_q],
        table=table,
        components=comps,
        totals={num: tot.totals[num].reshape(cl.nm, cl.nq) for num in NUMERATORS},
        denominators={num: lay.counts[DENOMINATORS[num]].reshape(cl.nm, cl.nq) for num in NUMERATORS},
        error_variance={k: v.adjudicator_error for k, v in variances.items()},
        both_wrong=both_wrong(index.models, lay.strata.agreement_sizes, rates, level),
        error_model=dec.error_model,
        progress=_progress_frame(index, lay, prog),
        df=df_m,
        notes=[*lay.notes, *prog.notes, *dec.notes],
        smooth=tot.smooth,
        index=index,
        floor_variance={k: v.floor for k, v in variances.items()},
        smooth_evaluation=tot.smooth_evaluation,
    )

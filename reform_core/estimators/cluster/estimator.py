"""The default estimator behind the estimation seam (:mod:`reform_core.estimators.base`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.estimators.base import METRICS, Estimate, EstimationData, Options
from reform_core.estimators.cluster import ERROR_BOOT, ClusterEstimate, estimate, population_intervals, scores_frame
from reform_core.unit_index import build_index

ANNOTATOR_COLUMNS = ["annotator", "sensitivity", "specificity", "accuracy", "decisions", "double_items"]


def unmeasured(progress: pd.DataFrame) -> list[str]:
    """Models whose disagreements have no fully adjudicated question yet: their estimate is
    the predictions alone and the variance formula has nothing to measure, so they get no
    measurement interval (never a zero-width one)."""
    p = progress
    return p.loc[(p["disagreements"] > 0) & (p["clusters_observed"] == 0), "model"].astype(str).tolist()


def too_few(est: ClusterEstimate) -> dict[str, str]:
    """Models whose data cannot support a measurement interval, with the reason: fewer than two
    questions fully decided (the variance formula has nothing to measure a spread with), or a
    zero variance while part of the model's rows are predicted, not decided (never a zero-width
    interval unless the score is known exactly)."""
    p = est.progress.set_index("model")
    bw = est.both_wrong.set_index("model")
    out = {}
    for m in p.index:
        n = int(p.loc[m, "clusters_observed"])
        exact = n == int(p.loc[m, "clusters"]) and int(bw.loc[m, "audited"]) >= int(bw.loc[m, "agreements"])
        se = est.table.set_index("model").loc[m, "se_tcpr"]
        if n < 2 and not exact:
            out[str(m)] = f"too few questions fully decided for a measurement interval (n = {n})"
        elif not exact and np.isfinite(se) and se == 0:
            out[str(m)] = "no measurable spread yet while part of its rows are predicted: no measurement interval"
    return out


def cluster_totals_frame(est: ClusterEstimate) -> pd.DataFrame:
    """Per (model, question) cluster with rows, question-major: ``T_c`` and ``D_c`` of each
    numerator (lets an export recompute the scores)."""
    nq, nm = len(est.questions), len(est.models)
    cols = {
        "model": np.tile(np.asarray(est.models, dtype=object), nq),
        "question": np.repeat(np.asarray(est.questions, dtype=object), nm),
    }
    for num in est.totals:
        cols[f"t_{num}"] = est.totals[num].T.reshape(-1).astype(float)
        cols[f"d_{num}"] = est.denominators[num].T.reshape(-1).astype(float)
    tot = pd.DataFrame(cols)
    return tot[tot["d_rows"].to_numpy() > 0].reset_index(drop=True)


class ClusterEstimator:
    """The question-cluster difference estimator (:mod:`reform_core.estimators.cluster`)."""

    name = "cluster"
    needs_plan = True
    label = (
        "question-cluster difference estimator (default) — unbiased for TCPR, EMCR and R¹–R³ under "
        "correlated variants, with audited agreements and adjudicator error corrected"
    )
    interval_method = (
        "Measurement: linearised two-stage variance of the estimator (question sample, agreement "
        "audit, adjudicator-error refits), t quantile; population: cluster bootstrap over questions. "
        "Bounds clipped to [0, 100]."
    )

    def estimate(self, data: EstimationData, options: Options) -> Estimate:
        if data.design is None or data.tasks is None:
            raise ValueError("the default estimator needs a question-cluster plan (its design and tasks)")
        rng = np.random.default_rng(int(options.seed))
        index = data.index if data.index is not None else build_index(data.instances, condition=None)
        est = estimate(
            data.instances,
            data.tasks[["iid"]],
            data.decisions[["iid", "annotator", "h"]],
            data.design,
            judge_a=data.judge_a,
            judge_b=data.judge_b,
            condition=None,
            index=index,
            rng=rng,
            error_boot=(ERROR_BOOT if options.refits is None else int(options.refits)) if options.intervals else 0,
            level=options.level,
            memo=data.memo,
        )
        pop = (
            population_intervals(est, n_boot=int(options.reps), level=options.level, rng=rng)
            if options.intervals
            else None
        )
        scores = scores_frame(est, pop)
        scores.loc[scores["model"].isin(unmeasured(est.progress)), ["measurement_lo", "measurement_hi"]] = np.nan
        thin = too_few(est)
        scores.loc[
            scores["model"].isin(list(thin)), ["measurement_lo", "measurement_hi", "population_lo", "population_hi"]
        ] = np.nan
        notes = list(est.notes) + [f"{m}: {why}" for m, why in thin.items()]
        # debiased decisions may leave [0, 1]; the plug-in breakdown tables need probabilities
        rows = pd.Series(np.clip(est.smooth, 0.0, 1.0), index=data.instances["iid"].to_numpy()[index.row_pos])
        acc = est.error_model.accuracy() if est.error_model.identified else pd.DataFrame(columns=ANNOTATOR_COLUMNS)
        reports = {
            "both_wrong": est.both_wrong.copy(),
            "annotators": acc.reset_index(drop=True),
            "progress": est.progress.copy(),
            "totals": cluster_totals_frame(est),
            "error_identified": bool(est.error_model.identified),
        }
        p = est.progress
        provisional = bool((p["tasks_decided"] < p["tasks_planned"]).any() or (p["awaiting_opinion"] > 0).any())
        return Estimate(
            estimator=self.name,
            table=est.table[["model", *METRICS]].copy(),
            intervals=scores,
            components=est.components,
            notes=notes,
            rows=rows,
            reports=reports,
            evaluation=est.smooth_evaluation,
            provisional=provisional,
        )


ESTIMATOR = ClusterEstimator()

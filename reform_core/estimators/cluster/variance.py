"""Step 6 of the default estimator: the measurement variance of each metric, by source.

Linearised, one term per source (``docs/estimator.md``): the cluster sample
``Σ_{c observed} [(1 − π_c)/π_c² C_c² + N_c/π_c]`` (``C_c`` the cluster's rectifier in metric
units, ``N_c`` its second-stage variance: audit draws and decision noise), the agreement audit
(its direct estimate stabilised by :func:`~.audit_variance.audit_composite`, never below
:func:`~.audit_variance.audit_floor`), and the adjudicator-error rates (the spread of the
estimate over bootstrap refits of the error model). The interval is ``θ̂ ± t_{df} √V`` with
``df`` the observed clusters − 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.cluster.audit_variance import audit_composite, audit_floor
from reform_core.estimators.cluster.layout import JOINT, LINEAR, LINEAR_METRICS, METRICS, NUMERATORS, Layout
from reform_core.estimators.cluster.progress import Progress
from reform_core.estimators.cluster.totals import Totals
from reform_core.frames import INSTANCE_KEY

BOOT_TOL = 1e-6  # EM stopping rule of a refit (it starts at the full-data fit; 1e-6 of a rate is far below its se)

FLOORED_METRICS = METRICS  # the metrics whose audit variance never falls below the floor
# the metrics whose floor rate counts the errors the audit found (the joint products, where one rare
# error moves every unit holding its target); the others' floor is the prior's half event alone
FOUND_FLOOR_METRICS = ("emcr", "r1", "r2", "r3")


def metric_gradient(grads: dict[str, np.ndarray], coef: dict[str, np.ndarray], row_model: np.ndarray) -> np.ndarray:
    g = np.zeros(len(row_model))
    for num in NUMERATORS:
        w = coef[num][row_model]
        g += np.nan_to_num(w) * grads[num]
    return g


def error_bootstrap(
    dec: pd.DataFrame, model: ae.ErrorModel, layout: ae.ItemLayout, reps: int, rng: np.random.Generator
) -> pd.DataFrame:
    """Item estimates of every decided item under error models refitted on items
    resampled with replacement (with all their decisions); (n_items, reps)."""
    item_code, items = pd.factorize(dec[INSTANCE_KEY])
    ann_code, anns = pd.factorize(dec["annotator"].astype(str))
    g_item = pd.Series(dec["group"].astype(str).to_numpy()).groupby(item_code).first()
    g_code, groups = pd.factorize(g_item.to_numpy())
    h = dec["h"].to_numpy(dtype=float)
    order = np.argsort(item_code, kind="stable")
    starts = np.searchsorted(item_code[order], np.arange(len(items)))
    sizes = np.bincount(item_code, minlength=len(items))
    base_a, base_b = model.rates(anns)
    out = np.empty((len(items), reps))
    for b in range(reps):
        pick = rng.integers(0, len(items), len(items))
        n_rows = sizes[pick]
        within = np.arange(n_rows.sum()) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
        rows = order[np.repeat(starts[pick], n_rows) + within]
        new_item = np.repeat(np.arange(len(pick)), n_rows)
        a, bb, pooled, _ = ae.fit_arrays(
            h[rows],
            new_item,
            ann_code[rows],
            g_code[pick],
            len(anns),
            len(groups),
            start=(base_a, base_b, model.pooled),
            tol=BOOT_TOL,
        )
        seen = np.bincount(ann_code[rows], minlength=len(anns)) > 0  # absent annotators keep the full-data rates
        refit = ae.ErrorModel(
            pd.Series(np.where(seen, a, base_a), index=anns),
            pd.Series(np.where(seen, bb, base_b), index=anns),
            pooled,
            model.prevalence,
            True,
            model.n_decisions,
            model.n_double,
        )
        try:
            out[:, b] = layout.estimate(refit)["y_tilde"].reindex(items).to_numpy()
        except (ValueError, FloatingPointError):
            out[:, b] = np.nan
    return pd.DataFrame(out, index=pd.Index(items, name=INSTANCE_KEY))


@dataclass
class MetricVariance:
    """One metric's point estimate per model and its variance by source (%²): ``sampling`` (the
    cluster sample and decision noise), ``audit`` (as reported: composite and floor),
    ``adjudicator_error``; ``audit_direct`` (the audit's design-based estimate, for diagnostics)
    and ``floor`` (what the composite and floor add beyond it)."""

    point: np.ndarray
    undefined: np.ndarray
    sampling: np.ndarray
    audit: np.ndarray
    adjudicator_error: np.ndarray
    audit_direct: np.ndarray
    floor: np.ndarray

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(self.sampling + self.audit + self.adjudicator_error)


def gradients(tot: Totals) -> dict[str, np.ndarray]:
    """Each observed row's derivative of every numerator at ``z`` (joint numerators: with the
    audit groups, :class:`~.totals.Totals`)."""
    gz = tot.obs.sub.gradients(tot.z)
    gz["rows"] = np.ones(len(tot.obs.rs))
    for num in LINEAR:
        gz[num] = tot.g_j[num]
    return gz


def _second_stage(metric: str, w: dict, gm: np.ndarray, tot: Totals, model_s: np.ndarray, n_clusters: int):
    """Per cluster, the second stage inside it (audit draws, one per group, and decision noise),
    and each row's decision-noise term."""
    o, grp = tot.obs, tot.groups
    if metric == "tcpr":  # each row's change of its instruction's product, summed over its audit group
        per_row = np.zeros(len(o.rs))
        r = tot.rows.rep
        per_row[r] = np.nan_to_num(w["allpass"])[model_s[r]] * tot.g_group["allpass"] * tot.a_row * o.pa[r]
        c_aud = grp.total(per_row)
    elif metric in LINEAR_METRICS:  # the group's change of the joint products, at its first row
        gw = sum(np.nan_to_num(w[num])[model_s[grp.rep]] * tot.g_group[num] for num in JOINT)
        c_aud = gw * tot.a_dev * o.pa[grp.rep]
    else:
        c_aud = grp.total(np.where(o.decided, gm * (o.y - o.lin), 0.0))
    v_aud = np.zeros(len(o.rs))
    v_aud[grp.rep] = np.where(o.decided[grp.rep], (1 - o.pa[grp.rep]) * (c_aud / o.pa[grp.rep]) ** 2, 0.0)
    v_dec = np.where(o.dis | o.decided, gm**2 * o.v / o.pa, 0.0)  # G² v, over π for a decided member
    return np.bincount(o.rc, v_aud + v_dec, minlength=n_clusters), v_dec


def _error_variance(gm: np.ndarray, tot: Totals, prog: Progress, err_draws, model_s, iid, nm: int) -> np.ndarray:
    """The variance of the estimate over the error model's bootstrap refits (only decided rows
    move with it: their draws alone)."""
    if err_draws is None:
        return np.zeros(nm)
    o = tot.obs
    dec_rows = np.flatnonzero(o.dis | o.decided)
    eff = (gm / o.pa * prog.inv_pi[o.rc])[dec_rows]
    delta = np.nan_to_num(err_draws.reindex(iid[o.rs][dec_rows]).to_numpy() - o.y[dec_rows, None])
    per_model = np.stack(
        [np.bincount(model_s[dec_rows], eff * delta[:, b], minlength=nm) for b in range(delta.shape[1])]
    )
    return per_model.var(axis=0, ddof=1)


def metric_variance(metric: str, lay: Layout, prog: Progress, tot: Totals, gz: dict, err_draws, iid) -> MetricVariance:
    """:class:`MetricVariance` of one metric (module docstring)."""
    cl, o = lay.clusters, tot.obs
    nm, nq = cl.nm, cl.nq
    w = lay.coef[metric]
    model_s = cl.row_model[o.rs]
    undefined = np.logical_or.reduce([np.isnan(w[num]) for num in NUMERATORS])
    point = sum(np.nan_to_num(w[num]) * tot.totals[num].reshape(nm, nq).sum(axis=1) for num in NUMERATORS)
    gm = metric_gradient(gz, w, model_s)
    v2_c, v_dec = _second_stage(metric, w, gm, tot, model_s, cl.n_clusters)
    obs, inv_pi, pi_eff = prog.observed_c, prog.inv_pi, prog.pi_eff

    def first_stage(s_z: dict) -> np.ndarray:
        contrib = sum(np.nan_to_num(w[num])[cl.c_model] * (s_z[num] - tot.s_x[num]) for num in NUMERATORS)
        return np.where(obs, (1 - pi_eff) * inv_pi**2 * contrib**2, 0.0)

    v_cluster = np.bincount(cl.c_model, first_stage(tot.s_z) + np.where(obs, v2_c * inv_pi, 0.0), minlength=nm)
    # the same without the audit's residuals, plus a rate-based floor for them
    v_dec_d = np.bincount(o.rc, np.where(o.dis, v_dec, 0.0), minlength=cl.n_clusters)
    v_d = np.bincount(cl.c_model, first_stage(tot.s_zd) + np.where(obs, v_dec_d * inv_pi, 0.0), minlength=nm)
    wrong_u = np.where(o.audited, np.where(o.g == 1, 1 - o.y, o.y), 0.0)
    floor, exposure = audit_floor(
        gm, o.audited, wrong_u, o.pa, pi_eff[o.rc], model_s, nm, o.g, found=metric in FOUND_FLOOR_METRICS
    )
    direct = v_cluster - v_d
    # the composite's pooled prediction describes the agreement audit alone: in "tasks" mode the direct
    # estimate also holds the disagreements' second phase, so it stands as it is (never below the floor)
    pooled = audit_composite(direct, exposure) if prog.mode == "clusters" else np.maximum(direct, 0.0)
    # the floor: a small audit that found none of the rare both-wrong rows never reports almost no
    # variance (docs/estimator.md, "The audit's share"; bench/bench_small_plan.py)
    v_audit = np.maximum(pooled, floor) if metric in FLOORED_METRICS else pooled
    return MetricVariance(
        point=np.where(undefined, np.nan, point),
        undefined=undefined,
        sampling=v_d,
        audit=v_audit,
        adjudicator_error=_error_variance(gm, tot, prog, err_draws, model_s, iid, nm),
        audit_direct=direct,
        floor=np.maximum(v_audit - direct, 0.0),
    )

"""The way forward from an interim estimate (the planner's verdict): how many more decisions a
plan needs for its target half-width at the rates measured so far, and whether the target can be
reached with the benchmark's questions at all.

Method: the planner's variance model, inverted at the measured variance. The planner
(:func:`reform_core.estimators.planner.predicted_variance`) writes a model's measurement variance
as two sources of known shape in the cluster probability π and the audit probability π_A::

    S(π)      = A (1 − π)/π + C/π                             questions sampled; decision noise on disagreements
    U(π, π_A) = B [(1 − π_A)/(π_A π) + (1 − π)/π] + D/π       the agreement audit; decision noise on audits

(``S + U`` is ``predicted_variance``), with A–D the planner's coefficients
(:func:`reform_core.estimators.planner.variance_parts`) computed at the **measured rates**
(:func:`measured_inputs`: each disagreement stratum's estimated pass rate, the audit's pooled
both-wrong rate with a Jeffreys half event, the annotators' estimated error) instead of the
planning assumptions. The estimate measures three components at the plan's current effective
probability π₀ = π × (questions fully decided / questions sampled), the inclusion probability
the estimator gives its decided questions: its sampling, audit and adjudicator-error variances.
Each is carried to another π by its own shape — ``S_meas · S(π)/S(π₀)``, ``U_meas · U(π, π_A)/U(π₀,
π_A)``, ``E_meas · π₀/π`` (the error rates are fitted on doubled items, whose number grows with π)
— and the half-width at π is ``t_{0.975, n(π) − 1} · √V(π)`` with ``n(π) = n₀ π/π₀`` questions
fully decided, the estimator's own t quantile. At π₀ this is exactly the measured half-width, so
the verdict shows one number. Beyond π₀ the audit's part is never below ``U(π, π_A)`` at the measured
rates: the estimator's own floor on TCPR and the constraint level counts only the prior's half event
(the errors a model's audit has not met yet are not in its measured variance), while the pooled
both-wrong rate counts the errors every model's audit found; without this bound a model whose first
audits found nothing was predicted to finish at 0.61 of the half-width it then measured
(``tests/unit/test_forward.py``). The smallest π that reaches the target is found by bisection (the
variance and the t quantile both fall as π grows); the decisions it needs are the planner's
expected decisions at π less those at π₀ (:func:`reform_core.estimators.planner.decisions_per_task`),
plus the opinions the second-opinion rule still owes. Where nothing is measured yet (fewer than two
questions fully decided, or no measurable spread) the planner's own prediction at the measured
rates is used, and the result says so (``calibrated`` false).

*Reachable with this benchmark's questions* means reachable at π = 1 (every question's
disagreements adjudicated) with the plan's audit share; the *best reachable* half-width is at
π = 1 and π_A = 1 (every agreement audited too). The prediction carries the planner's
approximations (errors independent across rows; measured within a factor of two per model in
``tests/unit/test_planner.py``), so its numbers are "about".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
from scipy import stats

from reform_core.estimators import planner

MIN_PI = 1e-4  # the smallest cluster probability searched
VARIANCE_SOURCES = ("sampling", "audit", "adjudicator_error")


@dataclass(frozen=True)
class Measured:
    """One model's measured variance components (pp²) at its current effective cluster
    probability ``pi_now``, with ``n_observed`` questions fully decided."""

    sampling: float
    audit: float
    adjudicator_error: float
    n_observed: int
    pi_now: float


def source_shapes(parts: pd.Series, pi: float, pi_a: float) -> tuple[float, float]:
    """``(S(π), U(π, π_A))`` of the module docstring (their sum is the planner's predicted variance)."""
    s = parts["a_cluster"] * (1 - pi) / pi + parts["c_noise"] / pi
    if pi_a > 0:
        u = parts["b_audit"] * ((1 - pi_a) / (pi_a * pi) + (1 - pi) / pi) + parts["d_noise"] / pi
    else:
        u = np.inf if parts["b_audit"] > 0 else 0.0
    return float(s), float(u)


def variance_at(parts: pd.Series, pi: float, pi_a: float, *, measured: Optional[Measured], pi_a_now: float) -> float:
    """The measurement variance (pp²) at (π, π_A): the planner's prediction, or each measured
    component carried from (π₀, plan's π_A) by its source's shape (a source whose shape is 0 or
    undefined at π₀ is carried as 1/π); beyond π₀ the audit's never below ``U(π, π_A)``."""
    s, u = source_shapes(parts, pi, pi_a)
    if measured is None:
        return s + u
    s0, u0 = source_shapes(parts, measured.pi_now, pi_a_now)

    def carry(value: float, shape: float, shape0: float) -> float:
        if shape0 > 0 and np.isfinite(shape0):
            return value * shape / shape0
        return value * measured.pi_now / pi

    audit = carry(measured.audit, u, u0)
    if pi > measured.pi_now:  # beyond what is decided: at least the planner's audit term at the measured rates
        audit = max(audit, u)
    return carry(measured.sampling, s, s0) + audit + measured.adjudicator_error * measured.pi_now / pi


def half_width_at(
    parts: pd.Series,
    pi: float,
    pi_a: float,
    *,
    measured: Optional[Measured],
    pi_a_now: float,
    clusters: int,
    level: float = 0.95,
) -> float:
    """The measurement half-width (pp) at (π, π_A): ``t_{df} √V`` with ``df`` one less than the
    questions expected fully decided at π (at least 1), as the estimator computes it."""
    n = measured.n_observed * pi / measured.pi_now if measured is not None else clusters * pi
    df = max(int(round(n)) - 1, 1)
    v = variance_at(parts, pi, pi_a, measured=measured, pi_a_now=pi_a_now)
    return float(stats.t.ppf(0.5 + level / 2, df) * math.sqrt(v)) if np.isfinite(v) else math.inf


def way_forward(
    parts: pd.Series,
    *,
    target: float,
    pi_plan: float,
    pi_audit: float,
    clusters: int,
    measured: Optional[Measured],
    awaiting: int,
    k_dis: float,
    k_aud: float,
    level: float = 0.95,
) -> dict:
    """One model's way to ``target`` (pp) at its plan's audit share ``pi_audit`` (module docstring):
    ``half_width`` now (None when nothing is measured), ``pi_needed`` (None when the target is not
    reachable with the benchmark's questions at this audit share), ``decisions_needed`` (None when
    not reachable; includes the ``awaiting`` opinions), ``questions_beyond_plan`` (questions to add
    to the plan's sample, 0 when the plan's own sample suffices), ``finish_half_width`` (the plan
    finished: π = ``pi_plan``), ``best_half_width`` (π = 1, π_A = 1), ``plan_audit_half_width``
    (π = 1 at the plan's audit share) and ``calibrated``."""
    kw = dict(measured=measured, pi_a_now=pi_audit, clusters=clusters, level=level)
    pi_now = measured.pi_now if measured is not None else 0.0
    now = half_width_at(parts, pi_now, pi_audit, **kw) if measured is not None else None
    at_one = half_width_at(parts, 1.0, pi_audit, **kw)
    if now is not None and now <= target:
        pi_need = pi_now
    elif at_one > target:
        pi_need = None
    else:
        lo, hi = max(pi_now, MIN_PI), 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if half_width_at(parts, mid, pi_audit, **kw) > target else (lo, mid)
        pi_need = hi

    def cost(pi: float) -> float:
        return pi * (k_dis * float(parts["disagreements"]) + k_aud * pi_audit * float(parts["agreements"]))

    return {
        "half_width": now,
        "pi_needed": pi_need,
        "reachable": pi_need is not None,
        "decisions_needed": (
            None if pi_need is None else int(math.ceil(max(cost(pi_need) - cost(pi_now), 0.0) - 1e-9)) + int(awaiting)
        ),
        "questions_beyond_plan": (
            None if pi_need is None else max(int(math.ceil(clusters * (pi_need - pi_plan) - 1e-9)), 0)
        ),
        "finish_half_width": half_width_at(parts, max(pi_plan, MIN_PI), pi_audit, **kw),
        "best_half_width": half_width_at(parts, 1.0, 1.0, **kw),
        "plan_audit_half_width": at_one,
        "calibrated": measured is not None,
    }


def measured_inputs(
    rows: pd.DataFrame,
    smooth: pd.Series,
    both_wrong: pd.DataFrame,
    annotators: pd.DataFrame,
    *,
    judge_a: str,
    judge_b: str,
    assumed_error: float,
) -> tuple[pd.Series, float, float]:
    """The planner's working rates as measured so far: each disagreement stratum's pass rate
    (``model|A1B0|category|mode`` → mean point estimate of its rows' truths, ``smooth`` by iid),
    the pooled both-wrong rate among audited agreements with a Jeffreys half event ((x + ½)/(n + 1):
    an audit that found none does not make the rate 0) and the annotators' error (1 − their
    decision-weighted estimated accuracy; ``assumed_error`` where it is not identified)."""
    g = pd.to_numeric(rows[judge_a], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(rows[judge_b], errors="coerce").to_numpy(dtype=float)
    dis = g != m
    key = (
        rows["model"].astype(str)
        + "|"
        + np.where(g == 1, "A1B0", "A0B1")
        + "|"
        + rows["category"].astype(str)
        + "|"
        + rows["mode"].astype(str)
    ).to_numpy()[dis]
    truth = smooth.reindex(rows["iid"].to_numpy()[dis]).to_numpy(dtype=float)
    rates = pd.Series(truth).groupby(key).mean().dropna()
    audited = both_wrong["audited"].to_numpy(dtype=float)
    found = np.clip(both_wrong["both_wrong"].to_numpy(dtype=float), 0.0, None) / 100 * audited
    bw = float((np.nansum(found) + 0.5) / (audited.sum() + 1.0))
    err = float(assumed_error)
    if annotators is not None and len(annotators) and annotators["decisions"].sum() > 0:
        w = annotators["decisions"].to_numpy(dtype=float)
        err = 1.0 - float(np.average(annotators["accuracy"].to_numpy(dtype=float), weights=w))
    return rates, min(max(bw, 1e-4), 0.5), min(max(err, 1e-3), 0.45)


def _measured(
    components: pd.DataFrame, model: str, *, has_interval: bool, n_observed: int, pi_now: float
) -> Optional[Measured]:
    """The model's measured components, or None where nothing can calibrate the planner (no
    measurement interval, fewer than two questions fully decided)."""
    c = components[components["model"].astype(str) == model]
    if not has_interval or c.empty or n_observed < 2 or not pi_now > 0:
        return None
    r = c.iloc[0]
    return Measured(
        sampling=float(r["sampling"]),
        audit=float(r["audit"]),
        adjudicator_error=float(r["adjudicator_error"]),
        n_observed=int(n_observed),
        pi_now=float(pi_now),
    )


def forward_table(
    instances: pd.DataFrame,
    index,
    design,
    *,
    metric: str,
    target: float,
    progress: pd.DataFrame,
    components: pd.DataFrame,
    scores: pd.DataFrame,
    both_wrong: pd.DataFrame,
    annotators: Optional[pd.DataFrame],
    smooth: pd.Series,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    level: float = 0.95,
) -> pd.DataFrame:
    """Per model, :func:`way_forward` to ``target`` (pp of ``metric``) from a default estimate:
    ``instances`` the scored rows and ``index`` their unit index, ``design`` the plan's
    :class:`~reform_core.estimators.design.Design`, the other frames the estimate's reports
    (``progress``, ``components``, ``scores`` = its intervals, ``both_wrong``, ``annotators``) and
    ``smooth`` its rows' point estimates by iid. The planner's coefficients are computed at the
    measured rates (:func:`measured_inputs`)."""
    rates, bw, err = measured_inputs(
        instances,
        smooth,
        both_wrong,
        annotators,
        judge_a=judge_a,
        judge_b=judge_b,
        assumed_error=design.assumed_human_error,
    )
    parts = _measured_parts(instances, index, design, metric, rates, bw, err, judge_a, judge_b)
    k_dis, k_aud = _decisions_per_task(design, err, bw)
    mine = scores[scores["metric"] == metric].set_index("model")
    rows = []
    for r in progress.itertuples(index=False):
        m = str(r.model)
        if m not in parts.index:
            continue
        way = _model_way_forward(
            r,
            parts.loc[m],
            design,
            mine,
            components,
            metric=metric,
            target=target,
            k_dis=k_dis,
            k_aud=k_aud,
            level=level,
        )
        rows.append({"model": m, **way})
    return pd.DataFrame(rows)


def _measured_parts(
    instances: pd.DataFrame,
    index,
    design,
    metric: str,
    rates: pd.Series,
    bw: float,
    err: float,
    judge_a: str,
    judge_b: str,
) -> pd.DataFrame:
    """The planner's variance coefficients, indexed by model, for the plan's design at the measured rates."""
    d = float(design.double_fraction)
    return planner.variance_parts(
        instances,
        metric,
        judge_a=judge_a,
        judge_b=judge_b,
        rates=rates,
        both_wrong=bw,
        human_error=err,
        decisions_per_item=1.0 + d,
        condition=None,
        seed=int(design.seed),
        second_opinion=design.second_opinion,
        allocation=design.audit_allocation,
        audit_unit=design.audit_unit,
        audit_opinions=int(design.audit_opinions),
        index=index,
    ).set_index("model")


def _decisions_per_task(design, err: float, bw: float) -> tuple[float, float]:
    """The planner's expected decisions per disagreement / audit task for the design at the measured rates."""
    return planner.decisions_per_task(
        double_fraction=float(design.double_fraction),
        second_opinion=design.second_opinion,
        audit_opinions=int(design.audit_opinions),
        human_error=err,
        both_wrong=bw,
    )


def _model_way_forward(
    r,
    parts: pd.Series,
    design,
    mine: pd.DataFrame,
    components: pd.DataFrame,
    *,
    metric: str,
    target: float,
    k_dis: float,
    k_aud: float,
    level: float,
) -> dict:
    """:func:`way_forward` for the model of progress row ``r`` from its measured components and its plan."""
    m = str(r.model)
    pi_plan = float(design.cluster_pi.get(m, 0.0))
    pi_now = pi_plan * r.clusters_observed / r.clusters_sampled if r.clusters_sampled else 0.0
    has = m in mine.index and pd.notna(mine.loc[m, "measurement_lo"])
    measured = _measured(
        components[components["metric"] == metric],
        m,
        has_interval=has,
        n_observed=int(r.clusters_observed),
        pi_now=pi_now,
    )
    return way_forward(
        parts,
        target=target,
        pi_plan=pi_plan,
        pi_audit=float(design.audit_probability([m])[0]),
        clusters=int(r.clusters),
        measured=measured,
        awaiting=int(r.awaiting_opinion),
        k_dis=k_dis,
        k_aud=k_aud,
        level=level,
    )

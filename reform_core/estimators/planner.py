"""The budget planner of the default design: the measurement variance a plan will give, as a
function of its cluster and audit probabilities, and the cheapest plan for a wanted half-width
(:func:`plan_for_half_width`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from reform_core.estimators.allocation import allocation_scores, prior_wrong_rates, second_opinion_noise
from reform_core.estimators.design import (
    ASSUMED_BOTH_WRONG,
    ASSUMED_HUMAN_ERROR,
    DEFAULT_ALLOCATION,
    DEFAULT_AUDIT_OPINIONS,
    DEFAULT_AUDIT_UNIT,
    DEFAULT_DOUBLE,
    DEFAULT_FOLDS,
    DEFAULT_SECOND_OPINION,
    Design,
    create,
)

PLANNER_DRAWS = 16


@dataclass(frozen=True)
class _Rows:
    """The planner's view of the scored rows: their unit index, the judges' labels and per-model counts."""

    index: object
    rows: pd.DataFrame
    g: np.ndarray
    m: np.ndarray
    row_model: np.ndarray
    n_inst: np.ndarray
    units: dict

    @property
    def nm(self) -> int:
        return len(self.index.models)

    @property
    def nq(self) -> int:
        return len(self.index.questions)


def _planner_rows(instances: pd.DataFrame, judge_a: str, judge_b: str, condition: str | None, index) -> _Rows:
    from reform_core.unit_index import KS, build_index  # local: the planner is the only user here

    index = index if index is not None else build_index(instances, condition=condition)
    rows = instances.iloc[index.row_pos]
    nm = len(index.models)
    return _Rows(
        index=index,
        rows=rows,
        g=pd.to_numeric(rows[judge_a], errors="coerce").to_numpy(dtype=float),
        m=pd.to_numeric(rows[judge_b], errors="coerce").to_numpy(dtype=float),
        row_model=pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy()),
        n_inst=np.bincount(index.inst_model, minlength=nm).astype(float),
        units={k: np.bincount(index.unit_model[index.unit_k == k], minlength=nm).astype(float) for k in KS},
    )


def _metric_sum(f: _Rows, metric: str, pv: np.ndarray) -> np.ndarray:
    """Per cluster, the metric's contribution (percentage points of its model's score)."""
    from reform_core.unit_index import KS

    index, nm, nq = f.index, f.nm, f.nq
    allpass, joint, _ = index.evaluate(pv)
    if metric == "tcpr":
        return np.bincount(
            index.inst_model * nq + index.inst_question,
            100 * allpass / np.maximum(f.n_inst[index.inst_model], 1),
            minlength=nm * nq,
        )
    unit_c = index.unit_model * nq + index.unit_question
    out = np.zeros(nm * nq)
    for k in KS:
        sel = index.unit_k == k
        n_k = f.units[k][index.unit_model[sel]]
        out += np.bincount(
            unit_c[sel], joint[sel] * np.where(n_k > 0, 100 / (3 * np.maximum(n_k, 1)), 0), minlength=nm * nq
        )
    return out


def _cluster_term(f: _Rows, metric: str, rates: Optional[pd.Series], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``A`` per model (disagreement truths drawn independently at the working rates) and the
    working point (each row's expected truth)."""
    dis = f.g != f.m
    rho = np.full(len(f.rows), 0.5)
    if rates is not None and len(rates):
        strat = (
            f.rows["model"].astype(str)
            + "|"
            + np.where(f.g == 1, "A1B0", "A0B1")
            + "|"
            + f.rows["category"].astype(str)
            + "|"
            + f.rows["mode"].astype(str)
        ).to_numpy()
        rho = np.clip(pd.Series(strat).map(rates).fillna(0.5).to_numpy(dtype=float), 0.02, 0.98)
    base = np.where(dis, rho, f.g)
    ref = _metric_sum(f, metric, base)
    rng = np.random.default_rng(seed)
    sq = np.zeros(f.nm * f.nq)
    for _ in range(PLANNER_DRAWS):
        y = np.where(dis, (rng.random(len(f.rows)) < rho).astype(float), f.g)
        sq += (_metric_sum(f, metric, y) - ref) ** 2
    return np.bincount(np.arange(f.nm * f.nq) // f.nq, sq / PLANNER_DRAWS, minlength=f.nm), base


def _metric_gradient(f: _Rows, metric: str, base: np.ndarray) -> np.ndarray:
    """Each row's derivative of the metric (pp) at the working point, for the audit and noise terms."""
    from reform_core.unit_index import KS

    grads = f.index.gradients(base)
    rm = f.row_model
    if metric == "tcpr":
        return 100 * grads["allpass"] / np.maximum(f.n_inst[rm], 1)
    return sum(
        np.where(f.units[k][rm] > 0, 100 * grads[f"joint{k}"] / (3 * np.maximum(f.units[k][rm], 1)), 0) for k in KS
    )


def _audit_and_noise(
    f: _Rows,
    gm: np.ndarray,
    *,
    both_wrong: float,
    human_error: float,
    decisions_per_item: float,
    second_opinion: str,
    allocation: str,
    audit_unit: str,
    audit_opinions: int,
) -> tuple:
    """``B``, ``C`` and ``D`` per model. The audit: both judges wrong at the planning rate of each
    row's agreed label (prior_wrong_rates), each agreement weighted by the inverse of its
    allocation relative to its model's mean, so that Σ_u G² σ² / π_u = (that sum) / π_A under the
    plan's allocation (caps at 1 ignored). Decision noise of an item's estimate: one decision's
    classical correction, less where items are doubled; an audit under the second-opinion rule has
    nearly the noise of two decisions at the cost of one (second_opinion_noise)."""
    g, m, rm, nm = f.g, f.m, f.row_model, f.nm
    dis, agree = g != m, g == m
    mean_label = np.nan_to_num((g + m) / 2, nan=0.5)
    r = prior_wrong_rates(mean_label, agree, rm, nm, both_wrong)[rm, (mean_label > 0.5).astype(int)]
    score = allocation_scores(
        Design(
            cluster_pi={},
            audit_allocation=allocation,
            audit_unit=audit_unit,
            assumed_both_wrong=both_wrong,
            assumed_human_error=human_error,
            audit_opinions=audit_opinions,
        ),
        f.index,
        f.rows,
        g,
        m,
    )
    mean_score = np.bincount(rm, np.where(agree, score, 0.0), minlength=nm) / np.maximum(
        np.bincount(rm, agree, minlength=nm), 1
    )
    weight = np.where(agree & (score > 0), mean_score[rm] / np.where(score > 0, score, 1.0), 0.0)
    b_audit = np.bincount(rm, np.where(agree, gm**2 * r * (1 - r) * weight, 0.0), minlength=nm)
    e = human_error
    v_dis = e * (1 - e) / (1 - 2 * e) ** 2 / max(decisions_per_item, 1.0)
    v_aud = np.full(len(f.rows), v_dis)
    if second_opinion in ("audit", "all"):
        v_aud = second_opinion_noise(e, 1 - r, audit_opinions)
    if second_opinion == "all":
        v_dis = float(second_opinion_noise(e, 0.5))
    c_noise = np.bincount(rm, np.where(dis, gm**2, 0.0), minlength=nm) * v_dis
    d_noise = np.bincount(rm, np.where(agree, gm**2 * v_aud * weight, 0.0), minlength=nm)
    return b_audit, c_noise, d_noise


def variance_parts(
    instances: pd.DataFrame,
    metric: str,
    *,
    judge_a: str,
    judge_b: str,
    rates: Optional[pd.Series],
    both_wrong: float,
    human_error: float,
    decisions_per_item: float,
    condition: str | None,
    seed: int,
    second_opinion: str = "none",
    allocation: str = "uniform",
    audit_unit: str = "row",
    audit_opinions: int = 2,
    index=None,
) -> pd.DataFrame:
    """Per model, the four variance coefficients of the planner (see :func:`plan_for_half_width`)
    and the model's disagreements and agreements; ``index``: the unit index of ``instances`` when
    the caller holds it (built with ``condition``)."""
    f = _planner_rows(instances, judge_a, judge_b, condition, index)
    a_cluster, base = _cluster_term(f, metric, rates, seed)
    b_audit, c_noise, d_noise = _audit_and_noise(
        f,
        _metric_gradient(f, metric, base),
        both_wrong=both_wrong,
        human_error=human_error,
        decisions_per_item=decisions_per_item,
        second_opinion=second_opinion,
        allocation=allocation,
        audit_unit=audit_unit,
        audit_opinions=audit_opinions,
    )
    dis, agree = f.g != f.m, f.g == f.m
    return pd.DataFrame(
        {
            "model": f.index.models,
            "a_cluster": a_cluster,
            "b_audit": b_audit,
            "c_noise": c_noise,
            "d_noise": d_noise,
            "disagreements": np.bincount(f.row_model, dis, minlength=f.nm),
            "agreements": np.bincount(f.row_model, agree, minlength=f.nm),
        }
    )


def decisions_per_task(
    *, double_fraction: float, second_opinion: str, audit_opinions: int, human_error: float, both_wrong: float
) -> tuple[float, float]:
    """Expected decisions per disagreement task and per audit task: a doubled task two, the others
    one plus the opinions the second-opinion rule is expected to ask for (an audit when its first
    decision finds both judges wrong, ``human_error + both_wrong``, and a third where the second
    does too, ``human_error² + both_wrong``; under ``"all"`` half the disagreements)."""
    d = float(double_fraction)
    extra_aud = human_error + both_wrong + (human_error**2 + both_wrong if audit_opinions >= 3 else 0.0)
    k_aud = 1.0 + d + (1 - d) * (extra_aud if second_opinion in ("audit", "all") else 0.0)
    k_dis = 1.0 + d + (1 - d) * (0.5 if second_opinion == "all" else 0.0)
    return k_dis, k_aud


def predicted_variance(parts: pd.Series, pi_c: float, pi_a: float) -> float:
    """Planner's measurement variance (pp²) of one model's metric for probabilities π_c, π_A:
    ``A (1−π_c)/π_c`` (cluster sampling of disagreements, truths independent at the working
    rates) ``+ B [(1−π_A)/(π_A π_c) + (1−π_c)/π_c]`` (both-wrong errors at the assumed rate
    among agreements) ``+ C/π_c + D/π_c`` (decision noise on disagreements / audited
    agreements, D weighted by π_A·(1/π_A))."""
    if pi_c <= 0:
        return np.inf
    v = parts["a_cluster"] * (1 - pi_c) / pi_c + parts["c_noise"] / pi_c
    if pi_a > 0:
        v += parts["b_audit"] * ((1 - pi_a) / (pi_a * pi_c) + (1 - pi_c) / pi_c) + parts["d_noise"] / pi_c
    else:
        v += np.inf if parts["b_audit"] > 0 else 0.0
    return float(v)


def _smallest_pi(p: pd.Series, pa: float, target_v: float) -> float:
    """The smallest π_c (bisection, to 1e-15) whose predicted variance at π_A = ``pa`` is within ``target_v``."""
    lo, hi = 1e-4, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if predicted_variance(p, mid, pa) > target_v else (lo, mid)
    return hi


def _cheapest(p: pd.Series, target_v: float, k_dis: float, k_aud: float) -> dict:
    """One model's cheapest (π_c, π_A) on the grid of audit shares whose predicted variance is
    within ``target_v`` (everything adjudicated and audited where none is: not reachable)."""
    best = None
    for pa in (0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0):
        if predicted_variance(p, 1.0, pa) > target_v:
            continue
        pc = _smallest_pi(p, pa, target_v)
        cost = pc * (k_dis * p["disagreements"] + k_aud * pa * p["agreements"])
        if best is None or cost < best[0]:
            best = (cost, pc, pa)
    reachable = best is not None
    if best is None:  # even everything adjudicated and audited cannot reach it: plan the maximum
        best = (k_dis * p["disagreements"] + k_aud * p["agreements"], 1.0, 1.0)
    cost, pc, pa = best
    return {
        "model": p["model"],
        "cluster_pi": pc,
        "audit_pi": pa,
        "expected_decisions": cost,
        "predicted_half_width": 1.96 * np.sqrt(predicted_variance(p, pc, pa)),
        "reachable": reachable,
    }


def plan_for_half_width(
    instances: pd.DataFrame,
    *,
    half_width: float,
    metric: str,
    seed: int,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    rates: Optional[pd.Series] = None,
    both_wrong: float = ASSUMED_BOTH_WRONG,
    human_error: float = ASSUMED_HUMAN_ERROR,
    double_fraction: float = DEFAULT_DOUBLE,
    folds: int = DEFAULT_FOLDS,
    condition: str = "main",
    second_opinion: str = DEFAULT_SECOND_OPINION,
    audit_opinions: int = DEFAULT_AUDIT_OPINIONS,
) -> tuple[dict, pd.DataFrame]:
    """Size the default design for a wanted measurement half-width (percentage points).

    Per model, the planner predicts the measurement variance of ``metric`` (``tcpr`` or
    ``emcr``) as a function of the cluster probability ``π_c`` and the audit probability
    ``π_A`` (:func:`predicted_variance`), from the judges' agreement structure: which
    instances are disagreements, how the eligible units and instructions overlap them, and
    working assumptions — disagreement truths independent at ``rates`` (stratum pass rates
    from a pilot; 0.5, the most conservative, where unknown), both judges wrong on
    ``both_wrong`` of the agreements, adjudicators erring at ``human_error`` — an item's decision
    noise that of one decision (less where doubled), or under the second-opinion rule
    (``second_opinion``) nearly that of two for about one decision (:func:`second_opinion_noise`).
    The expected decisions count doubled items twice and add the opinions the rule is
    expected to ask for (an audit whose first decision finds both judges wrong: ``human_error +
    both_wrong``, a third where the second does too: ``human_error² + both_wrong``; under
    ``"all"`` half the disagreements). It then picks, on a grid of ``π_A``, the
    smallest ``π_c`` with ``1.96 √V ≤ half_width`` and keeps the pair of least expected
    decisions. The audit term follows the plan's own allocation (:func:`allocation_scores`: both
    judges wrong at the planning rate of each row's agreed label, :func:`prior_wrong_rates`), with
    errors taken as independent; correlated truths and errors make the real variance larger or
    smaller than predicted (measured on a simulated project: within a factor of two per model,
    ``tests/unit/test_planner.py``), and the Scores page compares the measured half-width with the
    target as decisions come in.

    Returns
    -------
    (design, table)
        The design (:func:`reform_core.estimators.design.create`, with ``target`` recorded) and per model
        ``model, cluster_pi, audit_pi, expected_decisions, predicted_half_width, reachable``.
    """
    _check_target(metric, half_width)
    d = float(double_fraction)
    parts = variance_parts(
        instances,
        metric,
        judge_a=judge_a,
        judge_b=judge_b,
        rates=rates,
        both_wrong=both_wrong,
        human_error=human_error,
        decisions_per_item=1.0 + d,
        condition=condition,
        seed=seed,
        second_opinion=second_opinion,
        allocation=DEFAULT_ALLOCATION,
        audit_unit=DEFAULT_AUDIT_UNIT,
        audit_opinions=audit_opinions,
    )
    rows = _cheapest_rows(parts, half_width, d, second_opinion, audit_opinions, human_error, both_wrong)
    table = pd.DataFrame(rows)
    design = _target_design(
        rows, metric, half_width, double_fraction, seed, folds, condition, second_opinion, audit_opinions
    )
    return design, table


def _check_target(metric: str, half_width: float) -> None:
    """Refuse a metric other than TCPR / EMCR and a half-width that is not positive."""
    if metric not in ("tcpr", "emcr"):
        raise ValueError(f"metric must be 'tcpr' or 'emcr', got {metric!r}")
    if not half_width > 0:
        raise ValueError(f"half_width must be > 0 percentage points, got {half_width!r}")


def _cheapest_rows(
    parts: pd.DataFrame,
    half_width: float,
    double_fraction: float,
    second_opinion: str,
    audit_opinions: int,
    human_error: float,
    both_wrong: float,
) -> list[dict]:
    """Per model, the cheapest (π_c, π_A) that reaches ``half_width`` (:func:`_cheapest`)."""
    k_dis, k_aud = decisions_per_task(
        double_fraction=double_fraction,
        second_opinion=second_opinion,
        audit_opinions=audit_opinions,
        human_error=human_error,
        both_wrong=both_wrong,
    )
    target_v = (half_width / 1.96) ** 2
    return [_cheapest(p, target_v, k_dis, k_aud) for _, p in parts.iterrows()]


def _target_design(
    rows: list[dict],
    metric: str,
    half_width: float,
    double_fraction: float,
    seed: int,
    folds: int,
    condition: str,
    second_opinion: str,
    audit_opinions: int,
) -> Design:
    """The default design at each model's chosen (π_c, π_A), with the target recorded."""
    cluster_pi = {r["model"]: r["cluster_pi"] for r in rows}
    audit_pi_m = {r["model"]: r["audit_pi"] for r in rows}
    return create(
        cluster_pi,
        dict(cluster_pi),
        audit_pi=audit_pi_m,
        double_fraction=double_fraction,
        seed=seed,
        folds=folds,
        condition=condition,
        second_opinion=second_opinion,
        audit_opinions=audit_opinions,
        target={"metric": metric, "half_width": float(half_width)},
    )

"""The default estimator in the product: a judge pair's question-cluster plan, its decisions,
the estimate with its two named intervals, the audit's both-wrong rates, the annotators'
estimated accuracy and the planner's verdict (issue 13).

The maths lives in :mod:`reform_core.estimators` (pure); this module only gathers its
inputs from the database and turns its outputs into the shapes the CLI, the export and
the pages show:

* :func:`design_plan` — the newest *question-cluster* plan of the pair (the design of
  :mod:`reform_core.estimators.design`, stored in ``sample_plan.params``); the estimator
  is defined only for such a plan (its hashed draws tell which questions were sampled);
* :func:`plan_inputs` — that plan's tasks and every annotator's current decision as the
  truth the annotator reported (``h``): on a disagreement the chosen judge's label
  ("neither" = unsure: no label, counted); on an audited agreement the agreed label, or
  its opposite for "neither" (both judges wrong);
* :func:`cluster_estimate` — the default estimator through the estimation seam
  (:mod:`reform_core.estimators.base`) on the plan's design, tasks and decisions;
* :func:`paper_intervals` — the two intervals of the paper's stratified / pooled rules, through
  the same seam;
* :func:`verdict` — whether the plan's target half-width is reached ("stop when precise
  enough").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import adjudication as repo
from reform_core.estimators import base
from reform_core.estimators.design import Design, is_stored_design
from reform_core.frames import CONDITION_MAIN
from reform_core.unit_index import sorted_slots

ESTIMATOR = base.DEFAULT  # the default estimator's name (score / export "estimator")
INTERVAL_METRICS = ("tcpr", "emcr", "r1", "r2", "r3")
DEFAULT_REPS = 2000
MEASUREMENT_TEXT = (
    "Measurement interval (95 %): the score of this fixed benchmark — how far it may move because "
    "only a sample of questions was adjudicated, unreviewed disagreements are predicted, agreements "
    "are audited on a sample and adjudicators err; the questions themselves are held fixed."
)
POPULATION_TEXT = (
    "Population interval (95 %): adds the questions' own sampling — the score a benchmark of new "
    "questions drawn the same way would get; use it to compare models beyond these questions."
)
DEFAULT_TARGET = {"metric": "tcpr", "half_width": 3.0}  # the Cochran margin e = 0.03 of the default sizing


def is_cluster_plan(params) -> bool:
    """Whether a plan's stored parameters are a question-cluster design (the default estimator's)."""
    return is_stored_design(params)


def design_plan(engine: Engine, judge_a: str, judge_b: str) -> Optional[dict]:
    """The newest question-cluster plan of the pair (either order), as ``repo.plan_row``; None if none."""
    with engine.connect() as conn:
        plans = repo.plans(conn)
        mine = plans[
            ((plans["judge_a"] == judge_a) & (plans["judge_b"] == judge_b))
            | ((plans["judge_a"] == judge_b) & (plans["judge_b"] == judge_a))
        ]
        for pid in reversed(mine["id"].tolist()):
            row = repo.plan_row(conn, plan_id=int(pid))
            if row is not None and is_cluster_plan(row["params"]):
                return row
    return None


@dataclass
class PlanInputs:
    tasks: pd.DataFrame  # iid, kind
    decisions: pd.DataFrame  # iid, annotator, h, kind
    unsure: int  # "neither / unsure" decisions on disagreements (no label, not used)
    other_plans: int = 0  # current decisions of the pair's other plans (not used by the estimator)
    task_stamp: Optional[tuple] = None  # the plan and its tasks' (count, max id) when ``tasks`` was read


def plan_inputs(
    engine: Engine,
    plan: dict,
    instances: pd.DataFrame,
    *,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    known: Optional[PlanInputs] = None,
) -> PlanInputs:
    """The plan's tasks and current decisions (module docstring), read against the pair's
    current labels in ``instances`` (columns ``iid``, ``judge_a``, ``judge_b``). ``known``: the
    inputs of an earlier call; its tasks are reused when the plan's tasks are still the same
    (the Scores page after a new decision: only the decisions are read again)."""
    from reform_core.services.data.instances import current_decisions, instance_id

    pid = int(plan["id"])
    with engine.connect() as conn:
        stamp = (
            pid,
            str(plan["name"]),
            json.dumps(plan["params"], sort_keys=True, default=str),
            *repo.plan_task_stamp(conn, plan_id=pid),
        )
        if known is not None and known.task_stamp == stamp:
            t = known.tasks
        else:
            tasks = repo.plan_task_keys(conn, plan_id=pid)
            t = pd.DataFrame(
                {
                    "iid": instance_id(tasks["response_id"], tasks["constraint_id"]),
                    "kind": tasks["kind"].astype(str).to_numpy(),
                }
            )
        rows = repo.adjudication_rows(conn, plan_id=pid)
    cur = current_decisions(rows)
    if cur.empty:
        return PlanInputs(
            t,
            pd.DataFrame(
                {
                    "iid": pd.Series(dtype="int64"),
                    "annotator": pd.Series(dtype=object),
                    "h": pd.Series(dtype=float),
                    "kind": pd.Series(dtype=object),
                }
            ),
            0,
            task_stamp=stamp,
        )
    iid = instance_id(cur["response_id"], cur["constraint_id"])
    g, m = _labels_at(instances, iid, judge_a, judge_b)
    agree = ~np.isnan(g) & (g == m)
    choice = cur["choice"].astype(str).to_numpy()
    label = pd.to_numeric(cur["label"], errors="coerce").to_numpy(dtype=float)
    # an audited agreement: A / B confirm the agreed label, "neither" says both judges are wrong
    h = np.where(agree, np.where(choice == "neither", 1.0 - g, g), label)
    ok = ~np.isnan(h)
    unsure = int((~agree & (choice == "neither")).sum())
    dec = pd.DataFrame(
        {
            "iid": iid[ok],
            "annotator": cur["annotator"].astype(str).to_numpy()[ok],
            "h": h[ok],
            "kind": np.where(agree, "audit", "disagreement")[ok],
        }
    )
    return PlanInputs(t, dec.reset_index(drop=True), unsure, task_stamp=stamp)


def _labels_at(instances: pd.DataFrame, iid: np.ndarray, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    """The two judges' labels of the instances ``iid`` (NaN where an iid is not a row): by binary
    search where the rows are sorted by iid (as loaded), else through an index of the rows."""
    keys = instances["iid"].to_numpy(dtype=np.int64)
    iid = np.asarray(iid, dtype=np.int64)
    if len(keys) and bool(np.all(keys[1:] > keys[:-1])):
        pos = sorted_slots(keys, iid)
    else:
        pos = pd.Index(keys).get_indexer(iid)
    out = []
    for col in (judge_a, judge_b):
        v = instances[col].to_numpy(dtype=float)
        out.append(np.where(pos >= 0, v[np.maximum(pos, 0)], np.nan) if len(v) else np.full(len(iid), np.nan))
    return out[0], out[1]


@dataclass
class PlanEstimate:
    """The default estimator's result on a plan, in product shape.

    ``estimate``: the seam's :class:`~reform_core.estimators.base.Estimate` (``table``: per model
    the point estimates (%); ``intervals``: long frame ``model, metric, estimate,
    measurement_lo/_hi, population_lo/_hi``, population NaN unless intervals were asked for;
    ``rows``: each scored main row's point estimate of its truth, for the plug-in breakdown
    tables; ``reports``: ``both_wrong`` — per model ``agreements, audited, both_wrong, lo, hi``
    (%) —, ``annotators`` — per annotator estimated sensitivity, specificity, accuracy and counts
    (empty when no item was decided twice) —, ``progress`` — per model planned / decided clusters
    and audits —, ``totals`` — per (model, question) cluster totals and denominators, which let
    an export recompute Table 2). ``plan`` / ``design``: the plan's name and design; ``inputs``,
    ``index``: what it ran on (reused by a rerun); ``forward``: per model the way to the plan's
    target (:func:`reform_core.estimators.forward.forward_table`; runs with intervals only)."""

    plan: str
    design: Optional[Design]
    estimate: base.Estimate
    with_population: bool
    reps: int
    seed: int
    inputs: Optional[PlanInputs] = None
    index: Optional[object] = None
    forward: Optional[pd.DataFrame] = None  # the planner's way forward per model (runs with intervals)

    @property
    def name(self) -> str:
        return self.estimate.estimator

    @property
    def table(self) -> pd.DataFrame:
        return self.estimate.table

    @property
    def scores(self) -> pd.DataFrame:
        return self.estimate.intervals

    @property
    def notes(self) -> list:
        return self.estimate.notes

    @property
    def smooth(self) -> pd.Series:
        return self.estimate.rows

    @property
    def both_wrong(self) -> Optional[pd.DataFrame]:
        return self.estimate.reports.get("both_wrong")

    @property
    def annotators(self) -> Optional[pd.DataFrame]:
        return self.estimate.reports.get("annotators")

    @property
    def progress(self) -> Optional[pd.DataFrame]:
        return self.estimate.reports.get("progress")

    @property
    def totals(self) -> Optional[pd.DataFrame]:
        return self.estimate.reports.get("totals")

    @property
    def error_identified(self) -> bool:
        return bool(self.estimate.reports.get("error_identified"))

    def take_evaluation(self) -> Optional[tuple]:
        """The unit index's evaluation of ``smooth`` (handed once to the plug-in tables, then dropped)."""
        out, self.estimate.evaluation = self.estimate.evaluation, None
        return out


def cluster_estimate(
    instances: pd.DataFrame,
    plan: dict,
    inputs: PlanInputs,
    *,
    intervals: bool = False,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    judge_a: str = "label_a",
    judge_b: str = "label_b",
    index=None,
) -> PlanEstimate:
    """The default estimate of the main condition (``instances``: the scored main rows, both
    labels present) on a question-cluster plan (``plan``: ``name`` and stored ``params``), through
    the estimation seam. ``intervals`` adds the population bootstrap (``reps`` replicates) and the
    adjudicator-error refits; the measurement interval is always computed (analytic). ``index``:
    the unit index of ``instances`` (built with ``condition=None``) when the caller holds it; the
    estimator keeps its decision-independent arrays with it, so a rerun after new decisions
    reuses them."""
    from reform_core.unit_index import build_index

    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps!r}")
    design = Design.from_stored(plan["params"])
    index = index if index is not None else build_index(instances, condition=None)
    data = base.EstimationData(
        instances=instances,
        decisions=inputs.decisions,
        judge_a=judge_a,
        judge_b=judge_b,
        design=design,
        tasks=inputs.tasks,
        index=index,
        memo=index.memo,
    )
    est = base.get(ESTIMATOR).estimate(data, base.Options(intervals=intervals, reps=int(reps), seed=int(seed)))
    if inputs.unsure:
        est.notes.append(
            f"{inputs.unsure} 'neither / unsure' decision(s) on disagreements carry no label; their "
            "questions count as not yet adjudicated until another annotator decides them"
        )
    forward = None
    if intervals:  # the verdict's way forward, on the run with every variance source
        from reform_core.estimators.forward import forward_table

        t = target_of(design.to_stored())
        forward = forward_table(
            instances,
            index,
            design,
            metric=t["metric"],
            target=t["half_width"],
            progress=est.reports["progress"],
            components=est.components,
            scores=est.intervals,
            both_wrong=est.reports["both_wrong"],
            annotators=est.reports.get("annotators"),
            smooth=est.rows,
            judge_a=judge_a,
            judge_b=judge_b,
        )
    return PlanEstimate(
        plan=str(plan["name"]),
        design=design,
        estimate=est,
        with_population=intervals,
        reps=int(reps),
        seed=int(seed),
        inputs=inputs,
        index=index,
        forward=forward,
    )


def plain_estimate(
    instances: pd.DataFrame,
    name: str,
    adjudications: pd.DataFrame,
    *,
    intervals: bool = False,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    index=None,
) -> PlanEstimate:
    """An estimator of the seam that needs no plan (``name``, registered) on the scored main rows,
    from the pair's current decisions (``iid, a``; ``annotator`` where known)."""
    dec = pd.DataFrame(
        {
            "iid": adjudications["iid"].to_numpy(dtype=np.int64),
            "h": adjudications["a"].to_numpy(float),
            "annotator": (adjudications["annotator"].astype(str).to_numpy() if "annotator" in adjudications else ""),
        }
    )
    data = base.EstimationData(instances=instances, decisions=dec, index=index)
    est = base.get(name).estimate(data, base.Options(intervals=intervals, reps=int(reps), seed=int(seed)))
    return PlanEstimate(
        plan="", design=None, estimate=est, with_population=intervals, reps=int(reps), seed=int(seed), index=index
    )


def paper_intervals(
    instances: pd.DataFrame,
    adjudications: pd.DataFrame,
    method: str,
    *,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    rates: pd.DataFrame | None = None,
    index=None,
) -> pd.DataFrame:
    """Measurement and population intervals of the paper's rules (``stratified`` | ``pooled``)
    for the scored main rows, from the pair's decisions (``iid, a``), through the estimation seam:
    long frame as :attr:`PlanEstimate.scores`. ``rates``: the scoring run's stratum rates, when
    ``instances`` are its calibrated rows (stratified: the calibration is then not redone);
    ``index``: its unit index of these rows (main rows only, in this order)."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps!r}")
    dec = pd.DataFrame({"iid": adjudications["iid"].to_numpy(dtype=np.int64), "h": adjudications["a"].to_numpy(float)})
    hints = {}
    if method == "stratified" and rates is not None:
        main_rates = rates[rates["condition"] == CONDITION_MAIN] if "condition" in rates.columns else rates
        hints = {"calibrated": instances, "rates": main_rates}
    data = base.EstimationData(instances=instances, decisions=dec, index=index if hints else None, hints=hints)
    return base.get(method).estimate(data, base.Options(intervals=True, reps=int(reps), seed=int(seed))).intervals


def intervals_json(scores: pd.DataFrame, model: str, *, population: bool = True) -> dict:
    """``{"measurement": {metric: [lo, hi]}, "population": {…}}`` of one model (None where undefined)."""
    from reform_core.services.scoring.numbers import json_number

    s = scores[scores["model"] == model].set_index("metric")
    out = {}
    for kind in ("measurement", "population") if population else ("measurement",):
        out[kind] = {
            m: (
                [json_number(s.loc[m, f"{kind}_lo"]), json_number(s.loc[m, f"{kind}_hi"])]
                if m in s.index and pd.notna(s.loc[m, f"{kind}_lo"])
                else None
            )
            for m in (*INTERVAL_METRICS, "constraint_level")
        }
    return out


def target_of(params: dict) -> dict:
    """The plan's precision target: ``params["target"]`` (``plan --target-half-width``), else
    the default sizing's ±3 pp on TCPR (Cochran's margin e = 0.03)."""
    t = params.get("target") if isinstance(params, dict) else None
    if isinstance(t, dict) and t.get("metric") in ("tcpr", "emcr") and float(t.get("half_width", 0)) > 0:
        return {"metric": t["metric"], "half_width": float(t["half_width"]), "source": "plan"}
    return {**DEFAULT_TARGET, "source": "default (Cochran margin 3 pp)"}


def closure_of(params) -> Optional[dict]:
    """A closed plan's closure as stored in its parameters (``closed``: ``at``, ``by``, ``reason``,
    ``withdrawn``; :func:`reform_core.services.adjudication.plan_lifecycle.close_plan`), None while it is open."""
    c = params.get("closed") if isinstance(params, dict) else None
    return dict(c) if isinstance(c, dict) else None


VERDICT_BASIS = (
    "the measurement interval with every variance source, the adjudicator-error refits included "
    "(as Table 2 shows it; seed of the intervals, 0 by default)"
)


def _half_widths(est: PlanEstimate, metric: str) -> dict:
    s = est.scores[est.scores["metric"] == metric]
    return {
        str(r.model): (float(r.measurement_hi - r.measurement_lo) / 2 if pd.notna(r.measurement_lo) else None)
        for r in s.itertuples(index=False)
    }


def _forward_summary(est: PlanEstimate, target: float) -> dict:
    """The planner's way forward over the models (:mod:`reform_core.estimators.forward`): the
    decisions still needed (None where the target is not reachable at the plan's audit share),
    the questions to add per model, whether the target is reachable with this benchmark's
    questions at all and the best reachable half-width (the largest over models)."""
    p = est.progress
    owed = {
        "tasks_left": int((p["tasks_planned"] - p["tasks_decided"] - p["awaiting_opinion"]).clip(lower=0).sum()),
        "opinions_owed": int(p["awaiting_opinion"].sum()),
    }
    fw = est.forward
    if fw is None or fw.empty:
        return {
            **owed,
            "decisions_needed": None,
            "extend_questions": None,
            "reachable": None,
            "best_half_width": None,
            "finish_half_width": None,
            "forward": {},
        }
    need = fw["decisions_needed"]
    best = fw["best_half_width"].astype(float)
    per_model = {
        str(r["model"]): {
            k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items() if k != "model"
        }
        for r in fw.to_dict("records")
    }
    return {
        **owed,
        "decisions_needed": None if need.isna().any() else int(need.sum()),
        "extend_questions": None if need.isna().any() else int(fw["questions_beyond_plan"].max()),
        "reachable": bool((best <= target).all()),
        "best_half_width": _largest(best),
        "finish_half_width": _largest(fw["finish_half_width"]),
        "forward": per_model,
    }


def _largest(values: pd.Series) -> Optional[float]:
    top = float(values.astype(float).max())
    return top if np.isfinite(top) else None


def _way_forward_text(f: dict, metric: str, target: float) -> str:
    """The verdict's second sentence: what it takes to reach the target from here."""
    if f["reachable"] is None:
        return ""
    fw = f["forward"]
    if not f["reachable"]:
        worst = max(fw, key=lambda m: fw[m]["best_half_width"] or np.inf)
        return (
            f" Not reachable with this benchmark's questions: even with every question adjudicated and every "
            f"agreement audited the {metric.upper()} half-width would be about ±{f['best_half_width']:.1f} pp "
            f"({worst}) — the best reachable" + _finishing(f) + "; decide whether that is precise enough, "
            "or add questions to the benchmark."
        )
    if f["decisions_needed"] is None:
        return (
            f" Not reachable at this plan's audit share, even with every question adjudicated; with every "
            f"agreement audited too about ±{f['best_half_width']:.1f} pp at best"
            + _finishing(f)
            + " — plan again by target half-width (the planner chooses the audit share)."
        )
    if f["decisions_needed"] == 0:  # the half-widths suffice; what is missing is named before this sentence
        return " Keep adjudicating the plan's remaining tasks."
    opinions = f" ({f['opinions_owed']} of them opinions already owed)" if f["opinions_owed"] else ""
    if f["extend_questions"]:
        return (
            f" At the current rates about {f['decisions_needed']:,} more decisions{opinions} reach ±{target:g} pp, "
            f"beyond this plan's sample: extend it by about {f['extend_questions']} question(s) per model "
            "(plan-extend), then keep adjudicating."
        )
    return (
        f" At the current rates about {f['decisions_needed']:,} more decisions{opinions} reach it — keep adjudicating."
    )


def _finishing(f: dict) -> str:
    if f["finish_half_width"] is None or not f["tasks_left"] + f["opinions_owed"]:
        return ""
    return f"; finishing this plan ({f['tasks_left']:,} task(s) left) gives about ±{f['finish_half_width']:.1f} pp"


def _verdict_message(est: PlanEstimate, t: dict, hw: dict, f: dict, reached: bool, unaudited: list) -> str:
    known = [v for v in hw.values() if v is not None]
    worst = max(known) if known else None
    metric, target = t["metric"].upper(), t["half_width"]
    closed = closure_of(est.design.to_stored())
    if closed is not None:
        missing = [m for m, v in hw.items() if v is None]
        where = (
            f"no {metric} measurement interval for {', '.join(missing)}"
            if missing
            else f"the largest {metric} measurement half-width is ±{worst:.2f} pp"
        )
        why = closed.get("reason") or "no reason given"
        return (
            f"Closed on {str(closed.get('at', ''))[:10]} by {closed.get('by', '?')} ({why}): "
            f"{int(closed.get('withdrawn', 0))} open task(s) were withdrawn and the estimate is final for the sample "
            f"reached — {where}, the target ±{target:g} pp" + (" (reached)." if reached else " (not reached).")
        )
    if reached and est.estimate.provisional:  # never "you may stop" while the estimate is provisional
        return (
            f"In progress: every model's {metric} measurement half-width is within the target ±{target:g} pp so far "
            f"(largest ±{worst:.2f} pp), but {f['tasks_left']} task(s) and {f['opinions_owed']} opinion(s) the plan "
            "asks for are still to come — finish them, or close the plan where it stands."
        )
    if reached:
        return (
            f"Precise enough: every model's {metric} measurement half-width is within the target ±{target:g} pp "
            f"(largest ±{worst:.2f} pp) — you may stop adjudicating this plan."
        )
    ahead = _way_forward_text(f, t["metric"], target)
    if worst is None or len(known) < len(hw):
        missing = ", ".join(m for m, v in hw.items() if v is None)
        return (
            f"Not yet: no fully adjudicated question yet for {missing}, so no {metric} measurement interval "
            f"(target ±{target:g} pp)." + ahead.replace("At the current rates", "By the planner's assumptions")
        )
    if unaudited:
        return (
            f"Not yet: no audited agreement decided yet for {', '.join(unaudited)}, so errors of both judges are "
            f"not measured (target ±{target:g} pp)." + ahead
        )
    return (
        f"Not yet: the largest {metric} measurement half-width is ±{worst:.2f} pp, the target ±{target:g} pp." + ahead
    )


def verdict(est: PlanEstimate) -> dict:
    """Whether every model's measurement half-width of the target metric is within the plan's
    target, and the way forward: ``{metric, half_width, target_source, reached, provisional, models:
    {model: half-width}, tasks_left, opinions_owed, decisions_needed, extend_questions, reachable,
    best_half_width, forward: {model: …}, closed, basis, message}``.

    Read it on the run with the adjudicator-error refits (:func:`verdict_run`, or an estimate made
    with intervals): its half-widths are Table 2's, so the Scores page, the Sampling page and
    ``score --json`` show one number (:data:`VERDICT_BASIS`). ``decisions_needed`` counts the
    opinions still owed (``opinions_owed``); ``reached`` is never true while the estimate is
    provisional, and a closed plan's message says when, by whom and why it was closed (nothing is
    then owed: ``decisions_needed`` is None, ``forward`` still gives the best reachable half-width)."""
    t = target_of(est.design.to_stored())
    hw = _half_widths(est, t["metric"])
    known = [v for v in hw.values() if v is not None]
    p = est.progress
    unaudited = p.loc[(p["audits_planned"] > 0) & (p["audits_decided"] == 0), "model"].astype(str).tolist()
    precise = bool(known) and len(known) == len(hw) and max(known) <= t["half_width"] and not unaudited
    f = _forward_summary(est, t["half_width"])
    closed = closure_of(est.design.to_stored())
    if closed is not None:  # nothing is owed to a closed plan: its forward table only informs a next plan
        f = {**f, "tasks_left": 0, "opinions_owed": 0, "decisions_needed": None, "extend_questions": None}
    msg = _verdict_message(est, t, hw, f, precise, unaudited)
    return {
        "metric": t["metric"],
        "half_width": t["half_width"],
        "target_source": t["source"],
        "reached": precise and not est.estimate.provisional,
        "provisional": bool(est.estimate.provisional),
        "models": hw,
        **f,
        "closed": closed,
        "basis": VERDICT_BASIS,
        "message": msg,
    }


def verdict_run(rows: pd.DataFrame, plan: dict, inputs: PlanInputs, *, index=None, seed: int = 0) -> PlanEstimate:
    """The estimate the verdict reads when none with intervals is at hand: the default estimator
    with the adjudicator-error refits, exactly as the Scores page's intervals run it
    (:data:`DEFAULT_REPS` replicates, ``seed``), so its half-widths are Table 2's."""
    return cluster_estimate(rows, plan, inputs, intervals=True, reps=DEFAULT_REPS, seed=seed, index=index)


def other_plan_decisions(engine: Engine, plan: dict) -> int:
    """Current decisions (not superseded, not retracted) of the pair's *other* plans (the
    estimator uses its own plan's only): counted by the database."""
    with engine.connect() as conn:
        return repo.current_decision_count(
            conn, judge_a_id=int(plan["judge_a_id"]), judge_b_id=int(plan["judge_b_id"]), except_plan=int(plan["id"])
        )


def raw_intervals(instances: pd.DataFrame, *, reps: int = DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """One judge's raw labels: no measurement interval (its labels are taken as given, nothing
    is estimated), a population interval from the question bootstrap."""
    from reform_core.metrics.intervals import bootstrap_intervals

    ci = bootstrap_intervals(instances, n_boot=int(reps), rng=np.random.default_rng(int(seed)), condition=None)
    return pd.DataFrame(
        {
            "model": ci["model"],
            "metric": ci["metric"],
            "estimate": ci["estimate"],
            "measurement_lo": np.nan,
            "measurement_hi": np.nan,
            "population_lo": ci["ci_low"],
            "population_hi": ci["ci_high"],
        }
    )


def estimate_json(est: PlanEstimate, doc: dict, verdict_est: Optional[PlanEstimate] = None) -> None:
    """Add the default estimator's facts to a ``score --json`` document: per model
    ``both_wrong`` (the audit's both-judges-wrong rate among agreements, %, with its 95 %
    interval) and ``progress``; top level ``plan``, ``annotators`` (estimated accuracy)
    and ``verdict`` (:func:`verdict` on ``verdict_est``, the run with the adjudicator-error
    refits; default ``est``)."""
    from reform_core.services.scoring.numbers import json_number

    if est.design is None:  # an estimator without a plan: none of the plan's reports
        return
    bw = est.both_wrong.set_index("model")
    pr = est.progress.set_index("model")
    for m, out in doc["models"].items():
        if m in bw.index:
            r = bw.loc[m]
            # the debiased rate can dip below 0 when the audit found no error: reported at 0 (its range)
            out["both_wrong"] = {
                "rate": json_number(max(r["both_wrong"], 0.0) if pd.notna(r["both_wrong"]) else None),
                "interval": [json_number(r["lo"]), json_number(r["hi"])],
                "audited": int(r["audited"]),
                "agreements": int(r["agreements"]),
            }
        if m in pr.index:
            out["progress"] = {k: int(v) for k, v in pr.loc[m].items()}
    doc["plan"] = est.plan
    doc["annotators"] = [
        {
            "annotator": str(r.annotator),
            "accuracy": json_number(100 * r.accuracy),
            "sensitivity": json_number(100 * r.sensitivity),
            "specificity": json_number(100 * r.specificity),
            "decisions": int(r.decisions),
            "double_items": int(r.double_items),
        }
        for r in est.annotators.itertuples(index=False)
    ]
    doc["verdict"] = verdict(verdict_est if verdict_est is not None else est)


def estimator_label(result) -> str:
    """One line naming the estimator of a :class:`~reform_core.services.scoring.scoring.ScoreResult`."""
    if result.estimate is not None:
        return base.get(ESTIMATOR).label.replace("(default)", f"(default; plan '{result.estimate.plan}')")
    if result.method in base.names():
        return base.get(result.method).label
    return f"raw labels of judge {result.method.removeprefix('judge:')} (no calibration)"


def interval_method(result) -> str:
    """How the intervals of a result's method are computed (one sentence)."""
    name = ESTIMATOR if result.estimate is not None else result.method
    if name in base.names():
        return base.get(name).interval_method
    return "A raw judge's labels are taken as given: no measurement interval; population: cluster bootstrap over questions."


@dataclass(frozen=True)
class PlanPrecision:
    """Where a question-cluster plan stands against its target (Sampling page)."""

    verdict: dict
    progress: pd.DataFrame  # per model: questions sampled / fully decided, tasks, opinions owed, audits, half-width


PROGRESS_COLUMNS = [
    "model",
    "clusters_sampled",
    "clusters_observed",
    "tasks_planned",
    "tasks_decided",
    "awaiting_opinion",
    "audits_planned",
    "audits_decided",
]


def precision_of(est: PlanEstimate) -> PlanPrecision:
    """The verdict and the per-model progress of an estimate (with intervals: :func:`verdict_run`)."""
    v = verdict(est)
    prog = est.progress[PROGRESS_COLUMNS].copy()
    prog[f"{v['metric']} half-width (pp)"] = prog["model"].map(v["models"])
    prog["decisions still needed"] = prog["model"].map(
        lambda m: (v["forward"].get(str(m)) or {}).get("decisions_needed")
    )
    return PlanPrecision(verdict=v, progress=prog)


def plan_precision(engine: Engine, principal, plan_id: int) -> Optional[PlanPrecision]:
    """The plan's measurement half-widths so far and the verdict against its target (None for a
    plan that is not a question-cluster design). Scores the main condition as ``score`` does
    (an instruction with a constraint either judge did not label is left out) and reads the
    verdict on the run with the adjudicator-error refits (:func:`verdict_run`), so the half-widths
    are the Scores page's and ``score --json``'s."""
    from reform_core.services.accounts.auth import require
    from reform_core.services.data.instances import load_instances

    require(principal, "plan_sampling")
    with engine.connect() as conn:
        plan = repo.plan_row(conn, plan_id=plan_id)
    if plan is None:
        raise ValueError(f"no sample plan with id {plan_id}")
    if not is_cluster_plan(plan["params"]):
        return None
    inst = load_instances(engine, plan["judge_a"], plan["judge_b"])
    inst["label_a"], inst["label_b"] = inst[inst.attrs["judge_a"]], inst[inst.attrs["judge_b"]]
    main = inst[inst["condition"] == "main"]
    missing = (
        (main["label_a"].isna() | main["label_b"].isna()).groupby([main["model"], main["instruction"]]).transform("any")
    )
    main = main[~missing.to_numpy()]
    return precision_of(verdict_run(main, plan, plan_inputs(engine, plan, inst)))

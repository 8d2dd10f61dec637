"""Scores: Table 2 from the default estimator (or a paper rule / a raw judge) with its
measurement and population intervals, the planner's verdict, the audit's both-wrong rates
and the annotators' estimated accuracy (leads); the appendix tables, the task × model heatmap and
failing units per cell (docs/metrics.md#reporting-tables; the ReFormBench paper's Figure 3, Tables 2, 3, A2, A3, A5–A8); IFEval's
accuracies for IFEval projects. Every number that is missing says why (docs/metrics.md#missing-data)."""

from urllib.parse import urlencode

import altair as alt
import streamlit as st

from pages.components import analyses_view, errors, render
from pages.components import plans as plans_view
from pages.components.session import leave_if_signed_out, require_page
from reform_core.services.project import explore
from reform_core.services.scoring.estimates import (
    MEASUREMENT_TEXT,
    POPULATION_TEXT,
    estimator_label,
    interval_method,
    verdict,
)
from reform_core.services.scoring.scoring import ScoringError

principal = require_page("view_scores")
st.title("Scores")

engine = render.state.engine()
pair = explore.pair(engine, principal)
judges = explore.judges(engine, principal)
CALIBRATED = {
    "Default estimator — question-cluster (main results)": ("cluster", None),
    "Paper — stratified (the paper's main results)": ("stratified", None),
    "Paper — pooled (auxiliary)": ("pooled", None),
}
options = {**(CALIBRATED if pair.pair else {}), **{f"Raw — judge {render.md(j)}": ("stratified", j) for j in judges}}
if pair.pair:
    st.caption(f"Scoring pair: {render.md(pair.describe())}.")
elif judges:
    st.warning(f"No calibrated scores: {render.md(pair.message)}.")
if not options:
    st.info(f"Nothing to score yet: {render.md(pair.message)}")
    st.stop()
choice = st.radio(
    "Labels",
    list(options),
    horizontal=True,
    key="scores_labels",
    help="Default: the question-cluster estimator over the pair's default plan (unbiased under "
    "correlated variants, audited agreements, fallible adjudicators). Paper: the paper's rules, "
    "kept for reproduction. Raw: one judge's labels.",
)
calibration, judge = options[choice]

try:
    result = render.score_result(principal, calibration=calibration, judge=judge)
except ScoringError as exc:
    st.info(f"Nothing to score yet: {render.md(exc)}")
    st.stop()
tables = result.tables
emcr_applies = "emcr" in result.metrics
for line in result.messages[1:] if result.pair else result.messages:
    st.caption(render.md(line))

if result.provisional and result.estimate is not None and result.estimate.design is not None:
    st.warning(plans_view.in_progress_text(result.estimate.progress))  # the default estimator, part-way
elif result.provisional:
    n = int(result.rates["provisional"].sum()) if result.rates is not None else 0
    st.warning(
        f"Provisional: {n} disagreement strata have no reviewed instance yet; they use the model's "
        "pooled estimate (0.5 before any adjudication). Adjudicate more to firm these scores up."
    )
if result.other_pair_decisions:
    st.info(
        f"{result.other_pair_decisions:,} adjudication decision(s) belong to plans over other judge pairs and "
        "are not used by these scores (a plan's decisions count only for its own pair)."
    )
small = result.models[result.models["share_scored"] < render.SMALL_SHARE]
for r in small.itertuples(index=False):
    st.warning(
        f"Table 2 for {render.md(r.model)} rests on {r.scored} of {r.answered} answered instructions "
        f"({100 * r.share_scored:.0f} %): the others lack a label for some constraint."
    )

st.subheader("Table 2 — TCPR, EMCR and R¹–R³ (%)" if emcr_applies else "Table 2 — TCPR (%)")
st.markdown(f"**Estimator:** {render.md(estimator_label(result))}")
_ivl = render.intervals(principal, calibration=calibration, judge=judge, start=False)  # started at the page's end
_ivl_fresh = _ivl.fresh  # what the Table 2 fragment compares with (``_ivl`` itself is dropped at the page's end)


_aux_rule = "pooled" if judge else st.session_state.get("scores_aux_rule", "pooled")  # as appendix() picks it
_aux_busy = analyses_view.analyses_updating(_aux_rule, judge)


@st.fragment(run_every=None if _ivl_fresh and not _aux_busy else 2)
@errors.guard
def table2() -> None:
    """Table 2 with its intervals; while they are recomputed in the background (after a new
    decision) the points are current and the last intervals are shown, marked as updating.
    Polls while the intervals or the auxiliary analyses are being recomputed."""
    leave_if_signed_out()  # revoked meanwhile: polling must not keep showing the page
    ivl = render.intervals(principal, calibration=calibration, judge=judge, start=False)
    busy = analyses_view.analyses_updating(_aux_rule, judge)
    if ivl.fresh != _ivl_fresh or busy != _aux_busy:
        st.rerun()  # the intervals / analyses are in: redraw once without polling
    if ivl.error:
        st.warning(f"No intervals: {render.md(ivl.error)}")
    if not ivl.fresh:
        st.caption(
            "⏳ Intervals updating: the scores below include every decision; the intervals shown are "
            "from an earlier state and are being recomputed."
            if ivl.frame is not None
            else "⏳ Intervals updating: the measurement and population intervals are being computed."
        )
    scored = render.score_result(principal, calibration=calibration, judge=judge)
    t2, described = scored.tables["table2"], scored.descriptions
    shown = render.table2_table(t2, ivl.frame, emcr=emcr_applies, kinds=("measurement",))
    st.markdown("**Rates with their measurement intervals** (95 %, *meas.*) and denominators (*n*)")
    st.dataframe(render.styled(shown), hide_index=True, column_config=render.table2_columns(shown.frame, described))
    if ivl.frame is not None:
        st.markdown("**The same rates with their population intervals** (95 %; they add the questions' own sampling)")
        pop = render.population_display(t2, ivl.frame, emcr=emcr_applies)
        st.dataframe(render.styled(pop), hide_index=True, column_config=render.table2_columns(pop.frame, described))
    st.caption(
        "Each rate is shown to the places its interval supports (one significant digit of the half-width); "
        f"a rate over fewer than {render.display.MIN_UNITS} units, or with an interval wider than "
        f"{render.display.MAX_WIDTH_PP:g} pp, is greyed and says *too few* instead (docs/display.md)."
    )


table2()
st.markdown("  \n".join(render.metric_definitions(result.descriptions)))
st.caption("**Measurement** — " + MEASUREMENT_TEXT.split(": ", 1)[1])
st.caption("**Population** — " + POPULATION_TEXT.split(": ", 1)[1])
st.caption(
    interval_method(result)
    + " Counts: instructions (TCPR)"
    + (", eligible units (EMCR, R¹–R³)." if emcr_applies else ".")
)
# the estimate behind the intervals carries the adjudicator-error term; until it is in, the scored one
_held = _ivl.frame.attrs.get("estimate") if _ivl.frame is not None else None
_with_ivl = getattr(_held, "value", None)  # the run the verdict reads (Table 2's intervals), possibly from before
est = (_with_ivl if _ivl.fresh else None) or result.estimate
if est is not None and est.design is not None:  # the plan-based estimator's verdict and reports
    if _with_ivl is not None and _with_ivl.design is not None:
        v = verdict(_with_ivl)
        note = "" if _ivl.fresh else " (from the intervals shown above, being updated)"
        (st.success if v["reached"] else st.warning)(f"Planner's verdict{note} — {render.md(v['message'])}")
    else:
        st.caption("⏳ Planner's verdict: computed with the intervals (adjudicator-error term included), in a moment.")
    st.markdown(
        "**Agreement audit — both judges wrong** (share of each model's agreements, debiased for "
        "adjudicator error; these errors are corrected in the scores above)"
    )
    st.dataframe(render.both_wrong_display(est.both_wrong), hide_index=True)
    if principal.can("plan_sampling"):
        st.markdown(
            "**Annotators' estimated accuracy** (%, latent-class model over the double-adjudicated items; "
            "the scores correct for it)"
        )
        if est.annotators.empty:
            st.info(
                "No item was decided by two annotators yet: adjudicator error cannot be estimated and is assumed zero."
            )
        else:
            st.dataframe(render.annotators_display(est.annotators), hide_index=True)
notes = render.model_notes(result)
if notes:
    st.info("What the numbers leave out, and why a number is missing:\n\n" + "\n".join(f"- {n}" for n in notes))
if {"strict", "loose", "prompt_level"} & set(result.metrics):
    st.subheader("IFEval accuracy (%)")
    st.dataframe(render.ifeval_display(result, _ivl.frame), hide_index=True)  # updated with Table 2 (its rerun)
    st.caption(
        "Calibrated: from the scoring pair's labels and the adjudications (prompt level = TCPR, instruction "
        "level = mean pass over constraints). Strict / loose: the catalog's verifiers as the rules judge "
        "in that mode (IFEval's official rules)."
    )
rank = render.rank_notes(tables["ranks"]) if emcr_applies else []
if rank:
    st.info("TCPR and EMCR order these models differently:\n\n" + "\n".join(f"- {n}" for n in rank))

st.subheader("Task × model (Figure 3)")
task = tables["a6_a7"]
cells = task[~task["pooled"]] if "pooled" in task.columns else task[task["task_type"] != "overall"]
model_order = tables["table2"].sort_values("emcr" if emcr_applies else "tcpr", ascending=False)["model"].tolist()
task_order = sorted(cells["task_type"].unique())
for metric in ("tcpr", "emcr") if emcr_applies else ("tcpr",):
    sel = alt.selection_point(name="cell", fields=["model", "task_type"], on="click")
    event = st.altair_chart(
        render.heatmap(cells, metric, model_order=model_order, task_order=task_order, selection=sel),
        on_select="rerun",
        key=f"scores_heat_{metric}",
    )
    picked = (event.selection.get("cell") or []) if event else []
    if picked and {"model", "task_type"} <= set(picked[0]) and picked != st.session_state.get(f"scores_last_{metric}"):
        st.session_state[f"scores_last_{metric}"] = picked  # apply a click once; the selectboxes stay usable
        st.session_state["scores_cell_model"] = picked[0]["model"]
        st.session_state["scores_cell_task"] = picked[0]["task_type"]

if emcr_applies:
    st.markdown("**Failing units of one cell** — click a cell above or pick it here.")
    c1, c2 = st.columns(2)
    cell_model = c1.selectbox("Model", model_order, key="scores_cell_model")
    cell_task = c2.selectbox("Task type", task_order, key="scores_cell_task")
    cell = cells[(cells["model"] == cell_model) & (cells["task_type"] == cell_task)]
    n_units = int(cell[["n1", "n2", "n3"]].to_numpy().sum()) if len(cell) else 0
    try:
        units = explore.failing_units(principal, result, model=cell_model, task_type=cell_task)
    except ValueError as exc:
        units = None
        st.info(f"No units for {render.md(cell_model)} × {render.md(cell_task)}: {render.md(exc)}.")
    if units is not None and n_units == 0:
        st.info(
            f"{render.md(cell_model)} has no eligible unit in {render.md(cell_task)}: no baseline-opposed target of these questions "
            "recurs across variants (or their baseline annotation is missing), so there is nothing to correct "
            "and no correction rate."
        )
    elif units is not None and units.empty:
        st.success(
            f"{render.md(cell_model)} corrects every one of its {n_units} eligible units of {render.md(cell_task)} (Ĵ = 100 %)."
        )
    elif units is not None:
        units["open"] = [
            "explore?"
            + urlencode({**explore.Filters(model=cell_model).to_params(), "model": cell_model, "question": q})
            for q in units["question"]
        ]
        st.dataframe(
            units,
            hide_index=True,
            column_config={
                "j_hat": st.column_config.NumberColumn("Ĵ %", format="%.1f"),
                "open": st.column_config.LinkColumn("explorer", display_text="open example"),
            },
        )
    st.page_link(
        "pages/explore.py",
        label=f"Open {render.md(cell_model)} × {render.md(cell_task)} baseline-opposed targets in the explorer",
        icon="🔎",
        query_params=explore.Filters(model=cell_model, task=cell_task, opposed="opposed").to_params(),
    )

st.subheader("Appendix tables")
aux_rule = analyses_view.appendix(principal, result, tables, emcr_applies=emcr_applies, judge=judge)
# the stale intervals' and analyses' recomputations start now that the page is drawn (they would
# otherwise compete with this rerun for the two cores and the GIL); the Table 2 fragment polls
# until they are in and then redraws the page once
render.start_intervals(principal, calibration=calibration, judge=judge)
analyses_view.start_pending(aux_rule, judge)
# This script's namespace is a reference cycle (the functions defined above hold it as their globals), freed only
# by Python's occasional full garbage collection: drop its references to the scored state now, so that a state the
# cache has replaced is freed at once (issue 16: at 10× every rerun kept ~120 MB until a collection ran).
del result, tables, est, _held, _ivl, _with_ivl

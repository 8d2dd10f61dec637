"""What the Sampling and Scores pages show of a plan: its precision against its target (the
planner's verdict, read on the same run as Table 2's intervals), its progress, and the lead's
controls to stop or extend it."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import data_version, intervals, md, md_lines, tidy
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.scoring import estimates
from reform_core.services.scoring.scoring import ScoringError


@st.cache_data(ttl=600, max_entries=4, show_spinner="Estimating the plan's precision…")
def _plan_precision(version: tuple, _principal: Principal, plan_id: int) -> Optional[estimates.PlanPrecision]:
    return estimates.plan_precision(state.engine(), _principal, plan_id)


def _held_estimate(principal: Principal, plan_id: int):
    """The Scores page's estimate with intervals when ``plan_id`` is the scoring pair's plan and
    its intervals are fresh (the very same run), else None."""
    from reform_core.services.adjudication.adjudication import default_pair

    pair = default_pair(state.engine())
    plan = estimates.design_plan(state.engine(), *pair) if pair else None
    if plan is None or int(plan["id"]) != int(plan_id):
        return None
    try:
        ivl = intervals(principal, calibration="cluster", start=True)
    except ScoringError:
        return None
    held = ivl.frame.attrs.get("estimate") if ivl.fresh and ivl.frame is not None else None
    est = getattr(held, "value", None)
    return est if est is not None and est.design is not None and est.forward is not None else None


def plan_precision(principal: Principal, plan_id: int) -> Optional[estimates.PlanPrecision]:
    """The plan's precision and verdict (None for a plan that is not a question-cluster design):
    the Scores page's run when the plan is the scoring pair's, else the same computation cached
    per data version."""
    require(principal, "plan_sampling")
    est = _held_estimate(principal, plan_id)
    if est is not None:
        return estimates.precision_of(est)
    return _plan_precision(data_version(), principal, plan_id)


def in_progress_text(progress: pd.DataFrame) -> str:
    """ "In progress" with the counts per model: tasks decided / planned, items awaiting another
    opinion (model names are untrusted: escaped)."""
    lines = [
        f"- {md(r.model)}: {int(r.tasks_decided):,} of {int(r.tasks_planned):,} tasks decided, "
        f"{int(r.awaiting_opinion):,} item(s) awaiting another opinion"
        for r in progress.itertuples(index=False)
    ]
    return (
        "In progress — the estimate is provisional until every task the plan asks for is decided (or the plan is "
        "closed where it stands):\n\n" + "\n".join(lines)
    )


def closure_text(closed: dict) -> str:
    """The closure of a plan, for people (its reason is untrusted text: escaped)."""
    return (
        f"Closed on {md(str(closed.get('at', ''))[:10])} by {md(closed.get('by', '?'))}: "
        f"{md(closed.get('reason') or 'no reason given')} — {int(closed.get('withdrawn', 0)):,} open task(s) "
        "withdrawn; the estimate is final for the sample reached."
    )


def _flash(message: str) -> None:
    st.session_state["plan_flash"] = message
    state.clear_data_caches()
    st.rerun()


def stop_or_extend(principal: Principal, name: str, params: dict) -> None:
    """A lead's controls: close the plan where it stands, or extend it (question-cluster plans)."""
    from reform_core.services.adjudication import plan_lifecycle as L

    closed = estimates.closure_of(params)
    if closed is not None:
        st.info(closure_text(closed))
        return
    with st.expander("Stop here, or extend this plan"):
        with st.form("plan_close"):
            reason = st.text_input(
                "Why stop here (recorded with the plan and in the export's manifest)",
                key="plan_close_reason",
                max_chars=L.MAX_REASON,
            )
            sure = st.checkbox("Withdraw the plan's remaining open tasks", key="plan_close_sure")
            if st.form_submit_button("Close the plan"):
                if not sure:
                    st.warning("Tick the box to confirm: closing withdraws the remaining open tasks.")
                else:
                    try:
                        done = L.close_plan(state.engine(), principal, name, reason=reason)
                        _flash(f"Plan closed: {done.withdrawn:,} open task(s) withdrawn.")
                    except ValueError as exc:
                        st.error(md_lines(exc))
        if estimates.is_cluster_plan(params):
            with st.form("plan_extend"):
                n = st.number_input(
                    "More questions per model (expected)", 1, 1_000_000, 5, step=1, key="plan_extend_questions"
                )
                if st.form_submit_button("Extend the plan"):
                    try:
                        grown = L.extend_plan(state.engine(), principal, name, questions=int(n))
                        _flash(f"Plan extended: {grown.tasks:,} task(s) added behind the others.")
                    except ValueError as exc:
                        st.error(md_lines(exc))


def show_precision(got: estimates.PlanPrecision) -> None:
    """The verdict and the per-model progress table."""
    v = got.verdict
    (st.success if v["reached"] else st.warning)(md(v["message"]))  # model names and reasons are untrusted
    st.dataframe(tidy(got.progress, decimals=2), hide_index=True)
    st.caption(
        "Questions sampled / fully decided, tasks decided / planned, items awaiting another opinion, audits "
        "planned / decided, the measurement half-width so far and the decisions still needed for the target "
        "at the rates measured so far (refreshed every 30 s; the same run as the Scores page's intervals, "
        "adjudicator-error term included)."
    )

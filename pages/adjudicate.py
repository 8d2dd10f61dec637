"""Adjudication: compare two blinded judgments of one (response, constraint) and pick the
better-supported one. Keyboard: A / B choose a judge, N = neither (needs a note),
S = skip, U = undo my last decision."""

import time

import streamlit as st

from pages.components import state
from pages.components.render import show_markdown, show_raw
from pages.components.session import require_page
from reform_core.config import get_settings
from reform_core.services import adjudication as S
from reform_core.services.auth import AccessDenied

principal = require_page("adjudicate")
engine = state.engine()
ss = st.session_state
ss.setdefault("adj_started", {})  # task id -> monotonic time the item was first shown
ss.setdefault("adj_flash", "")

try:
    plans = S.list_plans(engine, principal)
except AccessDenied as exc:
    st.error(str(exc))
    st.stop()
plans = plans[plans["active"].astype(bool)]
# Plans with work left first, newest first: the default is where an annotator is needed.
plans = plans.assign(_finished=plans["done"] >= plans["tasks"]).sort_values(["_finished", "id"], ascending=[True, False])
st.title("Adjudicate")
if plans.empty:
    st.info("No sample plan yet: a lead creates one on the Sampling page.")
    st.stop()
names = dict(zip(plans["id"], plans["name"]))
plan_id = st.selectbox("Sample plan", list(names), format_func=lambda i: f"{names[i]}", key="adj_plan")


@st.fragment(run_every="30s")
def progress() -> None:
    """The plan's progress per stratum and my pace (refreshes on its own)."""
    pr = S.my_progress(engine, principal, plan_id)
    c = st.columns(3)
    c[0].metric("My decisions", f"{pr.decided:,}")
    c[1].metric("Items / hour", "–" if pr.items_per_hour != pr.items_per_hour else f"{pr.items_per_hour:.0f}")
    c[2].metric("Median seconds / item", "–" if pr.median_seconds != pr.median_seconds else f"{pr.median_seconds:.0f}")
    if len(pr.strata):
        table = pr.strata.assign(progress=pr.strata["done"] / pr.strata["tasks"])
        st.dataframe(table, hide_index=True, column_config={
            "progress": st.column_config.ProgressColumn("progress", format="percent", min_value=0, max_value=1)})


def _decide(task_id: int, choice: str, note: str = "") -> None:
    started = ss["adj_started"].pop(task_id, time.monotonic())
    try:
        S.decide(engine, principal, task_id, choice, note=note, seconds=time.monotonic() - started)
        ss["adj_flash"] = ""
        ss["adj_saved"] = True
    except S.AdjudicationRefused as exc:
        ss["adj_flash"] = str(exc)
    except ValueError as exc:
        ss["adj_flash"] = str(exc)
        ss["adj_started"][task_id] = started


item = S.claim_next(engine, principal, plan_id, lease_seconds=get_settings().lease_seconds)
if ss["adj_flash"]:
    st.warning(ss["adj_flash"])
if ss.pop("adj_saved", False):
    st.toast("Saved", icon=":material/check:")
    st.caption(":material/check: Saved — your last decision is stored.")
if item is None:
    st.success("Nothing left for you in this plan. Thank you!")
    if st.button("Undo my last decision", shortcut="u"):
        S.undo_last(engine, principal, plan_id)
        st.rerun()
    with st.expander("Progress", expanded=True):
        progress()
    st.stop()
ss["adj_started"].setdefault(item.task_id, time.monotonic())

st.subheader("Instruction")
show_markdown(item.instruction)

c = item.constraint
st.subheader("Constraint under review")
with st.container(border=True):
    st.markdown(f"**{c['mode']}** · {c['feature_name']} (#{c['position']})")
    show_markdown(c["text"])
    st.markdown("**Acceptance criteria:**")
    show_markdown(c["acceptance"])
if item.other_constraints:
    with st.expander("The other constraints of this instruction"):
        for o in item.other_constraints:
            st.markdown(f"**#{o['position']} {o['mode']} · {o['feature_name']}**")
            show_markdown(f"{o['text']}\n\n*Acceptance:* {o['acceptance']}")

st.subheader("Response")
rendered, raw = st.tabs(["Rendered", "Raw (line numbers)"])
with rendered:
    show_markdown(item.response)  # inert: raw HTML escaped, links and images not live
with raw:
    show_raw(item.response)

st.subheader("Judgments")
left, right = st.columns(2)
for col, title, j in ((left, "Judge A", item.judge_a), (right, "Judge B", item.judge_b)):
    with col.container(border=True):
        verdict = {1: "✅ pass", 0: "❌ fail"}.get(j.label, "– no label")
        st.markdown(f"**{title}: {verdict}**")
        show_markdown(j.rationale or "*(no rationale)*")

note = st.text_input("Note (required for 'neither / unsure')", key=f"adj_note_{item.task_id}")
b = st.columns(5)
if b[0].button("Judge A is better supported", shortcut="a", type="primary", use_container_width=True):
    _decide(item.task_id, "A", note)
    st.rerun()
if b[1].button("Judge B is better supported", shortcut="b", type="primary", use_container_width=True):
    _decide(item.task_id, "B", note)
    st.rerun()
if b[2].button("Neither / unsure", shortcut="n", use_container_width=True):
    _decide(item.task_id, "neither", note)
    st.rerun()
if b[3].button("Skip", shortcut="s", use_container_width=True):
    ss["adj_started"].pop(item.task_id, None)
    S.skip(engine, principal, item.task_id)
    st.rerun()
if b[4].button("Undo last", shortcut="u", use_container_width=True):
    S.release(engine, principal, item.task_id)
    S.undo_last(engine, principal, plan_id)
    st.rerun()
st.caption("Keys: A / B choose a judge, N neither (with a note), S skip, U undo my last decision. "
           f"This item is reserved for you until {item.lease_until:%H:%M} UTC.")

with st.expander("Progress"):
    progress()

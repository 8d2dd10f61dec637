"""Adjudication: compare two blinded judgments of one (response, constraint) and pick the
better-supported one. Keyboard: A / B choose a judge, N = neither (needs a note),
S = skip, U = undo my last decision.

Every action is a button callback bound to the item it was shown with, so a click can only
ever act on the item on screen (a rerun claims the next item only after the action ran).
The item area is a fragment: a decision reruns it alone, not the whole page."""

import time

import streamlit as st

from pages.components import errors, state
from pages.components.render import md, show_markdown, show_raw
from pages.components.session import leave_if_signed_out, require_page, still_signed_in
from reform_core.config import get_settings
from reform_core.services import adjudication as S
from reform_core.services.auth import AccessDenied

principal = require_page("adjudicate")
engine = state.engine()
ss = st.session_state
ss.setdefault("adj_started", {})  # task id -> monotonic time the item was first shown
LABELS = {"A": "Judge A is better supported", "B": "Judge B is better supported", "neither": "Neither / unsure"}
HEADINGS = 3  # a "#" heading inside untrusted text renders as h4: below the page's own headings

try:
    plans = S.list_plans(engine, principal)
except AccessDenied as exc:
    st.error(md(exc))
    st.stop()
plans = plans[plans["active"].astype(bool)]
# Plans with work left first, newest first: the default is where an annotator is needed.
plans = plans.assign(_finished=plans["done"] >= plans["tasks"]).sort_values(["_finished", "id"], ascending=[True, False])
st.title("Adjudicate")
if plans.empty:
    st.info("No sample plan yet: a lead creates one on the Sampling page.")
    st.stop()
names = dict(zip(plans["id"], plans["name"]))
plan_id = st.selectbox("Sample plan", list(names), format_func=lambda i: str(names[i]), key="adj_plan")


# ----------------------------------------------------------------------------- actions (callbacks)


def _item_no(progress: S.PlanProgress) -> str:
    return f"item {progress.item_no:,} of {progress.needed:,}"


def _decide(task_id: int, shown: tuple, choice: str, item_no: str) -> None:
    if not still_signed_in():  # revoked meanwhile (the fragment's rerun then leaves the page)
        return
    started = ss["adj_started"].pop(task_id, time.monotonic())
    note = ss.get(f"adj_note_{task_id}", "")
    try:
        S.decide(engine, principal, task_id, choice, note=note, seconds=time.monotonic() - started, shown=shown)
    except S.AdjudicationRefused as exc:
        ss["adj_news"] = ("warning", md(exc))
        return
    except ValueError as exc:  # e.g. "neither" without a note: shown next to the button clicked
        ss["adj_started"][task_id] = started
        ss["adj_error"] = (task_id, choice, md(exc))
        return
    ss["adj_news"] = ("success", f"Saved: “{LABELS[choice]}” on {item_no}. A new item is shown below.")


def _skip(task_id: int, item_no: str) -> None:
    if not still_signed_in():
        return
    ss["adj_started"].pop(task_id, None)
    try:
        S.skip(engine, principal, task_id)
    except S.AdjudicationRefused as exc:
        ss["adj_news"] = ("warning", md(exc))
        return
    ss["adj_news"] = ("info", f"Skipped {item_no}: it went to the end of the queue. A new item is shown below.")


def _undo(task_id) -> None:
    """Give the held item back and withdraw my last decision; one message says what happened."""
    if not still_signed_in():
        return
    if task_id is not None:
        try:
            S.release(engine, principal, task_id)
        except S.AdjudicationRefused:
            pass  # the lease moved on meanwhile: nothing of mine to give back
    undone = S.undo_last(engine, principal, plan_id)
    if undone is None:
        ss["adj_news"] = ("warning", "Nothing to undo: you have no decision in this plan.")
    else:
        ss["adj_news"] = ("info", f"Undone: your decision “{LABELS[undone.choice]}” on the item below was "
                                  "withdrawn. Decide it again.")


# ----------------------------------------------------------------------------- the item


def _scroll_to_top(task_id: int) -> None:
    """A new item starts at the top of the page (Streamlit keeps the scroll position). The
    script is a constant (no data in it) and runs in a zero-height component frame of the same
    origin, so every ``st.html`` on the page stays inert."""
    from streamlit.components.v1 import html as component_html

    component_html(f"<script>/* item {task_id} */ for (const el of [window.parent.document.querySelector("
                   "'[data-testid=\"stMain\"]'), window.parent.document.scrollingElement]) "
                   "{ if (el) el.scrollTo({top: 0}); }</script>", height=0)


def _news() -> None:
    kind, text = ss.pop("adj_news", (None, ""))
    if kind:
        getattr(st, kind)(text)


def _error_below(task_id: int, source: str) -> None:
    """The message of an action on this item, right under the button that caused it."""
    err = ss.get("adj_error")
    if err and err[0] == task_id and err[1] == source:
        st.warning(err[2])


@st.fragment
@errors.guard
def workspace() -> None:
    leave_if_signed_out()  # a fragment rerun does not pass through app.py's check
    item = S.claim_next(engine, principal, plan_id, lease_seconds=get_settings().lease_seconds)
    progress = S.plan_progress(engine, principal, plan_id)
    if item is None:
        ss.pop("adj_error", None)
        st.subheader(f"Nothing left for you in this plan ({progress.filled:,} of {progress.needed:,} decisions made)")
        _news()
        st.success("Thank you! Every item is decided or held by another annotator.")
        st.button("Undo my last decision", shortcut="u", on_click=_undo, args=(None,))
        return
    if ss.get("adj_shown") != item.task_id:
        ss["adj_shown"] = item.task_id
        ss.pop("adj_error", None)
        _scroll_to_top(item.task_id)
    ss["adj_started"].setdefault(item.task_id, time.monotonic())
    item_no = _item_no(progress)
    st.header(f"Item {progress.item_no:,} of {progress.needed:,}")
    st.caption(f"You have decided {progress.mine:,} item(s) in this plan. "
               f"This item is reserved for you until {item.lease_until:%H:%M} UTC.")
    _news()

    st.subheader("Instruction")
    show_markdown(item.instruction, heading_offset=HEADINGS)

    c = item.constraint
    st.subheader("Constraint under review")
    with st.container(border=True):
        st.text(f"{c['mode']} · {c['feature_name']} (#{c['position']})")
        show_markdown(c["text"], heading_offset=HEADINGS)
        st.markdown("**Acceptance criteria:**")
        show_markdown(c["acceptance"], heading_offset=HEADINGS)
    if item.other_constraints:
        with st.expander("The other constraints of this instruction"):
            for o in item.other_constraints:
                st.text(f"#{o['position']} {o['mode']} · {o['feature_name']}")
                show_markdown(f"{o['text']}\n\n*Acceptance:* {o['acceptance']}", heading_offset=HEADINGS)

    st.subheader("Response")
    with st.container(border=True, key=f"adj_response_{item.task_id}"):
        rendered, raw = st.tabs(["Rendered", "Raw (line numbers)"])
        with rendered:
            show_markdown(item.response, heading_offset=HEADINGS)  # inert: raw HTML escaped, links not live
        with raw:
            show_raw(item.response)

    st.subheader("Judgments")
    args = (item.task_id, item.shown)
    for col, side, j in zip(st.columns(2), ("A", "B"), (item.judge_a, item.judge_b)):
        with col:
            with st.container(border=True):
                verdict = {1: "✅ pass", 0: "❌ fail"}.get(j.label, "– no label")
                st.markdown(f"**Judge {side}: {verdict}**")
                show_markdown(j.rationale or "*(no rationale)*", heading_offset=HEADINGS)
            st.button(LABELS[side], shortcut=side.lower(), type="primary", use_container_width=True, wrap=True,
                      key=f"adj_{side}", on_click=_decide, args=(*args, side, item_no))
            _error_below(item.task_id, side)

    st.text_input("Note (required for 'neither / unsure')", key=f"adj_note_{item.task_id}")
    cols = st.columns(3)
    with cols[0]:
        st.button(LABELS["neither"], shortcut="n", use_container_width=True, wrap=True, key="adj_neither",
                  on_click=_decide, args=(*args, "neither", item_no))
        _error_below(item.task_id, "neither")
    cols[1].button("Skip", shortcut="s", use_container_width=True, wrap=True, key="adj_skip",
                   on_click=_skip, args=(item.task_id, item_no))
    cols[2].button("Undo my last decision", shortcut="u", use_container_width=True, wrap=True, key="adj_undo",
                   on_click=_undo, args=(item.task_id,))
    st.caption("Keys: A / B choose a judge, N neither (with a note), S skip, U undo my last decision.")


workspace()


@st.fragment(run_every="30s")
@errors.guard
def progress_table() -> None:
    """The plan's progress per stratum and my pace (refreshes on its own)."""
    leave_if_signed_out()  # revoked meanwhile: polling must not keep showing the page
    pr = S.my_progress(engine, principal, plan_id)
    c = st.columns(3)
    c[0].metric("My decisions", f"{pr.decided:,}")
    c[1].metric("Items / hour", "–" if pr.items_per_hour != pr.items_per_hour else f"{pr.items_per_hour:.0f}")
    c[2].metric("Seconds / item (mean)", "–" if pr.mean_seconds != pr.mean_seconds else f"{pr.mean_seconds:.0f}")
    if len(pr.strata):
        table = pr.strata.assign(progress=pr.strata["done"] / pr.strata["tasks"])
        st.dataframe(table, hide_index=True, column_config={
            "progress": st.column_config.ProgressColumn("progress", format="percent", min_value=0, max_value=1)})


with st.expander("Progress"):
    progress_table()

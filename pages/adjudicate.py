"""Adjudication: decide blinded items of a sample plan, by keyboard to the end.

A disagreement asks which of two blinded judgments the response supports better (A / B, or
N "neither / unsure" with a note); an audit asks the annotator's own verdict on a constraint
both judges agreed on (P passes / F fails, with an optional note), without showing the
judges' verdict. S skips, U undoes my last decision. A key that takes a note (N, P, F) puts
the cursor in the note field: Enter saves, Escape leaves without saving.

Every action is a button callback bound to the item it was shown with, so a key or a click
can only ever act on the item on screen (a rerun claims the next item only after the action
ran). The item area is a fragment: a decision reruns it alone, not the whole page."""

import time

import streamlit as st

from pages.components import adjudication_view as view
from pages.components import errors, keys, state
from pages.components.render import md
from pages.components.session import leave_if_signed_out, require_page, still_signed_in
from reform_core.config import get_settings
from reform_core.services.accounts.auth import AccessDenied
from reform_core.services.adjudication import adjudication as S

principal = require_page("adjudicate")
engine = state.engine()
ss = st.session_state
ss.setdefault("adj_started", {})  # task id -> monotonic time the item was first shown
LABELS = {
    "A": "Judge A is better supported",
    "B": "Judge B is better supported",
    "neither": "Neither / unsure",
    "pass": "Passes",
    "fail": "Fails",
}
NOTE_ACTIONS = {
    "neither": "Neither / unsure: why? (required)",
    "pass": "Passes — a note (optional)",
    "fail": "Fails — what is missing or wrong? (optional)",
}

try:
    plans = S.queue_plans(engine, principal)
except AccessDenied as exc:
    st.error(md(exc))
    st.stop()
if plans.empty:
    st.title("Adjudicate")
    st.info(
        "No sample plan to work on yet. A lead draws one on the **Sampling** page; its items then appear "
        "here. Meanwhile, **Rate wordings** may have a wording study for you."
    )
    st.stop()
labels = dict(
    zip(
        plans["id"],
        plans["label"] + " · " + plans["done"].astype(str) + " / " + plans["tasks"].astype(str) + " items done",
    )
)
head, pick = st.columns([1, 3], vertical_alignment="center")
head.subheader("Adjudicate", anchor=False)
plan_id = pick.selectbox(
    "Sample plan", list(labels), format_func=labels.get, key="adj_plan", label_visibility="collapsed"
)


# ----------------------------------------------------------------------------- actions (callbacks)


def _item_no(progress: S.PlanProgress) -> str:
    return f"item {progress.item_no:,} of {progress.needed:,}"


def _decide(task_id: int, shown: tuple, action: str, item_no: str) -> None:
    """Record ``action`` (A / B / neither, or an audit's pass / fail) with the note typed."""
    if not still_signed_in():  # revoked meanwhile (the fragment's rerun then leaves the page)
        return
    started = ss["adj_started"].pop(task_id, time.monotonic())
    note = ss.get(f"adj_note_{task_id}", "")
    record = S.give_verdict if action in S.VERDICTS else S.decide
    try:
        record(engine, principal, task_id, action, note=note, seconds=time.monotonic() - started, shown=shown)
    except S.AdjudicationRefused as exc:
        ss["adj_news"] = ("warning", md(exc))
        ss.pop("adj_noting", None)
        return
    except ValueError as exc:  # e.g. "neither" without a note: shown next to the note field
        ss["adj_started"][task_id] = started
        ss["adj_error"] = (task_id, md(exc))
        return
    ss.pop("adj_noting", None)
    what = f"your verdict “{LABELS[action].lower()}”" if action in S.VERDICTS else f"“{LABELS[action]}”"
    ss["adj_news"] = ("success", f"Saved: {what} on {item_no}. The next item is shown below.")


def _open_note(task_id: int, action: str) -> None:
    ss["adj_noting"] = (task_id, action)
    ss["adj_focus"] = ss.get("adj_focus", 0) + 1
    ss.pop("adj_error", None)


def _close_note(task_id: int) -> None:
    ss.pop("adj_noting", None)
    ss.pop("adj_error", None)
    ss.pop(f"adj_note_{task_id}", None)


def _skip(task_id: int, item_no: str) -> None:
    if not still_signed_in():
        return
    ss["adj_started"].pop(task_id, None)
    ss.pop("adj_noting", None)
    try:
        S.skip(engine, principal, task_id)
    except S.AdjudicationRefused as exc:
        ss["adj_news"] = ("warning", md(exc))
        return
    ss["adj_news"] = ("info", f"Skipped {item_no}: it went to the end of the queue. The next item is shown below.")


def _undo(task_id) -> None:
    """Give the held item back and withdraw my last decision; one message says what happened."""
    if not still_signed_in():
        return
    ss.pop("adj_noting", None)
    if task_id is not None:
        try:
            S.release(engine, principal, task_id)
        except S.AdjudicationRefused:
            pass  # the lease moved on meanwhile: nothing of mine to give back
    undone = S.undo_last(engine, principal, plan_id)
    if undone is None:
        ss["adj_news"] = ("warning", "Nothing to undo: you have no decision in this plan.")
        return
    what = (
        f"your verdict “{LABELS[undone.verdict].lower()}”"
        if undone.verdict
        else f"your decision “{LABELS[undone.choice]}”"
    )
    ss["adj_news"] = ("info", f"Undone: {what} on the item below was withdrawn. Decide it again.")


# ----------------------------------------------------------------------------- the item


NEWS_COLOURS = {"success": "green", "info": "blue"}


def _news() -> None:
    """What the last action did, under the item's heading: one line when it went as asked, a
    warning box when it was refused (``text`` is Markdown built from constants and escaped data)."""
    kind, text = ss.pop("adj_news", (None, ""))
    if kind == "warning":
        st.warning(text)
    elif kind:
        st.markdown(f":{NEWS_COLOURS[kind]}-background[{text}]")


def _decision_bar(item: S.Item, item_no: str) -> None:
    """One row of buttons, each with its key; the note field opens under it."""
    args = (item.task_id, item.shown)
    if item.is_audit:
        buttons = [
            ("✓ " + LABELS["pass"], "p", _open_note, (item.task_id, "pass"), "primary"),
            ("✗ " + LABELS["fail"], "f", _open_note, (item.task_id, "fail"), "primary"),
        ]
    else:
        buttons = [
            (LABELS["A"], "a", _decide, (*args, "A", item_no), "primary"),
            (LABELS["B"], "b", _decide, (*args, "B", item_no), "primary"),
            (LABELS["neither"], "n", _open_note, (item.task_id, "neither"), "secondary"),
        ]
    buttons += [
        ("Skip", "s", _skip, (item.task_id, item_no), "secondary"),
        ("Undo my last decision", "u", _undo, (item.task_id,), "secondary"),
    ]
    for col, (label, key, fn, fn_args, kind) in zip(st.columns(len(buttons)), buttons):
        col.button(
            label,
            shortcut=key,
            type=kind,
            width="stretch",
            wrap=True,
            key=f"adj_btn_{key}_{item.task_id}",
            on_click=fn,
            args=fn_args,
        )
    noting = ss.get("adj_noting")
    if noting and noting[0] == item.task_id:
        _note_form(item, noting[1], item_no)
    elif (err := ss.get("adj_error")) and err[0] == item.task_id:
        st.warning(err[1])
    first = (
        [("P / F", "passes / fails, then a note")]
        if item.is_audit
        else [("A / B", "choose a judge"), ("N", "neither, then a note")]
    )
    keys.legend(
        [*first, ("Enter", "saves with the note"), ("Esc", "leaves the note unsaved"), ("S", "skip"), ("U", "undo")]
    )


def _note_form(item: S.Item, action: str, item_no: str) -> None:
    """The note of a "neither" or a verdict: typed at once (the key put the cursor in it),
    Enter saves the decision with it, Escape closes it without saving."""
    field = f"adj_note_{item.task_id}"
    with st.form(f"adj_note_form_{item.task_id}", border=True, enter_to_submit=True):
        st.text_input(NOTE_ACTIONS[action], key=field)
        save, cancel = st.columns(2)
        save.form_submit_button(
            f"Save “{LABELS[action]}” (Enter)",
            type="primary",
            width="stretch",
            on_click=_decide,
            args=(item.task_id, item.shown, action, item_no),
        )
        cancel.form_submit_button(
            "Leave without saving", shortcut="Escape", width="stretch", on_click=_close_note, args=(item.task_id,)
        )
    if (err := ss.get("adj_error")) and err[0] == item.task_id:
        st.warning(err[1])


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
        st.success(
            "Thank you! Every item is decided or held by another annotator. Next: choose another plan above "
            "if one has items left, or see **Rate wordings**; items held by others come back here if their "
            "lease runs out."
        )
        st.button("Undo my last decision", shortcut="u", on_click=_undo, args=(None,))
        keys.legend([("U", "undo my last decision")])
        return
    new_item = ss.get("adj_shown") != item.task_id
    if new_item:
        ss["adj_shown"] = item.task_id
        ss.pop("adj_error", None)
    ss["adj_started"].setdefault(item.task_id, time.monotonic())
    item_no = _item_no(progress)
    st.subheader(f"Item {progress.item_no:,} of {progress.needed:,}")
    st.caption(
        f"{'Agreement check' if item.is_audit else 'Disagreement'} · you have decided {progress.mine:,} "
        f"item(s) in this plan · reserved for you until {item.lease_until:%H:%M} UTC"
    )
    _news()
    view.asks(item)
    view.constraint(item)
    _decision_bar(item, item_no)
    view.judgments(item)
    view.response_and_instruction(item)
    # the page's scripts last: their frames take no room above the item
    if new_item:
        keys.scroll_to_top(f"item {item.task_id}")
    if (noting := ss.get("adj_noting")) and noting[0] == item.task_id:
        keys.focus_input(f"adj_note_{item.task_id}", ss.get("adj_focus", 0))


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
        st.dataframe(
            table,
            hide_index=True,
            column_config={
                "progress": st.column_config.ProgressColumn("progress", format="percent", min_value=0, max_value=1)
            },
        )


with st.expander("Progress"):
    progress_table()

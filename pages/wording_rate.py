"""Rate wordings: blinded items of a wording study, answers saved as they are given (annotators).

Keyboard to the end: Y / N answer the yes/no question, 1–5 rate the highlighted scale (the
highlight then moves to the next scale), ↑ / ↓ move the highlight, S saves, ← / → go to the
previous / next item, U to the next unanswered one (saving on the way)."""

import streamlit as st

from pages.components import keys, state
from pages.components.render import md, md_lines, tidy
from pages.components.session import require_page
from reform_core.services.studies import wording

YES_NO = ("Yes", "No")
SCALE_KEYS = ("1", "2", "3", "4", "5")

principal = require_page("rate_wording")
eng = state.engine()
st.title("Rate wordings")

studies = wording.list_studies(eng, principal)
if studies.empty:
    st.info(
        "No wording study to rate yet. A lead creates one on the **Wording studies** page; its items then "
        "appear here. Meanwhile, **Adjudicate** may have items for you."
    )
    st.stop()
names = dict(zip(studies["id"], studies["name"]))
sid = int(st.selectbox("Study", list(names), format_func=names.get, key="wording_rate_study"))
queue = wording.annotator_queue(eng, principal, study_id=sid)
total = len(queue)
if total == 0:
    st.info(
        "This study has no items yet. A lead adds them on the **Wording studies** page; choose another study "
        "above meanwhile."
    )
    st.stop()

pos_key = f"wording_rate_pos_{sid}"
if pos_key not in st.session_state:  # resume: open the first unanswered item
    todo = queue.index[~queue["answered"]]
    st.session_state[pos_key] = int(todo[0]) if len(todo) else 0


def _save_item(item_id: int, stored: dict) -> None:
    """One save per item (issue 15 item 17: every click on a scale used to record a save): the
    answers given on screen that differ from the stored ones, in one row."""
    values = {}
    for field in (wording.ANSWER, *wording.RATINGS):
        value = st.session_state.get(f"wording_{field}_{item_id}")
        if field == wording.ANSWER and value is not None:
            value = value == "Yes"
        if value is not None and value != stored.get(field):
            values[field] = value
    if not values:
        return
    try:
        wording.save_rating(eng, principal, item_id=item_id, **values)
    except ValueError as exc:
        st.session_state["wording_rate_error"] = md_lines(exc)


def _stored(row) -> dict:
    out = {}
    for field in (wording.ANSWER, *wording.RATINGS):
        v = row[field]
        out[field] = None if v is None or v != v else (bool(v) if field == wording.ANSWER else int(v))
    return out


def _go(step: int, item_id: int, stored: dict) -> None:
    _save_item(item_id, stored)
    st.session_state[pos_key] = (st.session_state[pos_key] + step) % total


def _save_here(item_id: int, stored: dict) -> None:
    _save_item(item_id, stored)
    st.session_state["wording_rate_saved"] = True


def _next_unanswered(item_id: int, stored: dict) -> None:
    _save_item(item_id, stored)
    fresh = wording.annotator_queue(eng, principal, study_id=sid)
    here = st.session_state[pos_key]
    todo = [i for i in fresh.index[~fresh["answered"]] if i != here]
    after = [i for i in todo if i > here]
    st.session_state[pos_key] = int((after or todo or [min(here + 1, total - 1)])[0])


def _answer(item_id: int, yes: bool) -> None:
    st.session_state[f"wording_{wording.ANSWER}_{item_id}"] = YES_NO[0] if yes else YES_NO[1]


def _scale_key(item_id: int) -> str:
    return f"wording_scale_{item_id}"


def _rate(item_id: int, value: int) -> None:
    """Give the highlighted scale ``value`` and move the highlight to the next scale."""
    at = st.session_state.get(_scale_key(item_id), 0)
    st.session_state[f"wording_{wording.RATINGS[at]}_{item_id}"] = value
    st.session_state[_scale_key(item_id)] = min(at + 1, len(wording.RATINGS) - 1)


def _move(item_id: int, step: int) -> None:
    at = st.session_state.get(_scale_key(item_id), 0) + step
    st.session_state[_scale_key(item_id)] = max(0, min(at, len(wording.RATINGS) - 1))


def _radio_values(item_id: int, stored: dict) -> None:
    """The radios start from the stored answers (set once per showing; the keys then change them)."""
    for field in (wording.ANSWER, *wording.RATINGS):
        v = stored[field]
        shown = (YES_NO[0] if v else YES_NO[1]) if field == wording.ANSWER and v is not None else v
        st.session_state.setdefault(f"wording_{field}_{item_id}", shown)
    unrated = [k for k, f in enumerate(wording.RATINGS) if stored[f] is None]
    st.session_state.setdefault(_scale_key(item_id), unrated[0] if unrated else 0)


def _key_buttons(item_id: int) -> None:
    """The keys' buttons: the answer, the highlighted scale's 1–5 and the highlight's moves."""
    scale = wording.RATINGS[st.session_state[_scale_key(item_id)]]
    st.markdown(f"Keys rate **{scale.capitalize()}** ({wording.RATING_HELP[scale]}); the highlight then moves on.")
    cols = st.columns(11)
    cols[0].button("Yes", shortcut="y", on_click=_answer, args=(item_id, True), key="wording_key_yes", width="stretch")
    cols[1].button("No", shortcut="n", on_click=_answer, args=(item_id, False), key="wording_key_no", width="stretch")
    for col, k in zip(cols[3:8], SCALE_KEYS):
        col.button(k, shortcut=k, on_click=_rate, args=(item_id, int(k)), key=f"wording_key_{k}", width="stretch")
    cols[9].button(
        "↑",
        shortcut="up",
        on_click=_move,
        args=(item_id, -1),
        key="wording_key_up",
        width="stretch",
        help="previous scale",
    )
    cols[10].button(
        "↓",
        shortcut="down",
        on_click=_move,
        args=(item_id, 1),
        key="wording_key_down",
        width="stretch",
        help="next scale",
    )


answered = int(queue["answered"].sum())
st.progress(answered / total, text=f"{answered} / {total} answered")
if answered == total:
    st.success("Every item is answered. You can still revise any item; earlier answers are kept in the history.")
if err := st.session_state.pop("wording_rate_error", None):
    st.error(err)

row = queue.iloc[st.session_state[pos_key]]
item_id = int(row["item_id"])
st.subheader(f"Item {row['position']} of {total}")
keys.legend(
    [
        ("Y / N", "yes / no"),
        ("1–5", "rate the ▶ scale"),
        ("↑ / ↓", "move ▶"),
        ("S", "save"),
        ("← / →", "previous / next item"),
        ("U", "next unanswered"),
    ]
)
st.markdown(f"**Target:** {md(row['target'])}")
st.markdown(f"> {md(row['text'])}")

stored = _stored(row)
_radio_values(item_id, stored)
st.radio(md(row["question"]), YES_NO, index=None, horizontal=True, key=f"wording_{wording.ANSWER}_{item_id}")
for pair in (wording.RATINGS[:2], wording.RATINGS[2:]):  # two per row: a 1–5 scale never wraps its "5"
    for col, field in zip(st.columns(2), pair):
        mark = "▶ " if field == wording.RATINGS[st.session_state[_scale_key(item_id)]] else ""
        col.radio(
            f"{mark}{field.capitalize()}",
            [1, 2, 3, 4, 5],
            index=None,
            horizontal=True,
            help=wording.RATING_HELP[field],
            key=f"wording_{field}_{item_id}",
        )
_key_buttons(item_id)
st.caption(
    "Your answers to an item are saved once, when you save or move to another item; the item counts as "
    "answered when all five are given."
)
if st.session_state.pop("wording_rate_saved", False):
    st.success(f"Saved item {row['position']}.")

args = (item_id, stored)
c1, c2, c3, c4 = st.columns(4)
c1.button("← Previous", on_click=_go, args=(-1, *args), key="wording_prev", width="stretch", shortcut="left")
c2.button("Save", on_click=_save_here, args=args, key="wording_save", width="stretch", shortcut="s")
c3.button("Next →", on_click=_go, args=(1, *args), key="wording_next", width="stretch", shortcut="right")
c4.button(
    "Next unanswered",
    on_click=_next_unanswered,
    args=args,
    key="wording_next_todo",
    width="stretch",
    type="primary",
    shortcut="u",
)

history = wording.rating_history(eng, principal, item_id=item_id)
if len(history) > 1:
    with st.expander(f"History of your answers to this item ({len(history)} saves)"):
        st.dataframe(tidy(history.drop(columns=["id", "supersedes_id"])), hide_index=True)

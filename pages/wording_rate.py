"""Rate wordings: blinded items of a wording study, answers saved as they are given (annotators)."""

import streamlit as st

from pages.components import state
from pages.components.render import md, md_lines
from pages.components.session import require_page
from reform_core.services import wording

RATING_HELP = {
    "clarity": "1 = very unclear … 5 = very clear",
    "naturalness": "1 = very unnatural … 5 = very natural",
    "ambiguity": "1 = not ambiguous … 5 = very ambiguous",
    "complexity": "1 = very simple … 5 = very complex",
}
YES_NO = ("Yes", "No")

principal = require_page("rate_wording")
eng = state.engine()
st.title("Rate wordings")

studies = wording.list_studies(eng, principal)
if studies.empty:
    st.info("No wording study yet. A lead creates one on the study designer page.")
    st.stop()
names = dict(zip(studies["id"], studies["name"]))
sid = int(st.selectbox("Study", list(names), format_func=names.get, key="wording_rate_study"))
queue = wording.annotator_queue(eng, principal, study_id=sid)
total = len(queue)
if total == 0:
    st.info("This study has no items yet.")
    st.stop()

pos_key = f"wording_rate_pos_{sid}"
if pos_key not in st.session_state:  # resume: open the first unanswered item
    todo = queue.index[~queue["answered"]]
    st.session_state[pos_key] = int(todo[0]) if len(todo) else 0


def _go(step: int) -> None:
    st.session_state[pos_key] = (st.session_state[pos_key] + step) % total


def _next_unanswered() -> None:
    fresh = wording.annotator_queue(eng, principal, study_id=sid)
    here = st.session_state[pos_key]
    todo = [i for i in fresh.index[~fresh["answered"]] if i != here]
    after = [i for i in todo if i > here]
    st.session_state[pos_key] = int((after or todo or [min(here + 1, total - 1)])[0])


def _save(item_id: int, field: str) -> None:
    value = st.session_state[f"wording_{field}_{item_id}"]
    if field == wording.ANSWER and value is not None:
        value = value == "Yes"
    try:
        wording.save_rating(eng, principal, item_id=item_id, **{field: value})
    except ValueError as exc:
        st.session_state["wording_rate_error"] = md_lines(exc)


answered = int(queue["answered"].sum())
st.progress(answered / total, text=f"{answered} / {total} answered")
if answered == total:
    st.success("Every item is answered. You can still revise any item; earlier answers are kept in the history.")
if err := st.session_state.pop("wording_rate_error", None):
    st.error(err)

row = queue.iloc[st.session_state[pos_key]]
item_id = int(row["item_id"])
st.subheader(f"Item {row['position']} of {total}")
st.markdown(f"**Target:** {md(row['target'])}")
st.markdown(f"> {md(row['text'])}")

current = row[wording.ANSWER]
st.radio(md(row["question"]), YES_NO, index=None if current is None else (0 if current else 1), horizontal=True,
         key=f"wording_{wording.ANSWER}_{item_id}", on_change=_save, args=(item_id, wording.ANSWER))
cols = st.columns(len(wording.RATINGS))
for col, field in zip(cols, wording.RATINGS):
    v = row[field]
    col.radio(field.capitalize(), [1, 2, 3, 4, 5], index=None if v != v or v is None else int(v) - 1,
              horizontal=True, help=RATING_HELP[field], key=f"wording_{field}_{item_id}",
              on_change=_save, args=(item_id, field))
st.caption("Each answer is saved as soon as you give it; the item counts as answered when all five are given.")

c1, c2, c3 = st.columns(3)
c1.button("← Previous", on_click=_go, args=(-1,), key="wording_prev", width="stretch")
c2.button("Next →", on_click=_go, args=(1,), key="wording_next", width="stretch")
c3.button("Next unanswered", on_click=_next_unanswered, key="wording_next_todo", width="stretch",
          type="primary")

history = wording.rating_history(eng, principal, item_id=item_id)
if len(history) > 1:
    with st.expander(f"History of your answers to this item ({len(history)} saves)"):
        st.dataframe(history.drop(columns=["id", "supersedes_id"]), hide_index=True)

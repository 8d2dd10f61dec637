"""Data: browse questions, their instruction variants and every model's responses."""

import streamlit as st

from pages.components import state
from pages.components.render import md, show_markdown, show_raw
from pages.components.session import require_page
from reform_core.services.data import browse

principal = require_page("view_data")
eng = state.engine()
st.title("Data")

c1, c2 = st.columns([3, 1])
search = c1.text_input("Search questions", key="data_search")
types = [""] + browse.task_types(eng, principal)
task = c2.selectbox("Task type", types, format_func=lambda t: t or "all", key="data_task")
page_size = 50
qs, total = browse.questions(
    eng, principal, search=search, task_type=task, page=st.session_state.get("data_page", 0), page_size=page_size
)
pages = max(1, -(-total // page_size))
page = (
    st.number_input(
        f"Page (of {pages}, {total} questions)", min_value=1, max_value=pages, value=1, key="data_page_input"
    )
    - 1
)
if page != st.session_state.get("data_page", 0):
    st.session_state["data_page"] = page
    qs, total = browse.questions(eng, principal, search=search, task_type=task, page=page, page_size=page_size)

event = st.dataframe(
    qs.drop(columns=["text"]), hide_index=True, on_select="rerun", selection_mode="single-row", key="data_q_table"
)
rows = event.selection.rows if event and event.selection else []
key = qs.iloc[rows[0]]["key"] if rows else st.query_params.get("q", qs.iloc[0]["key"] if len(qs) else None)
if key is None:
    st.info("No questions match.")
    st.stop()

detail = browse.question(eng, principal, key)
if detail is None:
    st.error(f"Unknown question “{md(key)}”.")
    st.stop()
q = detail["question"]
st.subheader(" · ".join(md(q[k]) for k in ("key", "task_type", "domain")))
show_markdown(q["text"])

resp = detail["responses"]
st.markdown("**Baseline responses**")
base = resp[resp["kind"] == "baseline"]
for _, r in base.iterrows():
    with st.expander(f"{md(r['model'])} — baseline"):
        show_raw(r["text"])

ins = detail["instructions"]
for ikey, g in ins.groupby("instruction", sort=True):
    with st.expander(f"{md(ikey)} · {md(g['condition'].iloc[0])}"):
        show_markdown(g["text"].iloc[0])
        st.dataframe(g[["position", "feature", "category", "mode", "constraint_text", "acceptance"]], hide_index=True)
        for _, r in resp[resp["instruction"] == ikey].iterrows():
            st.text(r["model"])
            show_raw(r["text"])

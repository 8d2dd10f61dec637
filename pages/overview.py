"""Project overview: counts, judge agreement, adjudication progress."""

import streamlit as st

from pages.components import render
from pages.components.session import require_page

principal = require_page("view_overview")
ov = render.overview(principal)
st.title(render.md(ov.name))
if ov.demo:
    st.caption("Demo project: a small, realistic benchmark bundled with ReForm so every page has content.")

c = ov.counts
cols = st.columns(4)
cols[0].metric("Questions", f"{c['questions']:,}")
cols[1].metric("Instructions", f"{c['instructions']:,}")
cols[2].metric("Responses", f"{c['responses']:,}")
cols[3].metric("Judgments", f"{c['judgments']:,}")
cols = st.columns(4)
cols[0].metric("Constraints", f"{c['constraints']:,}")
cols[1].metric("Evaluated models", f"{c['models']:,}")
cols[2].metric("Judge disagreements", f"{c['disagreements']:,}")
cols[3].metric("Adjudications", f"{c['adjudications']:,}")

if ov.agreement is not None:  # None for annotators (blinding): no judge or model names with agreement rates
    st.subheader("Judge agreement")
    if ov.agreement.empty:
        st.info("No (response, constraint) pair has labels from two judges yet.")
    else:
        st.dataframe(
            ov.agreement,
            hide_index=True,
            column_config={
                "agreement": st.column_config.ProgressColumn("agreement", format="percent", min_value=0, max_value=1)
            },
        )

st.subheader("Adjudication progress")
if ov.progress.empty:
    st.info("No sample plan yet.")
else:
    st.dataframe(ov.progress, hide_index=True)

st.subheader("Questions by task type")
st.dataframe(ov.tasks, hide_index=True)

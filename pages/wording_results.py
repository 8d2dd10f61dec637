"""Wording results: yes-rates, agreement with item-bootstrap intervals, recognition vs compliance."""

import altair as alt
import streamlit as st

from pages.components import render, state
from pages.components.palette import direction_chart
from pages.components.render import md, tidy
from pages.components.session import require_page
from pages.components.studies import agreement_table, wise_section
from reform_core.safe_csv import csv_text
from reform_core.services.studies import wording

principal = require_page("view_scores")
eng = state.engine()
st.title("Wording results")

studies = wording.list_studies(eng, principal)
if studies.empty:
    st.info("No human wording-validation study yet.")
    wise_section(principal)
    st.stop()
names = dict(zip(studies["id"], studies["name"]))
c1, c2 = st.columns([3, 1])
sid = int(c1.selectbox("Study", list(names), format_func=names.get, key="wording_results_study"))
seed = int(c2.number_input("Bootstrap seed", min_value=0, value=0, step=1, key="wording_results_seed"))
res = wording.study_results(eng, principal, study_id=sid, n_boot=wording.N_BOOT, seed=seed)

cols = st.columns(3)
cols[0].metric("Items", res.items)
cols[1].metric("Annotators", len(res.annotators))
cols[2].metric("Completed every item", len(res.complete))
for note in res.notes:
    st.info(md(note))

st.subheader("Inter-annotator agreement")
st.caption(
    f"Fleiss' κ for the yes/no answer (annotators who answered every item) and Krippendorff's α "
    f"(nominal; every annotator's answers, missing ones allowed); ICC(2,1) and ICC(2,k) (two-way random, absolute agreement) for "
    f"each rating; 95 % percentile intervals from {res.n_boot:,} bootstrap replicates that resample items "
    f"and keep all annotators (seed {res.seed})."
)
st.dataframe(render.styled(agreement_table(res.agreement)), hide_index=True, key="wording_agreement")
for note in res.agreement.loc[res.agreement["note"] != "", "note"].unique():
    st.warning(md(note))

st.subheader("Exact-target yes-rates")
if res.yes_rates is None:
    st.info("No answers yet.")
else:
    st.caption("Share of 'yes' answers per form and annotator; the last row and column pool everything.")
    st.dataframe(tidy(res.yes_rates), key="wording_yes_rates")

st.subheader("Human recognition and model compliance")
st.caption(
    "Per form: the human yes-rate next to pooled model compliance (equal weight per model) and its "
    "difference from the reference form, when WISE generations of these forms exist."
)
st.dataframe(tidy(res.recognition, decimals=3), key="wording_recognition")

if not res.model_gaps.empty:
    ref = res.study["params"].get("reference", wording.DEFAULT_REFERENCE)
    gaps = res.model_gaps.reset_index().assign(gap_pp=lambda d: 100 * d["gap"])
    st.markdown(f"**{md(ref)}-to-worst-form gap per model** (percentage points)")
    st.altair_chart(
        alt.Chart(gaps)
        .mark_bar()
        .encode(
            x=alt.X("gap_pp:Q", title=f"{ref} − worst form (pp)"),
            y=alt.Y("model:N", sort="-x", title=None),
            tooltip=["model", "worst_form", alt.Tooltip("gap_pp:Q", format=".1f")],
        ),
        width="stretch",
    )
if not res.directions.empty:
    st.markdown("**Failure direction per form** (share of outputs, equal weight per model)")
    st.altair_chart(direction_chart(res.directions, list(res.recognition.index)), width="stretch")

with st.expander("Current ratings"):
    st.dataframe(tidy(res.ratings), hide_index=True)
    st.download_button(
        "Download ratings (CSV)", csv_text(res.ratings), file_name=f"{res.study['name']}_ratings.csv", mime="text/csv"
    )

wise_section(principal, linked=res.study["params"].get("wise_study"))

"""MOSAIC results: PA, SCC bars, PCC heatmap, PosCC by position, and each output with its
failing checks (the MOSAIC paper, sections 3.2 and 4; docs/metrics.md#mosaic)."""

import altair as alt
import pandas as pd
import streamlit as st

from pages.components import render, state, studies
from pages.components.palette import model_order, model_scale
from pages.components.session import require_page
from reform_core import display
from reform_core.services.studies import mosaic

principal = require_page("view_scores")
eng = state.engine()
st.title("MOSAIC results")

listed = mosaic.list_studies(eng, principal)
if listed.empty:
    st.info(
        "No MOSAIC study yet. Create one from the command line: `mosaic-generate`, `mosaic-import`, "
        "`mosaic-collect` (or `mosaic-import-outputs`), `mosaic-check` — see docs/formats.md, "
        "*MOSAIC and WISE studies*."
    )
    st.stop()
c1, c2 = st.columns([3, 1])
study = c1.selectbox("Study", list(listed["name"]), key="mosaic_study")
seed = int(c2.number_input("Bootstrap seed", min_value=0, value=0, step=1, key="mosaic_seed"))
res = studies.mosaic_results(principal, listed, study, seed)
studies.notes(res.notes)
if res.pa.empty:
    st.stop()

st.subheader("Prompt-level accuracy")
st.dataframe(render.styled(studies.mosaic_pa_table(res)), hide_index=True, key="mosaic_pa")
st.caption(
    f"PA_r = followed / checked constraints of a response, averaged over responses; 'all followed' = share "
    f"of responses that follow every checked constraint. Scores binarised at ≥ 0.5. 95 % percentile "
    f"intervals from {res.n_boot:,} bootstrap resamples of prompts (one draw for every model, seed {res.seed})."
)

st.subheader("Single-constraint compliance (SCC)")
scc = res.scc.assign(scc=100 * res.scc["scc"], lo=100 * res.scc["ci_low"], hi=100 * res.scc["ci_high"])
order = scc.groupby("constraint")["scc"].mean().sort_values().index.tolist()
colour = alt.Color("model:N", scale=model_scale(res.pa["model"]), sort=model_order(res.pa["model"]))
base = alt.Chart(scc).encode(
    y=alt.Y("constraint:N", sort=order, title=None),
    yOffset=alt.YOffset("model:N", sort=model_order(res.pa["model"])),
    color=colour,
)
st.altair_chart(
    base.mark_bar().encode(
        x=alt.X("scc:Q", title="SCC %", scale=alt.Scale(domain=[0, 100])),
        tooltip=[
            "model",
            "constraint",
            "n",
            alt.Tooltip("scc:Q", format=".1f"),
            alt.Tooltip("lo:Q", format=".1f"),
            alt.Tooltip("hi:Q", format=".1f"),
        ],
    )
    + base.mark_rule(color="black").encode(x="lo:Q", x2="hi:Q"),
    width="stretch",
)

models = list(res.pa["model"])
model = st.selectbox("Model", models, key="mosaic_model")

st.subheader("Pairwise compliance (PCC) and correlations")
measure = st.radio(
    "Colour",
    ["PCC %", "Pearson r"],
    horizontal=True,
    key="mosaic_pcc_measure",
    help="PCC: share of responses following both constraints (over responses having both). Pearson r "
    "of the two binary outcomes with its two-sided p-value.",
)
pcc = res.pcc[res.pcc["model"] == model].copy()
if pcc.empty:
    st.text("No constraint pair occurs together in this model's checked outputs.")
else:
    pcc["value"] = 100 * pcc["pcc"] if measure == "PCC %" else pcc["r"]
    both = pd.concat([pcc, pcc.rename(columns={"constraint_i": "constraint_j", "constraint_j": "constraint_i"})])
    both = both.assign(
        p_text=[display.p_value_text(v) for v in both["p_value"]],
        pcc_pct=100 * both["pcc"],
        pcc_ci=[studies.interval_text(lo, hi) for lo, hi in zip(both["ci_low"], both["ci_high"])],
    )
    scale = (
        alt.Scale(domain=[0, 100], scheme="viridis")
        if measure == "PCC %"
        else alt.Scale(domain=[-1, 1], scheme="redblue")
    )
    st.altair_chart(
        alt.Chart(both)
        .mark_rect()
        .encode(
            x=alt.X("constraint_i:N", title=None, axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("constraint_j:N", title=None),
            color=alt.Color("value:Q", title=measure, scale=scale),
            tooltip=[
                "constraint_i",
                "constraint_j",
                "n",
                alt.Tooltip("pcc_pct:Q", title="PCC %", format=".1f"),
                alt.Tooltip("pcc_ci:N", title="PCC 95% CI"),
                alt.Tooltip("r:Q", format=".3f"),
                alt.Tooltip("p_text:N", title="p"),
            ],
        ),
        width="stretch",
    )
    strong = pcc[(pcc["r"].abs() > 0.2) & (pcc["p_value"] < 0.05)].sort_values("r")
    st.caption(f"{len(strong)} pair(s) with |r| > 0.2 and p < 0.05 (the paper's reporting rule).")
    if len(strong):
        st.dataframe(studies.strong_pairs_table(strong), hide_index=True, key="mosaic_strong_pairs")

st.subheader("Positional compliance (PosCC)")
pos = res.poscc.assign(poscc=100 * res.poscc["poscc"], lo=100 * res.poscc["ci_low"], hi=100 * res.poscc["ci_high"])
line = alt.Chart(pos).encode(x=alt.X("position:Q", title="position in the constraint list"), color=colour)
st.altair_chart(
    line.mark_area(opacity=0.15).encode(y=alt.Y("lo:Q", title="PosCC %"), y2="hi:Q")
    + line.mark_line(point=True).encode(
        y="poscc:Q", tooltip=["model", "position", "n", alt.Tooltip("poscc:Q", format=".1f")]
    ),
    width="stretch",
)
st.caption(
    "PosCC_p over responses with a checked constraint at position p (with every constraint checked: the "
    "responses with at least p constraints)."
)

st.subheader("Outputs")
summary = mosaic.output_summary(eng, principal, study=study, model=model)
only_failing = st.toggle("Only outputs that fail a check", value=True, key="mosaic_only_failing")
shown = summary[summary["failing"] != ""] if only_failing else summary
st.dataframe(
    shown,
    hide_index=True,
    key="mosaic_outputs",
    column_config={"pa": st.column_config.NumberColumn("PA", format="%.2f")},
)
if shown.empty:
    st.stop()
prompt = st.selectbox("Prompt", list(shown["prompt"]), key="mosaic_prompt")
detail = mosaic.output_detail(eng, principal, study=study, prompt=prompt, model=model)
st.dataframe(
    detail["checks"],
    hide_index=True,
    key="mosaic_checks",
    column_config={
        "score": st.column_config.NumberColumn(format="%.2f"),
        "followed": st.column_config.CheckboxColumn(),
    },
)
c1, c2 = st.columns(2)
with c1:
    st.markdown("**Prompt**")
    st.code(detail["system"], language=None, wrap_lines=True)
    st.code(detail["user"], language=None, wrap_lines=True)
with c2:
    st.markdown("**Output**")
    render.show_raw(detail["output"])
st.json({k: v for k, v in detail["meta"].items()}, expanded=False)

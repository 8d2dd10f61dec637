"""Sampling (leads): choose a judge pair and a design — the question-cluster design of the
default estimator (sized by Cochran's margin or by a target measurement half-width) or the
paper's stratified sample — preview the planned sizes, store a plan, follow its summary, the
precision reached so far against the plan's target (the planner's verdict, refreshed as
decisions come in) and the live calibrated scores."""

import streamlit as st

from pages.components import errors, state
from pages.components import plans as plans_view
from pages.components.render import md, md_lines, tidy
from pages.components.session import leave_if_signed_out, require_page
from reform_core.services.adjudication import adjudication as S
from reform_core.services.adjudication import planning as P
from reform_core.services.scoring import estimates as E

DESIGNS = {"Question-cluster (default estimator)": "cluster", "Stratified (paper, Cochran/FPC)": "stratified"}

principal = require_page("plan_sampling")  # == S.PLAN_ACTION
engine = state.engine()
ss = st.session_state
ss.setdefault("plan_preview", None)  # (params, per-stratum plan)
ss.setdefault("live_scores", {})  # (judge_a, judge_b) -> LiveScores

st.title("Adjudication sample plans")
judges = S.judges(engine)
if len(judges) < 2:
    st.info("A plan needs labels from two judges; this project has " + (", ".join(map(md, judges)) or "none") + ".")
    st.stop()

default = S.default_pair(engine) or (judges[0], judges[1])
st.caption(
    "Judges in creation order (as the CLI lists them); the default is the project's scoring pair "
    "— a plan's decisions count only for its own pair."
)
design = st.radio(
    "Design",
    list(DESIGNS),
    horizontal=True,
    key="plan_design",
    help="Question-cluster: what the default estimator needs — every disagreement of a random sample of "
    "questions, an audit sample of their agreements (a target's rows together), a second annotator "
    "wherever a first decision goes against the reference (both judges wrong on an audit, judge B on "
    "a disagreement). Stratified: the paper's Cochran/FPC sample of disagreements, for reproduction.",
)
cluster = DESIGNS[design] == "cluster"
size_by = "Cochran margin"
if cluster:  # outside the form: the inputs below follow the choice at once
    size_by = st.radio(
        "Size by",
        ["Cochran margin", "Target half-width"],
        horizontal=True,
        key="plan_size_by",
        help="Target half-width: the planner picks the cheapest question and audit shares whose "
        "predicted measurement half-width is within the target.",
    )
by_target = cluster and size_by == "Target half-width"
confidence, p, margin, target, metric, audit_share = 0.95, 0.5, 0.03, None, "tcpr", None
with st.form("plan_params"):
    c = st.columns(2)
    judge_a = c[0].selectbox("Judge A", judges, index=judges.index(default[0]))
    judge_b = c[1].selectbox("Judge B", judges, index=judges.index(default[1]))
    if by_target:
        c = st.columns(2)
        target = c[0].number_input("Target half-width (pp)", 0.1, 50.0, 3.0, step=0.5, key="plan_target")
        metric = c[1].selectbox("Target metric", ["tcpr", "emcr"])
    else:
        c = st.columns(3)
        confidence = c[0].number_input("Confidence", 0.5, 0.999, 0.95, step=0.01, format="%.3f")
        p = c[1].number_input("Anticipated proportion p", 0.01, 0.99, 0.5, step=0.05)
        margin = c[2].number_input("Margin of error e", 0.005, 0.5, 0.03, step=0.005, format="%.3f")
    if cluster:
        c = st.columns(2 if by_target else 3)
        defaults = P.design_defaults()
        if not by_target:
            audit_share = c[-1].number_input(
                "Audit share of agreements",
                0.0,
                1.0,
                defaults["audit_pi"],
                step=0.05,
                help="Mean over agreements; agreed fails get more. Sizing by target "
                "half-width, the planner chooses it.",
            )
        overlap = c[1].slider(
            "Share double-adjudicated",
            0.0,
            1.0,
            defaults["double_fraction"],
            step=0.05,
            help="Decided by two annotators from the start; the others get a second annotator "
            "only where the first decision asks for it.",
        )
        seed = c[0].number_input("Seed", 0, 2**31 - 1, 0, step=1)
        audit = 0
    else:
        c = st.columns(3)
        seed = c[0].number_input("Seed", 0, 2**31 - 1, 0, step=1)
        audit = c[1].number_input("Audit sample of agreements", 0, 100_000, 0, step=10)
        overlap = c[2].slider("Share double-adjudicated", 0.0, 1.0, 0.0, step=0.05)
    previewed = st.form_submit_button("Preview planned sizes")

params = dict(judge_a=judge_a, judge_b=judge_b, confidence=float(confidence), p=float(p), margin=float(margin))
if cluster:
    options = dict(
        seed=int(seed),
        double_fraction=float(overlap),
        **({"target_half_width": float(target), "metric": metric} if by_target else {"audit_pi": float(audit_share)}),
    )
    key = ("cluster", params, options)
else:
    key = ("stratified", params, {})
if previewed:
    try:
        if cluster:
            ss["plan_preview"] = (key, P.preview_cluster_plan(engine, principal, **params, **options))
        else:
            ss["plan_preview"] = (key, S.preview_plan(engine, principal, **params))
    except ValueError as exc:
        ss["plan_preview"] = None
        st.error(md_lines(exc))

preview = ss["plan_preview"]
if preview is not None and preview[0] == key:
    if cluster:
        made_plan = preview[1]
        st.subheader("Planned sizes (question-cluster design, per model)")
        st.dataframe(tidy(made_plan.models, decimals=3), hide_index=True)
        t = made_plan.params.get("target") or {}
        st.caption(
            f"{len(made_plan.tasks):,} tasks ({int(made_plan.tasks['required'].sum()):,} decisions); target "
            f"±{t.get('half_width', 0):g} pp on {str(t.get('metric', 'tcpr')).upper()} (measurement interval)"
        )
        st.caption(made_plan.explanation)
    else:
        strata = preview[1]
        sizes = S.model_sizes(strata)
        st.subheader("Planned sizes (Cochran with finite-population correction, per model)")
        st.dataframe(tidy(sizes), hide_index=True)
        st.caption(
            f"{int(sizes['planned'].sum()):,} disagreement items in {len(strata)} strata"
            + (f", plus {int(audit)} audit items" if audit else "")
        )
        with st.expander("Allocation per stratum"):
            st.dataframe(tidy(strata, decimals=3), hide_index=True)
    name = st.text_input("Plan name (optional)")
    if st.button("Create plan", type="primary"):
        try:
            if cluster:
                made = P.create_cluster_plan(engine, principal, name=name or None, **params, **options)
            else:
                made = S.create_plan(
                    engine,
                    principal,
                    seed=int(seed),
                    audit=int(audit),
                    overlap_fraction=float(overlap),
                    name=name or None,
                    **params,
                )
            st.success(
                f"Stored plan “{md(made.name)}” with {made.tasks:,} items."
                + (f" {made.explanation}" if getattr(made, "explanation", "") else "")
            )
            ss["plan_preview"] = None
            state.clear_data_caches()
        except ValueError as exc:
            st.error(md_lines(exc))
elif preview is not None:
    st.caption("Parameters changed: preview again before creating a plan.")

st.divider()
plans = S.list_plans(engine, principal)
if plans.empty:
    st.info("No plan yet.")
    st.stop()
labels = dict(zip(plans["id"], plans["name"]))
plan_id = st.selectbox("Plan", list(labels), index=len(labels) - 1, format_func=lambda i: labels[i])
summary = S.plan_summary(engine, principal, plan_id)
st.subheader(f"{md(summary.name)}: {md(summary.judge_a)} (A) vs {md(summary.judge_b)} (B)")
st.caption(
    ", ".join(
        f"{k} = {md(summary.params[k])}"
        for k in (
            "design",
            "confidence",
            "p",
            "margin",
            "seed",
            "audit",
            "overlap_fraction",
            "audit_pi",
            "double_fraction",
        )
        if k in summary.params
    )
    + (f"; extended {len(summary.params['extensions'])} time(s)" if summary.params.get("extensions") else "")
)


@st.fragment(run_every="30s")
@errors.guard
def precision(plan_id: int) -> None:
    """The plan's measurement half-widths against its target, refreshed as decisions come in."""
    leave_if_signed_out()  # revoked meanwhile: polling must not keep showing the page
    got = plans_view.plan_precision(principal, plan_id)
    if got is not None:
        plans_view.show_precision(got)


flash = ss.pop("plan_flash", None)
if flash:
    st.success(flash)
if E.is_cluster_plan(summary.params):
    st.markdown(
        f"**Precision so far** — target ±{E.target_of(summary.params)['half_width']:g} pp on "
        f"{E.target_of(summary.params)['metric'].upper()} (stop when precise enough)"
    )
    precision(plan_id)
plans_view.stop_or_extend(principal, summary.name, summary.params)
st.markdown("**Per evaluated model** (agreement in %, shares of reviewed items)")
st.dataframe(tidy(summary.models), hide_index=True)
st.markdown("**Per stratum** (π̂ = mean adjudicated pass label; provisional = no review yet)")
st.dataframe(tidy(summary.strata, decimals=3), hide_index=True, column_config={"pi_hat": "π̂"})


@st.fragment(run_every="20s")
@errors.guard
def live_scores(judge_a: str, judge_b: str) -> None:
    """Calibrated TCPR / EMCR that follow each new decision (incremental, see LiveScores)."""
    leave_if_signed_out()  # revoked meanwhile: polling must not keep showing the page
    key = (judge_a, judge_b)
    live = ss["live_scores"].get(key)
    if live is None:
        with st.spinner("Loading instances…"):
            live = ss["live_scores"][key] = S.LiveScores.from_engine(engine, judge_a, judge_b)
    else:
        live.sync(engine)
    st.dataframe(tidy(live.scores), hide_index=True)
    if live.scores["provisional"].any():
        st.caption(
            "Provisional: some strata of these models have no adjudication yet (they use the model's pooled share)."
        )


if st.toggle("Show live calibrated scores"):
    live_scores(summary.judge_a, summary.judge_b)

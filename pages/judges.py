"""Judges: per-judge counts, judge runs as background jobs with live progress, the
versioned grading prompt.

A run started here is a job of the app process (``reform_core.services.platform.jobs``): the page
returns at once, the run goes on across navigation and reloads, any session sees its
progress (polled by a fragment) and can cancel it; a run whose process died shows as
stale and can be resumed. Requests go to the provider's official API or to an endpoint a
lead configured (REFORM_JUDGE_ENDPOINTS) — this page has no URL input.
"""

import streamlit as st

from pages.components import errors, render, state
from pages.components.session import leave_if_signed_out, require_page
from reform_core.services.judging import judging
from reform_core.services.platform import jobs
from reform_core.services.scoring import scoring
from reform_core.services.scoring.scoring import ScoringError

principal = require_page("run_judges")
eng = state.engine()
st.title("Judges")

ACTIVE_POLL, IDLE_POLL = 2, 15  # seconds between progress reads
busy = any(v.active for v in judging.recent_jobs(eng, principal))


def _job_line(v: jobs.JobView) -> str:
    c = v.result  # live counters while running
    counts = ", ".join(f"{c.get(k, 0):,} {k}" for k in ("labels", "abstentions", "errors"))
    total = f" of {v.total:,}" if v.total is not None else ""
    return f"Job {v.id} · {v.lock_key} · {v.done:,}{total} responses · {counts}"


def _resume(job_id: int) -> None:
    try:
        judging.resume_judge_job(eng, principal, job_id)
    except ValueError as exc:
        st.error(render.md(str(exc)))
    else:
        st.rerun()


@st.fragment(run_every=ACTIVE_POLL if busy else IDLE_POLL)
@errors.guard
def live() -> None:
    leave_if_signed_out()  # revoked meanwhile: polling must not keep showing the page
    views = judging.recent_jobs(eng, principal)
    st.dataframe(
        render.judges_summary(principal),
        hide_index=True,
        column_config={
            "tokens": st.column_config.NumberColumn(format="localized"),
            "cost (USD)": st.column_config.NumberColumn(format="$%.4f"),
        },
    )
    st.caption(
        "Counts are each judge's current verdict per (response, constraint): labels are pass/fail "
        "verdicts, abstentions are pairs a judge could not decide (e.g. no rule for the feature), errors "
        "are failed calls (the next run retries them). A judge with errors only cannot be scored."
    )
    for v in views:
        if v.active:
            st.progress(v.done / v.total if v.total else 0.0, text=render.md(_job_line(v)))
            if v.cancel_requested:
                st.caption("Cancel requested: calls in flight finish and are written.")
            elif st.button("Cancel", key=f"cancel-{v.id}"):
                judging.cancel_job(eng, principal, v.id)
                st.rerun(scope="fragment")
        elif v.state == "stale" and v.kind == "judge":
            st.warning(
                render.md(
                    f"Job {v.id} ({v.lock_key}) stopped without finishing: {v.stale_reason}. "
                    "Resuming judges only what is still pending."
                )
            )
            if st.button("Resume", key=f"resume-{v.id}"):
                _resume(v.id)
    latest = next((v for v in views if v.kind == "judge" and v.state in ("done", "failed", "cancelled")), None)
    if latest is not None and "calls" in latest.result:
        show = st.error if latest.state == "failed" else st.success
        show(render.md(f"Job {latest.id} ({latest.lock_key}), {latest.state}: {judging.run_report(latest.result)}"))
    if latest is not None and latest.error:
        st.text(f"Error: {latest.error}")
    if views:
        with st.expander("Recent runs"):
            st.dataframe(jobs.frame(views), hide_index=True)
    if any(v.active for v in views) != busy:  # a run started or ended: switch the polling pace
        st.rerun()


live()

st.subheader("Scoring pair")
pair = scoring.resolve_pair(eng)
labelled = scoring.scoreable_judges(eng)
st.caption(render.md(f"Scores, exports and every page calibrate with this pair: {pair.describe()}."))
if len(labelled) >= 2:
    current = pair.pair or (labelled[0], labelled[1])
    with st.form("scoring_pair"):
        c1, c2 = st.columns(2)
        pair_a = c1.selectbox("Judge A", labelled, index=labelled.index(current[0]), key="pair_a")
        pair_b = c2.selectbox("Judge B", labelled, index=labelled.index(current[1]), key="pair_b")
        if st.form_submit_button("Set scoring pair"):
            try:
                scoring.set_pair(eng, principal, pair_a, pair_b)
            except ScoringError as exc:
                st.error(render.md(str(exc)))
            else:
                state.clear_data_caches()
                st.success(render.md(f"Scoring pair set: {pair_a} (A), {pair_b} (B)."))

st.subheader("Run a judge")
c1, c2, c3 = st.columns(3)
provider = c1.selectbox("Provider", ["rules", "openai", "gemini", "replay"])
endpoints = judging.endpoint_choices(provider)
endpoint = c2.selectbox(
    "Endpoint",
    endpoints or ["—"],
    disabled=not endpoints,
    help="The provider's official API or an endpoint configured by a lead "
    "(REFORM_JUDGE_ENDPOINTS); the key from the server's environment is sent there.",
)
model = c3.text_input(
    "Model", disabled=provider in ("rules", "replay"), help="e.g. gpt-5.4-mini or gemini-3.1-flash-lite"
)
c1, c2, c3 = st.columns(3)
name = c1.text_input(
    "Judge name", help="Defaults to the model ('verifiers' or 'verifiers-loose' for rules, 'replay:SOURCE' for replay)."
)
concurrency = c2.number_input("Concurrency", 1, 256, 16)
limit = c3.number_input("At most N responses (0 = all)", 0, 10_000_000, 0)
source, mode = None, "strict"
if provider == "rules":
    mode = st.selectbox(
        "Rules mode",
        ["strict", "loose"],
        help="The rules judge runs every verifier of the "
        "project's catalog; IFEval's verifiers follow its strict or loose rules.",
    )
if provider == "replay":
    source = st.selectbox("Judge whose labels to copy", render.judges_summary(principal)["judge"].tolist())
if st.button("Start", type="primary"):
    try:
        judging.start_judge_job(
            eng,
            principal,
            provider=provider,
            model=model if endpoints else "",
            name=name or None,
            endpoint=endpoint if endpoints else None,
            concurrency=int(concurrency),
            limit=int(limit) or None,
            source=source,
            mode=mode,
        )
    except ValueError as exc:
        st.error(render.md(str(exc)))
    else:
        st.rerun()

prompt = judging.prompt_for_display(eng)
with st.expander(f"Grading prompt (version {prompt['version']})"):
    st.caption(
        "Every judge gets this prompt with the full instruction, each constraint with its acceptance "
        "criteria and the response; never the evaluated model's identity. Temperature 0."
    )
    st.code(prompt["text"], language="text", wrap_lines=True)

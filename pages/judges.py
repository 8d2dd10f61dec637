"""Judges: the versioned grading prompt, judge runs with progress, judge statistics."""

import threading

import streamlit as st

from pages.components import state
from pages.components.session import require_page
from reform_core.services import judging, scoring
from reform_core.services.scoring import ScoringError

principal = require_page("run_judges")
eng = state.engine()
st.title("Judges")

summary = st.empty()
summary.dataframe(judging.judges_summary(eng, principal), hide_index=True)

st.subheader("Scoring pair")
pair = scoring.resolve_pair(eng)
labelled = scoring.scoreable_judges(eng)
st.caption(f"Scores, exports and every page calibrate with this pair: {pair.describe()}.")
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
                st.error(str(exc))
            else:
                state.clear_data_caches()
                st.success(f"Scoring pair set: {pair_a} (A), {pair_b} (B).")

prompt = judging.prompt_for_display(eng)
with st.expander(f"Grading prompt (version {prompt['version']})"):
    st.caption("Every judge gets this prompt with the full instruction, each constraint with its acceptance "
               "criteria and the response; never the evaluated model's identity. Temperature 0.")
    st.code(prompt["text"], language="text", wrap_lines=True)

st.subheader("Run a judge")
with st.form("run_judge"):
    c1, c2, c3 = st.columns(3)
    provider = c1.selectbox("Provider", ["rules", "openai", "gemini", "replay"])
    model = c2.text_input("Model", help="e.g. gpt-5.4-mini or gemini-3.1-flash-lite (openai/gemini)")
    name = c3.text_input("Judge name", help="Defaults to the model (or 'rules').")
    c1, c2, c3 = st.columns(3)
    base_url = c1.text_input("Base URL (optional)", help="Any OpenAI-compatible server, or a Gemini endpoint.")
    concurrency = c2.number_input("Concurrency", 1, 256, 16)
    limit = c3.number_input("At most N responses (0 = all)", 0, 10_000_000, 0)
    c1, c2 = st.columns(2)
    source = c1.text_input("Replay: judge whose labels to copy", disabled=False)
    mode = c2.selectbox("Rules: IFEval mode", ["strict", "loose"], help="The rules judge runs every verifier of the "
                        "project's catalog; IFEval's verifiers follow its strict or loose rules.")
    go = st.form_submit_button("Start", type="primary")

if go:
    judge_name = name or model or provider
    pending = judging.pending_count(eng, name=judge_name)
    st.write(f"{pending['pairs']:,} pairs in {pending['responses']:,} responses to judge. "
             "Finished calls are committed as they arrive; any click on the page stops the run, "
             "and starting it again resumes where it stopped.")
    bar = st.progress(0.0, text="starting…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / total if total else 1.0, text=f"{done:,} / {total:,} responses")

    try:
        out = judging.run_judge(eng, provider=provider, model=model, name=name or None, base_url=base_url or None,
                                concurrency=int(concurrency), limit=int(limit) or None, progress=progress,
                                cancel=threading.Event(), source=source or None,
                                mode=mode if provider == "rules" else "strict")
    except (ValueError, RuntimeError) as exc:
        st.error(str(exc))
    else:
        state.clear_data_caches()
        summary.dataframe(judging.judges_summary(eng, principal), hide_index=True)
        (st.error if out["all_failed"] else st.success)(judging.run_report(out))
        if out["all_failed"]:
            st.text(f"First error: {out['first_error']}")

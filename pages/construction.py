"""Construction (leads): collect responses, build variants, extract baseline features,
generate MOSAIC and WISE prompt sets — each with its size and cost shown before launch."""

import json

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import md, md_lines, tidy
from pages.components.session import require_page
from reform_core.services.judging import collection, judging
from reform_core.services.studies import construction

require_page("run_construction")
eng = state.engine()
st.title("Construction")
st.caption("API keys come from the environment (OPENAI_API_KEY / GOOGLE_API_KEY); they are never stored.")

collect_tab, variants_tab, features_tab, mosaic_tab, wise_tab = st.tabs(
    ["Collect responses", "Build variants", "Extract features", "MOSAIC prompts", "WISE items"]
)


def _bar(label: str):
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{label}: {done}/{total}")

    return update


def _try(fn):
    try:
        return fn()
    except (ValueError, KeyError) as exc:
        st.error(md_lines(exc))
    return None


def _endpoint(container, provider: str, key: str) -> str:
    """The official API or an endpoint a lead configured: no page offers a URL box, so nothing
    typed here can send a provider key elsewhere (issue 15 item 1)."""
    return container.selectbox(
        "Endpoint",
        judging.endpoint_choices(provider) or ["—"],
        key=key,
        disabled=provider not in collection.PROVIDERS,
        help="The provider's official API or an endpoint configured by a lead "
        "(REFORM_JUDGE_ENDPOINTS); the key from the server's environment is sent there.",
    )


def _target(provider: str, endpoint: str) -> dict:
    """``base_url`` / ``api_key`` of the chosen endpoint (none: the provider's own)."""
    if provider not in collection.PROVIDERS:
        return {}
    base_url, api_key = collection.endpoint_target(provider, endpoint)
    return {"base_url": base_url, "api_key": api_key}


with collect_tab:
    c1, c2, c3 = st.columns(3)
    model = c1.text_input("Evaluated model (project name)", key="con_model")
    provider = c2.selectbox("Provider", collection.PROVIDERS, key="con_provider")
    provider_model = c3.text_input("Endpoint model id (default: the name)", key="con_pmodel")
    endpoint = _endpoint(st, provider, "con_endpoint")
    conditions = st.multiselect("Conditions", collection.CONDITIONS, default=["baseline"], key="con_conditions")
    s1, s2, s3, s4 = st.columns(4)
    temperature = s1.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="con_temp")
    max_tokens = s2.number_input("Max output tokens", 1, 200_000, 4096, key="con_max")
    effort = s3.selectbox("Reasoning effort (OpenAI)", ["", "low", "medium", "high"], key="con_effort")
    budget = s4.number_input("Thinking budget (Gemini, 0 = unset)", 0, 200_000, 0, key="con_budget")
    concurrency = st.slider("Concurrency", 1, 64, 8, key="con_conc")
    if model and conditions:
        settings = collection.GenerationSettings(
            temperature=temperature,
            max_tokens=int(max_tokens),
            reasoning_effort=effort or None,
            thinking_budget=int(budget) or None,
        )
        est = _try(
            lambda: collection.estimate(
                eng, model=model, conditions=conditions, settings=settings, provider_model=provider_model or None
            )
        )
        if est is not None:
            m1, m2, m3 = st.columns(3)
            m1.metric("Calls pending", f"{est['calls']:,}")
            m2.metric("Prompt tokens (≈)", f"{est['input_tokens']:,}")
            m3.metric("Cost bound (USD)", f"{est['max_cost_usd']:.2f}")
            st.caption(
                f"By condition: {est['by_condition'] or 'nothing pending'}; the bound assumes every answer "
                "uses the full output budget; models without a price count 0."
            )
            if st.button("Launch collection", disabled=est["calls"] == 0, type="primary", key="con_launch"):
                out = _try(
                    lambda: collection.collect(
                        eng,
                        model=model,
                        provider=provider,
                        provider_model=provider_model or None,
                        conditions=conditions,
                        settings=settings,
                        endpoint=endpoint,
                        concurrency=concurrency,
                        progress=_bar("collecting"),
                    )
                )
                if out is not None:
                    state.clear_data_caches()
                    st.success(
                        f"{out['written']} responses written, {out['errors']} errors, {out['truncated']} truncated."
                    )
                    if out["first_error"]:
                        st.warning(f"First error: {md(out['first_error'])}")

with variants_tab:
    v1, v2, v3 = st.columns(3)
    per_question = v1.number_input("Variants per question", 1, 50, 5, key="var_per")
    pool = v2.number_input(
        "Target pool per question",
        3,
        66,
        6,
        key="var_pool",
        help="Smaller pools make targets recur across a question's variants.",
    )
    seed = v3.number_input("Seed", 0, 2**31 - 1, 0, key="var_seed")
    single = st.checkbox("Add single-constraint versions", key="var_single")
    prompted = st.checkbox("Add prompted (meta-prompt) copies", key="var_prompted")
    integrate = st.checkbox("Integrate constraints into the question with an LLM", key="var_integrate")
    spec = None
    if integrate:
        i1, i2, i3 = st.columns(3)
        iprov = i1.selectbox("Provider", collection.PROVIDERS, key="var_iprov")
        spec = {
            "provider": iprov,
            "model": i2.text_input("Model", key="var_imodel"),
            "endpoint": _endpoint(i3, iprov, "var_iendpoint"),
        }
    args = dict(per_question=int(per_question), pool_size=int(pool), seed=int(seed), single=single, prompted=prompted)
    if st.button("Preview (writes nothing)", key="var_preview"):
        out = _try(lambda: construction.build_variants(eng, dry_run=True, **args))
        if out is not None:
            calls = f"; at most {int(per_question) * out['questions']} integration calls" if integrate else ""
            st.write(
                f"{out['instructions']} instructions, {out['constraints']} constraints for "
                f"{out['questions']} questions{calls}"
            )
            st.dataframe(tidy(pd.DataFrame(out["multiplicity"])), hide_index=True)
    if st.button("Build and import", type="primary", key="var_build"):
        out = _try(
            lambda: construction.build_variants(
                eng,
                integrate=spec
                and {
                    "provider": spec["provider"],
                    "model": spec["model"],
                    **_target(spec["provider"], spec["endpoint"]),
                },
                **args,
            )
        )
        if out is not None:
            state.clear_data_caches()
            st.success(
                f"Imported {out['instructions']} instructions ({out['integrated']} integrated, "
                f"{out['integration_errors']} kept the template text)."
            )

with features_tab:
    f1, f2, f3 = st.columns(3)
    fprov = f1.selectbox("Provider", ["rules", *collection.PROVIDERS], key="feat_prov")
    fmodel = f2.text_input("Model (LLM providers)", key="feat_model")
    fendpoint = _endpoint(f3, fprov, "feat_endpoint")
    open_ended = st.checkbox("Open-ended extraction and catalog coverage", disabled=fprov == "rules", key="feat_open")
    if st.button("Annotate baselines", type="primary", key="feat_run"):
        with st.spinner("Annotating…"):
            res = _try(
                lambda: construction.extract_features(
                    eng,
                    provider=fprov,
                    model=fmodel,
                    **_target(fprov, fendpoint),
                    open_ended=open_ended and fprov != "rules",
                )
            )
        if res is not None:
            state.clear_data_caches()
            a = res["annotation"]
            st.success(f"{a['written']} annotations ({a['rule']} rule, {a['llm']} LLM), {a['errors']} errors.")
            if res["coverage"]:
                st.dataframe(tidy(pd.DataFrame(res["coverage"])), hide_index=True)

with mosaic_tab:
    m1, m2 = st.columns(2)
    n = m1.number_input("Prompts", 1, 100_000, 4000, key="mos_n")
    mseed = m2.number_input("Seed", 0, 2**31 - 1, 0, key="mos_seed")
    if st.button("Generate", key="mos_gen"):
        prompts, counts = construction.mosaic_prompts(n=int(n), seed=int(mseed))
        st.caption("Constraint × list size (counts); every column is balanced across constraints.")
        st.dataframe(tidy(counts["size"]))
        st.caption("Constraint × rank (counts).")
        st.dataframe(tidy(counts["rank"]))
        st.download_button(
            "Download JSONL",
            "\n".join(json.dumps(p, ensure_ascii=False) for p in prompts),
            file_name="mosaic.jsonl",
            key="mos_dl",
        )

with wise_tab:
    tasks = st.text_area("Base tasks, one per line", key="wise_tasks")
    w1, w2, w3 = st.columns(3)
    panel = w1.selectbox("Panel", construction.WISE_PANELS, key="wise_panel")
    targets = w2.text_input("Targets (comma-separated)", "5, 8, 10, 12", key="wise_targets")
    reps = w3.number_input("Repetitions", 1, 20, 3, key="wise_reps")
    lines = [ln.strip() for ln in tasks.splitlines() if ln.strip()]
    if lines and st.button("Generate items", key="wise_gen"):
        tlist = [t.strip() for t in targets.split(",") if t.strip()]
        out = _try(lambda: construction.wise_items(tasks=lines, targets=tlist, panel=panel, repetitions=int(reps)))
        if out is not None:
            manifest, forms, items = out
            st.write(
                f"{len(items)} matched items: {len(manifest)} tasks × {len(forms)} forms × {int(reps)} repetitions"
            )
            st.dataframe(tidy(forms), hide_index=True)
            st.dataframe(tidy(items.drop(columns=["params"]).head(200)), hide_index=True)
            st.download_button(
                "Download items (JSONL)",
                items.to_json(orient="records", lines=True, force_ascii=False),
                file_name="wise_items.jsonl",
                key="wise_dl",
            )

"""Wording study designer: define forms × targets or import items, import WISE generations (leads)."""

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import md, md_lines
from pages.components.session import require_page
from reform_core.services.studies import generations, wise, wording

# The original WISE exact-count panel (the WISE paper's Table 1), a starting point for a new study.
DEFAULT_FORMS = pd.DataFrame(
    {
        "key": ["POS", "NEG", "NEVER", "AVOID1", "AVOID2", "CNEG"],
        "template": [
            "Answer using exactly {N} words.",
            "Do not use more or fewer than {N} words.",
            "Never use more or fewer than {N} words.",
            "Avoid using any number of words other than {N}.",
            "Avoid giving an answer that is not exactly {N} words.",
            "Do not fail to answer using exactly {N} words.",
        ],
    }
)

principal = require_page("manage_wording")
eng = state.engine()
st.title("Wording studies")


def _problems(exc: Exception) -> None:
    st.error("Nothing was written.")
    st.code(str(exc), language=None, wrap_lines=True)


def _study_settings(prefix: str) -> dict:
    c1, c2, c3 = st.columns([3, 1, 1])
    question = c1.text_input(
        "Question shown with each item (must contain {target})", wording.DEFAULT_QUESTION, key=f"{prefix}_question"
    )
    checker = c2.selectbox("Checker of matching generations", wording.CHECKERS, key=f"{prefix}_checker")
    reference = c3.text_input("Reference form", wording.DEFAULT_REFERENCE, key=f"{prefix}_reference")
    linked = st.selectbox(
        "Linked WISE study (optional): results compare the answers with its generations; its "
        "forms must include the study's forms",
        ["—", *wise.list_studies(eng, principal)["name"]],
        key=f"{prefix}_wise_study",
    )
    return {
        "question": question,
        "checker": checker,
        "reference": reference,
        "wise_study": None if linked == "—" else linked,
    }


new, upload, gens, existing = st.tabs(["New study", "Import items", "WISE generations", "Studies"])

with new:
    st.caption(
        "Items are forms × targets: each form's template has one placeholder such as {N}, filled with "
        "each target. Annotators see the items blinded (no form label) in their own random order."
    )
    name = st.text_input("Study name", key="wording_new_name")
    settings = _study_settings("wording_new")
    forms = st.data_editor(DEFAULT_FORMS, num_rows="dynamic", hide_index=True, key="wording_new_forms", width="stretch")
    targets = st.text_input("Targets (comma-separated)", "5, 8, 10, 12", key="wording_new_targets")
    if st.button("Create study", type="primary", key="wording_new_create"):
        try:
            out = wording.create_study(
                eng,
                principal,
                name=name,
                forms=forms.fillna("").to_dict("records"),
                targets=[t for t in targets.split(",") if t.strip()],
                **settings,
            )
            st.success(f"Study “{md(out['study'])}” created with {out['forms']} forms and {out['items']} items.")
        except ValueError as exc:
            st.error(md_lines(exc))

with upload:
    st.caption("A CSV or JSONL file with columns form, target, text (one row per item).")
    name = st.text_input("Study name", key="wording_items_name")
    settings = _study_settings("wording_items")
    f = st.file_uploader("Items file", type=["csv", "jsonl"], key="wording_items_file")
    if st.button("Create study from file", type="primary", key="wording_items_create", disabled=f is None):
        try:
            out = wording.import_study_items(eng, principal, name=name, data=f.getvalue(), filename=f.name, **settings)
            st.success(f"Study “{md(out['study'])}” created with {out['forms']} forms and {out['items']} items.")
        except wording.ImportFailed as exc:
            _problems(exc)
        except ValueError as exc:
            st.error(md_lines(exc))

with gens:
    st.caption(
        "CSV or JSONL with columns item, model, provider, form, target, repetition, output (optional "
        "checker). The target names the checker: N (exact words), L-H (word range), keyword:WORD "
        "(keyword once) or keys:K1,K2 (JSON keys). Re-importing the same rows changes nothing."
    )
    f = st.file_uploader("Generations file", type=["csv", "jsonl"], key="wording_gen_file")
    into = st.text_input("Into WISE study (optional; created if new)", key="wording_gen_study")
    if st.button("Import generations", type="primary", key="wording_gen_import", disabled=f is None):
        try:
            out = generations.import_generations(eng, principal, data=f.getvalue(), filename=f.name, study=into)
            st.success(f"{out['rows']} rows: {out['written']} written, {out['existing']} already stored.")
        except wording.ImportFailed as exc:
            _problems(exc)
        except ValueError as exc:
            _problems(exc)

with existing:
    studies = wording.list_studies(eng, principal)
    if studies.empty:
        st.info("No wording study yet.")
    else:
        st.dataframe(studies.drop(columns=["params"]), hide_index=True, key="wording_studies")
        names = dict(zip(studies["id"], studies["name"]))
        sid = int(st.selectbox("Study", list(names), format_func=names.get, key="wording_design_study"))
        st.markdown("**Annotator progress**")
        prog = wording.study_progress(eng, principal, study_id=sid)
        if prog.empty:
            st.info("No ratings yet.")
        else:
            st.dataframe(prog, hide_index=True)
        st.markdown("**Items** (unblinded; annotators never see the form)")
        st.dataframe(wording.study_items(eng, principal, study_id=sid), hide_index=True)

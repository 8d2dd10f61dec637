"""Export: every score table, per-instance p_u, the human records and the manifest, as one zip
(the same files as ``python -m reform_core export``; docs/formats.md#exports)."""

from datetime import datetime, timezone

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import md, md_lines
from pages.components.session import require_page
from reform_core.estimators.base import names as estimator_names
from reform_core.services.project import explore
from reform_core.services.scoring.scoring import ScoringError

principal = require_page("export")
st.title("Export")
st.caption(
    "Tables as CSV, Parquet and JSON; `instances.csv` with p_u and every judge's label; adjudication and "
    "rating records; `manifest.json` with versions, judges, sample plans, the calibration rule and a SHA-256 "
    "per file. Check an export with `python -m reform_core score-export DIR --json`."
)

pair = explore.pair(state.engine(), principal)
if pair.pair:
    st.caption(f"Scoring pair: {md(pair.describe())}.")
else:
    st.warning(f"Cannot export calibrated scores yet: {md(pair.message)}")

c1, c2 = st.columns(2)
calibration = c1.selectbox(
    "Estimator",
    estimator_names(),
    key="export_calibration",
    help="cluster: the default estimator (question-cluster plan; exports both intervals, "
    "the audit's both-wrong rates and the cluster totals); stratified / pooled: the "
    "paper's rules.",
)
seed = c2.number_input("Bootstrap seed (intervals)", min_value=0, value=0, step=1, key="export_seed")
if st.button("Run export", type="primary", key="export_run"):
    try:
        with st.spinner("Scoring, bootstrapping intervals and writing files…"):
            data, manifest = explore.export_archive(state.engine(), principal, calibration=calibration, seed=int(seed))
    except ScoringError as exc:
        st.error(f"Cannot export: {md_lines(exc)}")
    else:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        st.session_state["export_result"] = (f"reform-export-{calibration}-{stamp}.zip", data, manifest)

if "export_result" in st.session_state:
    name, data, manifest = st.session_state["export_result"]
    st.success(
        f"Export ready: {len(manifest['files']) + 1} files, {len(data) / 1024:,.0f} KiB zipped"
        + (" — provisional scores (some strata have no review yet)." if manifest["calibration"]["provisional"] else ".")
    )
    st.download_button(
        "Download export (zip)",
        data,
        file_name=name,
        mime="application/zip",
        type="primary",
        key="export_download",
        on_click="ignore",
    )
    st.dataframe(
        pd.DataFrame({"file": list(manifest["files"]), "sha256": list(manifest["files"].values())}), hide_index=True
    )
    with st.expander("manifest.json", expanded=False):
        st.json(manifest)

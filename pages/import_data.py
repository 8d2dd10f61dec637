"""Import: a plain table of any benchmark (CSV or Parquet), with a column mapping and a bundled or
own catalog (leads)."""

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import md
from pages.components.session import require_page
from reform_core.services.data import catalogs, table_import

principal = require_page("import_data")
eng = state.engine()
st.title("Import")
st.caption(
    "One row per (model, prompt, constraint), with optional response text, judge labels and rationales "
    "(the CLI's `import-table`). Nothing is written unless every row is valid; every problem is listed "
    "with its line (CSV) or row (Parquet), column and field. Bundles and IFEval files: "
    "`python -m reform_core import` / `import-ifeval`."
)

upload = st.file_uploader("Table", type=["csv", "parquet"], key="import_table_file")
if upload is None:
    st.stop()
data = upload.getvalue()
try:
    table = table_import.read_table(data, upload.name)
except table_import.ImportFailed as exc:
    st.error("This file cannot be read.")
    st.code(str(exc), language=None, wrap_lines=True)
    st.stop()
st.caption(f"{len(table.frame)} row(s); the first ones:")
st.dataframe(table.frame.head(5).astype(str), hide_index=True)

st.subheader("Columns")
st.caption(
    "The field each column holds — "
    + ", ".join(f"`{f}`: {d}" for f, d in table_import.FIELDS.items())
    + "; `label:JUDGE` and `rationale:JUDGE` for each judge's labels (1/0, true/false, yes/no, pass/fail) "
    "and rationales. Leave a field empty to skip the column."
)
mapping = {}
for i, column in enumerate(table.frame.columns):
    value = st.text_input(
        f"Column {md(column)}", table_import.guess_field(column), key=f"import_map_{upload.file_id}_{i}"
    )
    if value.strip():
        mapping[column] = value.strip()
UPLOAD = "your own catalog file…"
c1, c2 = st.columns(2)
catalog = c1.selectbox(
    "Catalog",
    ["automatic", "reformbench", "ifeval", *catalogs.stored_names(eng), UPLOAD],
    key="import_catalog",
    help="automatic: the bundled or stored catalog that knows most features "
    "of the table; your own catalog file is kept with the project (format: docs/catalog.md; "
    "`python -m reform_core catalog-init TABLE --out catalog.yaml` writes a starter)",
)
replace = c2.checkbox("Overwrite rows that conflict with existing ones", key="import_replace")
if catalog == UPLOAD:
    own = st.file_uploader("Catalog file", type=["yaml", "yml", "json"], key="import_catalog_file")
    if own is None:
        st.stop()
    try:
        catalog = catalogs.read_upload(principal, own.getvalue(), own.name)
    except table_import.ImportFailed as exc:
        st.error("This catalog cannot be used.")
        st.code(str(exc), language=None, wrap_lines=True)
        st.stop()
    st.caption(
        f"Catalog {md(catalog.catalog.name)} version {md(catalog.catalog.version)}: {len(catalog.catalog)} feature(s)."
    )

if st.button("Import", type="primary", key="import_go"):
    try:
        out = table_import.import_upload(
            eng,
            principal,
            data,
            upload.name,
            table_import.parse_mapping([f"{c}={f}" for c, f in mapping.items()]),
            catalog=None if catalog == "automatic" else catalog,
            replace=replace,
        )
    except (table_import.ImportFailed, ValueError) as exc:
        st.error("Nothing was written.")
        st.code(str(exc), language=None, wrap_lines=True)
    else:
        state.clear_data_caches()
        st.success(f"Imported {out['rows']} row(s) against catalog {md(out['catalog'])}.")
        written = {k: out[k] for k in ("questions", "instructions", "constraints", "models", "responses", "judgments")}
        st.dataframe(pd.DataFrame([written]), hide_index=True)
        for judge, n in out["not_judged"].items():
            if n:
                st.info(f"{n} row(s) without a label from {md(judge)}: not judged, left out of its scores.")
        if out["ignored_columns"]:
            st.info("Not imported: " + ", ".join(md(c) for c in out["ignored_columns"]))

"""MOSAIC and WISE study views: cached metric reads and the WISE section of Wording results.

Study, model, form and constraint names come from imported files and are untrusted: they
appear only in dataframes, chart data, select boxes and ``st.text`` / ``st.code`` — never
in Markdown or HTML.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import tidy
from reform_core.services import mosaic, wise
from reform_core.services.auth import Principal, require

N_BOOT = 2000


# ----------------------------------------------------------------------------- cached reads
# Keyed by the study's row counts (outputs and checks are only ever added); the role check
# runs on every call before the cache is consulted.


def _version(studies: pd.DataFrame, name: str, columns: list[str]) -> tuple:
    row = studies[studies["name"] == name]
    return tuple(int(row.iloc[0][c]) for c in columns) if len(row) else ()


@st.cache_data(ttl=3600, max_entries=8, show_spinner="Bootstrapping MOSAIC intervals over prompts…")
def _mosaic(version: tuple, study: str, seed: int, _principal: Principal) -> mosaic.MosaicResults:
    return mosaic.results(state.engine(), _principal, study=study, n_boot=N_BOOT, seed=seed)


def mosaic_results(principal: Principal, studies: pd.DataFrame, study: str, seed: int) -> mosaic.MosaicResults:
    """PA / SCC / PosCC / PCC of ``study`` with 2,000-replicate prompt-bootstrap intervals."""
    require(principal, "view_scores")
    return _mosaic(_version(studies, study, ["prompts", "outputs", "checks"]), study, seed, principal)


@st.cache_data(ttl=3600, max_entries=8, show_spinner="Bootstrapping WISE intervals…")
def _wise(version: tuple, study: str, scheme: str | None, seed: int, _principal: Principal) -> wise.WiseResults:
    return wise.results(state.engine(), _principal, study=study, scheme=scheme, n_boot=N_BOOT, seed=seed)


def wise_results(principal: Principal, studies: pd.DataFrame, study: str, scheme: str | None,
                 seed: int) -> wise.WiseResults:
    """The WISE metrics of ``study`` with the paper's bootstrap intervals (2,000 replicates)."""
    require(principal, "view_scores")
    return _wise(_version(studies, study, ["outputs"]), study, scheme, seed, principal)


# ----------------------------------------------------------------------------- formatting


def pct(x) -> float | None:
    return None if x is None or pd.isna(x) else round(100 * float(x), 2)


def interval_text(lo, hi, scale: float = 100.0, digits: int = 1) -> str:
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return "—"
    return f"[{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]"


def notes(lines: list[str]) -> None:
    """Notes as plain text (they may name models or forms)."""
    for line in lines:
        st.text(f"Note: {line}")


# ----------------------------------------------------------------------------- WISE section


def wise_forms_table(res: wise.WiseResults) -> pd.DataFrame:
    """Per form: compliance and Δ (%, pp) with intervals, Holm p, ranking stability with intervals."""
    f = res.forms
    out = pd.DataFrame({"form": f.index})
    out["compliance %"] = [pct(v) for v in f["compliance"]]
    out["95% CI"] = [interval_text(lo, hi) for lo, hi in zip(f["compliance_low"], f["compliance_high"])]
    out[f"Δ vs {res.reference} (pp)"] = [pct(v) for v in f["delta"]]
    out["Δ 95% CI"] = [interval_text(lo, hi) for lo, hi in zip(f["delta_low"], f["delta_high"])]
    out["p"] = f["p_value"].to_numpy()
    out["Holm p"] = f["p_holm"].to_numpy()
    out["τ_b"] = f["tau_b"].to_numpy()
    out["τ_b 95% CI"] = [interval_text(lo, hi, 1, 3) for lo, hi in zip(f["tau_b_low"], f["tau_b_high"])]
    out["reversals %"] = [pct(v) for v in f["reversal_rate"]]
    out["reversals 95% CI"] = [interval_text(lo, hi) for lo, hi in zip(f["reversal_rate_low"], f["reversal_rate_high"])]
    out["top-3 Jaccard"] = f["top3_jaccard"].to_numpy()
    out["top-3 95% CI"] = [interval_text(lo, hi, 1, 2) for lo, hi in zip(f["top3_jaccard_low"], f["top3_jaccard_high"])]
    out["max rank shift"] = f["max_rank_shift"].to_numpy()
    out["shift 95% CI"] = [interval_text(lo, hi, 1, 1) for lo, hi in zip(f["max_rank_shift_low"],
                                                                        f["max_rank_shift_high"])]
    return out


def wise_section(principal: Principal, *, linked: str | None = None) -> None:
    """The WISE robustness results of one study (seed 002 Tables 2, 4, 5, 10, 11)."""
    st.header("WISE wording robustness")
    studies = wise.list_studies(state.engine(), principal)
    if studies.empty:
        st.info("No WISE study yet: collect generations with `wise-collect` or import them with "
                "`wording-import-generations FILE --study NAME`.")
        return
    names = list(studies["name"])
    c1, c2, c3 = st.columns([3, 2, 1])
    study = c1.selectbox("WISE study", names, index=names.index(linked) if linked in names else 0,
                         key="wise_results_study")
    schemes = ["paper's default", *wise.SCHEMES]
    scheme = c2.selectbox("Bootstrap", schemes, key="wise_results_scheme",
                          help="The paper's default per checker: provider–model–item (exact counts, JSON), item "
                               "clusters (keyword), model–item (range).")
    seed = int(c3.number_input("Seed", min_value=0, value=0, step=1, key="wise_results_seed"))
    try:
        res = wise_results(principal, studies, study, None if scheme == schemes[0] else scheme, seed)
    except ValueError as exc:
        st.text(f"Not scored: {exc}")
        return
    s = res.summary
    cols = st.columns(4)
    cols[0].metric(f"{res.reference} compliance", f"{pct(s['reference']):.1f} %")
    cols[1].metric("C_mean", f"{pct(s['c_mean']):.1f} %")
    cols[2].metric("C_worst", f"{pct(s['c_worst']):.1f} %")
    cols[3].metric("G_wording", f"{pct(s['g_wording']):.1f} pp")
    st.dataframe(pd.DataFrame([{"models": len(res.compliance), "outputs": res.outputs, "checker": res.checker,
                                "worst form": s["worst_form"], "best form": s["best_form"],
                                "C_mean 95% CI": interval_text(s["c_mean_low"], s["c_mean_high"]),
                                "C_worst 95% CI": interval_text(s["c_worst_low"], s["c_worst_high"]),
                                "G_wording 95% CI": interval_text(s["g_wording_low"], s["g_wording_high"])}]),
                 hide_index=True, key="wise_summary")
    st.caption(f"Pooled compliance weights every model equally. Intervals: {res.scheme} bootstrap, "
               f"{res.n_boot:,} replicates (seed {res.seed}); p-values from the same draws, Holm-adjusted over "
               "this study's contrasts (p = 0 means no replicate crossed zero: p < "
               f"{1 / res.n_boot:.2g}); ranking intervals resample tasks jointly across models.")
    notes(res.notes)
    table = wise_forms_table(res)
    st.dataframe(tidy(table, decimals=3), hide_index=True, key="wise_forms")  # '—' for the reference form's p
    contrasts = res.forms.drop(index=res.reference).rename_axis("form").reset_index()
    contrasts = contrasts.assign(delta=100 * contrasts["delta"], lo=100 * contrasts["delta_low"],
                                 hi=100 * contrasts["delta_high"])
    if len(contrasts):
        base = alt.Chart(contrasts).encode(y=alt.Y("form:N", sort=list(contrasts["form"]), title=None))
        st.altair_chart(
            base.mark_rule().encode(x=alt.X("lo:Q", title=f"Δ compliance vs {res.reference} (pp)"), x2="hi:Q")
            + base.mark_point(filled=True, size=80).encode(
                x="delta:Q", tooltip=["form", alt.Tooltip("delta:Q", format=".1f"), alt.Tooltip("lo:Q", format=".1f"),
                                      alt.Tooltip("hi:Q", format=".1f")]),
            width="stretch")
    st.markdown("**Compliance per model and form** (%)")
    st.dataframe((100 * res.compliance).round(1).rename_axis("model").reset_index(), hide_index=True,
                 key="wise_model_compliance")
    if not res.directions.empty:
        d = res.directions.rename_axis("form").reset_index().melt("form", var_name="direction", value_name="share")
        st.altair_chart(
            alt.Chart(d).mark_bar().encode(
                x=alt.X("form:N", sort=list(res.directions.index), title=None),
                y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of outputs"),
                color=alt.Color("direction:N"),
                tooltip=["form", "direction", alt.Tooltip("share:Q", format=".1%")]),
            width="stretch")

"""MOSAIC and WISE study views: cached metric reads and the WISE section of Wording results.

Study, model, form and constraint names come from imported files and are untrusted: they
appear only in dataframes, chart data, select boxes and ``st.text`` / ``st.code`` — never
in Markdown or HTML.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from pages.components import render, state
from pages.components.palette import direction_chart
from reform_core import display
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.studies import mosaic, wise

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


def wise_results(
    principal: Principal, studies: pd.DataFrame, study: str, scheme: str | None, seed: int
) -> wise.WiseResults:
    """The WISE metrics of ``study`` with the paper's bootstrap intervals (2,000 replicates)."""
    require(principal, "view_scores")
    return _wise(_version(studies, study, ["outputs"]), study, scheme, seed, principal)


# ----------------------------------------------------------------------------- formatting


def pct(x) -> float | None:
    return None if x is None or pd.isna(x) else round(100 * float(x), 2)


def interval_text(lo, hi, scale: float = 100.0) -> str:
    """``lo–hi`` (shares shown ×``scale``) to the places its half-width supports; "—" when missing."""
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return display.MISSING
    lo, hi = scale * float(lo), scale * float(hi)
    return display.interval_text(lo, hi, display.decimals_for(lo, hi))


def notes(lines: list[str]) -> None:
    """Notes as plain text (they may name models or forms)."""
    for line in lines:
        st.text(f"Note: {line}")


def mosaic_pa_table(res: mosaic.MosaicResults) -> display.Table:
    """Prompt-level accuracy and all-followed share per model (%), each to the places its
    interval supports, with the output counts."""
    pa = res.pa.join(res.counts, on="model")
    b = display.TableBuilder(pa[["model"]])
    for key, label in (("pa", "PA %"), ("all_followed", "all followed %")):
        b.estimate(
            label,
            100 * pa[key],
            100 * pa[f"{key}_low"],
            100 * pa[f"{key}_high"],
            n=pa["n"],
            unit="prompts",
            interval=label.replace(" %", " 95% CI"),
        )
    for c in ("outputs", "checked", "unchecked"):
        b.column(c, pa[c], 0)
    return b.build()


def strong_pairs_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """The constraint pairs the paper reports (|r| > 0.2, p < 0.05): PCC in %, r, p as text."""
    return pd.DataFrame(
        {
            "constraint i": pairs["constraint_i"],
            "constraint j": pairs["constraint_j"],
            "n": pairs["n"],
            "PCC %": (100 * pairs["pcc"]).round(1),
            "Pearson r": pairs["r"].round(3),
            "p": [display.p_value_text(v) for v in pairs["p_value"]],
        }
    )


# ----------------------------------------------------------------------------- WISE section


COEFFICIENT = {"coarsest": 1, "finest": 3, "default": 3, "min_units": 0, "max_width": float("inf")}


def wise_forms_table(res: wise.WiseResults) -> display.Table:
    """Per form: compliance and Δ (%, pp) with intervals, p and Holm p, ranking stability with
    intervals — each point to the places its interval supports (docs/display.md)."""
    f = res.forms
    b = display.TableBuilder(pd.DataFrame({"form": list(f.index)}))

    def est(label, key, scale=100.0, interval=None, **rule):
        b.estimate(label, scale * f[key], scale * f[f"{key}_low"], scale * f[f"{key}_high"], interval=interval, **rule)

    est("compliance %", "compliance")
    f = f.assign(delta=f["delta"].where(f.index != res.reference))  # the reference has no contrast: "—"
    est(f"Δ vs {res.reference} (pp)", "delta", interval="Δ 95% CI")
    b.column("p", [display.p_value_text(v, replicates=res.n_boot) for v in f["p_value"]])  # bootstrap p-values
    b.column("Holm p", [display.p_value_text(v, replicates=res.n_boot) for v in f["p_holm"]])
    est("τ_b", "tau_b", 1.0, **COEFFICIENT)
    est("reversals %", "reversal_rate")
    est("top-3 Jaccard", "top3_jaccard", 1.0, interval="top-3 95% CI", **COEFFICIENT)
    est(
        "max rank shift",
        "max_rank_shift",
        1.0,
        interval="shift 95% CI",
        finest=1,
        default=1,
        min_units=0,
        max_width=float("inf"),
    )
    return b.build()


def agreement_table(agreement: pd.DataFrame) -> display.Table:
    """κ, α and the ICCs with their intervals, each to the places its interval supports; the note
    says why a statistic is missing."""
    b = display.TableBuilder(agreement[["measure", "statistic"]])
    b.estimate("value", agreement["value"], agreement["ci_low"], agreement["ci_high"], interval="95% CI", **COEFFICIENT)
    b.column("note", agreement["note"])
    return b.build()


def shown_metric(value, lo, hi, unit: str) -> str:
    """A headline number (st.metric) to the places its interval supports."""
    return f"{display.number_text(value, display.decimals_for(lo, hi))} {unit}"


def _wise_controls(names: list[str], linked: str | None) -> tuple[str, str | None, int]:
    """The study, bootstrap scheme (None: the paper's default) and seed pickers of the WISE section."""
    c1, c2, c3 = st.columns([3, 2, 1])
    study = c1.selectbox(
        "WISE study", names, index=names.index(linked) if linked in names else 0, key="wise_results_study"
    )
    schemes = ["paper's default", *wise.SCHEMES]
    scheme = c2.selectbox(
        "Bootstrap",
        schemes,
        key="wise_results_scheme",
        help="The paper's default per checker: provider–model–item (exact counts, JSON), item "
        "clusters (keyword), model–item (range).",
    )
    seed = int(c3.number_input("Seed", min_value=0, value=0, step=1, key="wise_results_seed"))
    return study, None if scheme == schemes[0] else scheme, seed


def _wise_summary(res: wise.WiseResults) -> None:
    """The WISE headline metrics, the one-row summary table and the caption on its intervals."""
    s = res.summary
    ref = res.forms.loc[res.reference]
    cols = st.columns(4)
    cols[0].metric(
        f"{res.reference} compliance",
        shown_metric(pct(s["reference"]), pct(ref["compliance_low"]), pct(ref["compliance_high"]), "%"),
    )
    for col, key, unit in ((cols[1], "c_mean", "%"), (cols[2], "c_worst", "%"), (cols[3], "g_wording", "pp")):
        col.metric(
            key[0].upper() + key[1:], shown_metric(pct(s[key]), pct(s[f"{key}_low"]), pct(s[f"{key}_high"]), unit)
        )
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "models": len(res.compliance),
                    "outputs": res.outputs,
                    "checker": res.checker,
                    "worst form": s["worst_form"],
                    "best form": s["best_form"],
                    **{
                        f"{k[0].upper() + k[1:]} 95% CI": interval_text(s[f"{k}_low"], s[f"{k}_high"])
                        for k in ("c_mean", "c_worst", "g_wording")
                    },
                }
            ]
        ),
        hide_index=True,
        key="wise_summary",
    )
    st.caption(
        f"Pooled compliance weights every model equally. Intervals: {res.scheme} bootstrap, "
        f"{res.n_boot:,} replicates (seed {res.seed}); p-values from the same draws, Holm-adjusted over "
        "this study's contrasts (p < 1/replicates where no replicate crossed zero); ranking intervals resample "
        "tasks jointly across models."
    )


def _wise_contrast_chart(res: wise.WiseResults) -> None:
    """Each form's compliance difference from the reference form, with its interval (none if no other form)."""
    contrasts = res.forms.drop(index=res.reference).rename_axis("form").reset_index()
    contrasts = contrasts.assign(
        delta=100 * contrasts["delta"], lo=100 * contrasts["delta_low"], hi=100 * contrasts["delta_high"]
    )
    if len(contrasts):
        base = alt.Chart(contrasts).encode(y=alt.Y("form:N", sort=list(contrasts["form"]), title=None))
        st.altair_chart(
            base.mark_rule().encode(x=alt.X("lo:Q", title=f"Δ compliance vs {res.reference} (pp)"), x2="hi:Q")
            + base.mark_point(filled=True, size=80).encode(
                x="delta:Q",
                tooltip=[
                    "form",
                    alt.Tooltip("delta:Q", format=".1f"),
                    alt.Tooltip("lo:Q", format=".1f"),
                    alt.Tooltip("hi:Q", format=".1f"),
                ],
            ),
            width="stretch",
        )


def wise_section(principal: Principal, *, linked: str | None = None) -> None:
    """The WISE robustness results of one study (the WISE paper's Tables 2, 4, 5, 10 and 11; docs/metrics.md#wording-robustness)."""
    st.header("WISE wording robustness")
    studies = wise.list_studies(state.engine(), principal)
    if studies.empty:
        st.info(
            "No WISE study yet: collect generations with `wise-collect` or import them with "
            "`wording-import-generations FILE --study NAME`."
        )
        return
    study, scheme, seed = _wise_controls(list(studies["name"]), linked)
    try:
        res = wise_results(principal, studies, study, scheme, seed)
    except ValueError as exc:
        st.text(f"Not scored: {exc}")
        return
    _wise_summary(res)
    notes(res.notes)
    st.dataframe(render.styled(wise_forms_table(res)), hide_index=True, key="wise_forms")  # '—' for the reference form
    _wise_contrast_chart(res)
    st.markdown("**Compliance per model and form** (%)")
    st.dataframe(
        (100 * res.compliance).round(1).rename_axis("model").reset_index(), hide_index=True, key="wise_model_compliance"
    )
    if not res.directions.empty:
        st.markdown("**Failure direction per form** (share of outputs, equal weight per model)")
        st.altair_chart(direction_chart(res.directions, list(res.forms.index)), width="stretch")

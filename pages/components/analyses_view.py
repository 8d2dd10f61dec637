"""The Scores page's appendix tabs and auxiliary analyses (issue 17).

Every tab is drawn inside its own guard: a table that cannot be computed says why in its
tab and never takes the other tabs down. The auxiliary analyses state their calibration
rule and interval methods and offer the list of what they left out as a download.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional

import pandas as pd
import streamlit as st

from pages.components import analyses_charts as charts
from pages.components import render
from pages.components.palette import model_order
from reform_core import analyses_display
from reform_core.safe_csv import csv_text
from reform_core.services.accounts.auth import Principal
from reform_core.services.platform.background import Latest, Refreshers
from reform_core.services.scoring.analyses import (
    N_BOOT,
    RULES,
    AnalysesResult,
    StaticAnalyses,
    analyses,
    inputs_version,
    static_analyses,
    static_version,
    with_static,
)

RULE_LABELS = {"pooled": "Pooled rule (the paper's, default)", "stratified": "Stratified per condition"}


@st.cache_resource(ttl=600, max_entries=2, show_spinner="Computing A4 coverage and Table 4…")
def _static(url: str, version: tuple, _principal: Principal) -> StaticAnalyses:
    # read neither judgments nor decisions: kept across decisions (version without them)
    return static_analyses(render.state.engine(), _principal, n_boot=N_BOOT, seed=0)


@st.cache_resource(show_spinner=False)
def _refreshers() -> Refreshers:
    return Refreshers(max_keys=4)


def latest_analyses(
    principal: Principal, version: tuple, rule: str, judge: Optional[str], frames
) -> Latest[AnalysesResult]:
    """The decision-dependent analyses of ``version``: computed in the call the first time,
    afterwards in the background after a decision (the last ones shown meanwhile, marked
    updating); the recomputation begins when the page calls :func:`start_pending` at its end."""
    engine = render.state.engine()

    # the scored frames of the page (same data version) are reused: no second load of the project
    # computed without the static part (an empty one): the page adds the current one to whatever value it shows
    def fn():
        return analyses(
            engine, principal, rule=rule, judge=judge, n_boot=N_BOOT, seed=0, frames=frames, static=StaticAnalyses()
        )

    return _refreshers()((str(engine.url), rule, judge)).get(version, fn, start=False)


def start_pending(rule: Optional[str], judge: Optional[str]) -> None:
    """Begin the analyses' background recomputation the page asked for (end of the Scores page)."""
    if rule is not None:
        _refreshers()((str(render.state.engine().url), rule, judge)).start()


def analyses_updating(rule: str, judge: Optional[str]) -> bool:
    """Whether the analyses of ``rule`` are being (or are about to be) recomputed."""
    return _refreshers()((str(render.state.engine().url), rule, judge)).busy()


def guarded(name: str, draw: Callable[[], None]) -> None:
    """Run ``draw``; on any error say so in place (the rest of the page keeps rendering)."""
    try:
        draw()
    except Exception as exc:  # noqa: BLE001 - one table's failure must not hide the others
        st.warning(f"{name} is not available: {render.md(type(exc).__name__ + ': ' + str(exc)[:500])}")


def _interval_note(res: AnalysesResult) -> str:
    iv = res.intervals
    return (
        f"95 % intervals ({res.n_boot} replicates, seed {res.seed}) — population: {iv['population']}; "
        f"measurement: {iv['measurement']}."
    )


def _show(res: AnalysesResult, key: str, chart=None) -> None:
    """One analysis: its chart (if any) and its readable table, rounded as docs/display.md says."""
    if key not in res.tables:
        return
    df = res.tables[key]
    if chart is not None and len(df):
        st.altair_chart(chart(df, page_models(res)), width="stretch")
        st.caption(charts.INTERVAL_LEGEND)
    st.dataframe(render.styled(analyses_display.readable(key, df)), hide_index=True, key=f"aux_{key}")


def page_models(res: AnalysesResult) -> list[str]:
    """Every model of the analyses (and the pooled row): one colour each in every chart of the page."""
    return model_order({m for t in res.tables.values() if "model" in t.columns for m in t["model"]})


def _table3(res: AnalysesResult) -> None:
    st.caption(
        "Separate (single-constraint) vs joint answering of the same constraints (§4.3, App. A.8), on "
        "complete, consistent groups only; Δ = joint − separate; n = pair groups (all pass) or targets. "
        + _interval_note(res)
    )
    _show(res, "table3_composition", charts.composition)
    if "composition_targets" in res.tables:
        with st.expander("Per-target rates (Figure 4)"):
            st.dataframe(analyses_display.targets(res.tables["composition_targets"]), hide_index=True)
    _notes(res, "composition")


def _prompting(res: AnalysesResult) -> None:
    st.caption(
        "Same instructions, same baseline and eligible units, on complete, consistent pairs; Δ = prompted "
        "− main in pp (§4.4). " + _interval_note(res)
    )
    _show(res, "prompting", charts.prompting)
    _notes(res, "prompting")


def _coverage(res: AnalysesResult) -> None:
    st.caption(
        "Instance coverage of open-ended extractions by the catalog (App. A.4, Table A4); not_format "
        f"instances excluded. Intervals — population: {res.intervals['population']}; measurement: "
        f"{res.intervals['measurement_coverage']}."
    )
    _show(res, "table_a4_coverage", charts.coverage)
    _notes(res, "coverage")


def _table4(res: AnalysesResult) -> None:
    st.caption(
        "Feature frequencies over the common question set, unannotated catalog features kept at 0; "
        f"Spearman ρ with average ranks (App. A.4, Table 4). Intervals — population: "
        f"{res.intervals['population']}; measurement: {res.intervals['measurement_table4']}."
    )
    if "table4_correlation" in res.tables:
        df = res.tables["table4_correlation"]
        st.altair_chart(charts.correlation(df, page_models(res)), width="stretch")
        st.dataframe(render.styled(analyses_display.correlation(df)), hide_index=True, key="aux_table4_correlation")
    if "table4_frequency" in res.tables:
        freq = res.tables["table4_frequency"]
        st.altair_chart(charts.frequency(freq, page_models(res)), width="stretch")
        with st.expander("Frequencies per feature and model (% of the common questions)"):
            st.dataframe(analyses_display.frequency(freq), hide_index=True)
    _notes(res, "table4")


def _notes(res: AnalysesResult, key: str) -> None:
    for n in res.notes.get(key, []):
        st.info(render.md(n))
    if key in res.errors:
        st.warning(f"Not available: {render.md(res.errors[key])}")


def _table(tables: dict[str, pd.DataFrame], key: str, caption: str = "", missing: str = "") -> Callable[[], None]:
    """The drawing of one appendix table (for :func:`guarded`)."""

    def draw():
        if caption:
            st.caption(caption)
        if key in tables:
            st.dataframe(tables[key], hide_index=True)
        else:
            st.info(missing or f"{key} is not available for these labels.")

    return draw


def _appendix_tabs(emcr_applies: bool) -> dict:
    """The appendix tabs by name (A8 and A2 only where EMCR applies)."""
    names = (["A8 eligible units", "A2 violation spread"] if emcr_applies else []) + [
        "A3 judge agreement",
        "A5 tasks",
        "A6/A7 per task",
        "Table 3 composition",
        "Prompting comparison",
        "A4 coverage",
        "Table 4 frequencies",
    ]
    return dict(zip(names, st.tabs(names)))


def _score_tabs(tabs: dict, tables: dict[str, pd.DataFrame], *, emcr_applies: bool) -> None:
    """The tabs drawn from the score tables: A8 and A2 (where EMCR applies), A3, A5, A6/A7."""
    table = functools.partial(_table, tables)
    if emcr_applies:
        with tabs["A8 eligible units"]:
            guarded("A8", table("a8", "Eligible units per K and mean coverage |I| (App. A.1)."))
        with tabs["A2 violation spread"]:
            guarded("A2", table("a2", "Ĉ^(K): expected violated variants per failed unit (App. A.2)."))
    with tabs["A3 judge agreement"]:
        guarded("A3", table("a3", missing="Judge agreement needs the scoring pair."))
    with tabs["A5 tasks"]:
        guarded(
            "A5",
            table(
                "a5",
                "Mean TCPR / EMCR over models, each model weighted equally; models, models_tcpr "
                "and models_emcr say how many models answer the task and how many each mean covers "
                "(a model with no eligible unit in a task has no EMCR there).",
            ),
        )
    with tabs["A6/A7 per task"]:
        guarded("A6/A7", table("a6_a7", "Per model and task type; rows with pooled = true are over all tasks."))


@dataclass
class _Auxiliary:
    """What the Table 3 tab loaded: the auxiliary analyses (None if unavailable) and their rule."""

    res: Optional[AnalysesResult] = None
    rule: str = "pooled"


def _load_auxiliary(aux: _Auxiliary, principal: Principal, result, judge: Optional[str]) -> None:
    """Pick the calibration rule (without a judge) and load the auxiliary analyses into ``aux``."""
    if judge is None:
        aux.rule = st.radio(
            "Calibration of the auxiliary analyses",
            list(RULES),
            format_func=RULE_LABELS.get,
            horizontal=True,
            key="scores_aux_rule",
        )
    data, inputs = render.data_version(), inputs_version(render.state.engine())
    part = _static(str(render.state.engine().url), static_version(data, inputs), principal)
    got = latest_analyses(principal, (*data, *inputs), aux.rule, judge, getattr(result, "frames", None))
    if got.value is None:
        raise RuntimeError(got.error or "not computed")
    # A4 coverage and Table 4 always from the current static part (kept apart, recomputed in the
    # call when their inputs change), even while the other analyses are being recomputed
    aux.res = with_static(got.value, part)
    if not got.fresh:
        st.caption(
            "⏳ Auxiliary analyses updating: these tables are from before the latest decisions and are being recomputed."
        )
    st.caption(render.md(aux.res.rule_text[0].upper() + aux.res.rule_text[1:] + "."))


def _auxiliary_tab(principal: Principal, result, judge: Optional[str]) -> _Auxiliary:
    """The Table 3 tab: the auxiliary analyses loaded (guarded), then Table 3 (guarded)."""
    aux = _Auxiliary()
    guarded("The auxiliary analyses", lambda: _load_auxiliary(aux, principal, result, judge))
    res = aux.res
    if res is not None:
        guarded("Table 3", lambda: _table3(res))
    return aux


def _auxiliary_tabs(tabs: dict, res: Optional[AnalysesResult]) -> None:
    """The prompting, A4 coverage and Table 4 tabs, or a pointer to Table 3's reason where unavailable."""
    for name, draw in (
        ("Prompting comparison", _prompting),
        ("A4 coverage", _coverage),
        ("Table 4 frequencies", _table4),
    ):
        with tabs[name]:
            if res is None:
                st.info("The auxiliary analyses are not available (see the Table 3 tab).")
            else:
                guarded(name, lambda d=draw: d(res))


def appendix(
    principal: Principal, result, tables: dict[str, pd.DataFrame], *, emcr_applies: bool, judge: Optional[str]
) -> str:
    """The appendix tabs of the Scores page, each guarded, then the auxiliary analyses; returns
    the analyses' calibration rule (for :func:`start_pending`)."""
    tabs = _appendix_tabs(emcr_applies)
    _score_tabs(tabs, tables, emcr_applies=emcr_applies)
    with tabs["Table 3 composition"]:
        aux = _auxiliary_tab(principal, result, judge)
    _auxiliary_tabs(tabs, aux.res)
    if aux.res is not None and len(aux.res.exclusions):
        _exclusions(aux.res.exclusions)
    return aux.rule


def _exclusions(exclusions: pd.DataFrame) -> None:
    """What Table 3 and prompting left out, counted, and the list as a (formula-safe) CSV download."""
    counts = exclusions.groupby(["analysis", "reason"]).size().rename("groups").reset_index()
    st.markdown("**Left out of Table 3 / prompting** — incomplete or inconsistent pairs:")
    st.dataframe(counts, hide_index=True)
    st.download_button(
        "Download the list of left-out groups (CSV)",
        csv_text(exclusions),
        file_name="analysis_exclusions.csv",
        mime="text/csv",
        key="scores_aux_exclusions",
    )

"""Shared render helpers (inert rendering of untrusted text, badges, score tables, heatmaps)
and the cached analysis reads the Scores / Explore pages share.

Response text comes from evaluated models and is untrusted: :func:`safe_markdown_html`
renders it with markdown-it (raw HTML escaped, links and images shown as plain text, no
URL is ever followed), and :func:`show_markdown` passes the result through ``st.html``
(which sanitises again with DOMPurify and runs no JavaScript).
"""

from __future__ import annotations

import html
import math
import re
from datetime import datetime
from typing import Optional

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
from markdown_it import MarkdownIt

from pages.components import state
from reform_core import display
from reform_core.services.accounts.auth import Principal, require, require_any
from reform_core.services.project import explore
from reform_core.services.scoring.scoring import SMALL_SHARE  # noqa: F401 - the Scores page's threshold

# ----------------------------------------------------------------------------- untrusted text

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def _link_open(self, tokens, idx, options, env):
    return '<span class="reform-link">'


def _link_close(self, tokens, idx, options, env):
    href = ""
    for t in reversed(tokens[:idx]):  # the matching link_open
        if t.type == "link_open":
            href = t.attrGet("href") or ""
            break
    return f"</span> <code>&lt;{html.escape(href)}&gt;</code>" if href else "</span>"


def _image(self, tokens, idx, options, env):
    t = tokens[idx]
    alt_text = "".join(c.content for c in (t.children or []))
    return f"<code>[image: {html.escape(alt_text)} &lt;{html.escape(t.attrGet('src') or '')}&gt;]</code>"


_md.add_render_rule("link_open", _link_open)
_md.add_render_rule("link_close", _link_close)
_md.add_render_rule("image", _image)


_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
# GFM autolink literals (``http://…``, ``www.…``, ``a@b.c``) are found in the text *after*
# backslash escapes are resolved (remark-gfm's find-and-replace), so escaping cannot stop them;
# an invisible word joiner (U+2060) after the scheme / before ``.`` and ``@`` does.
_AUTOLINK = re.compile(r"(?i)(https?|ftp|www)(?=[:.])|(?=@)")
WORD_JOINER = "\u2060"


def md(value) -> str:
    """``value`` as Markdown that shows exactly its text, on one line: for untrusted names and
    keys inside Markdown-interpreted strings (titles, captions, alerts, labels, options).

    Every ASCII punctuation character is backslash-escaped (CommonMark allows that for all of
    them), so no link, image, HTML tag, emphasis, directive (``:red[…]``, ``:material/…:``) or
    LaTeX can form; an invisible word joiner keeps ``http://``, ``www.`` and ``@`` from being
    autolinked; line breaks become spaces.
    """
    text = "" if value is None else str(value)
    text = _AUTOLINK.sub(lambda m: (m.group(1) or "") + WORD_JOINER, " ".join(text.split()))
    return _MD_PUNCTUATION.sub(r"\\\1", text)


def safe_markdown_html(text: Optional[str], *, heading_offset: int = 0) -> str:
    """Markdown → inert HTML: raw HTML escaped, no clickable link, no loaded image.

    ``heading_offset`` demotes headings (``#`` becomes ``h{1 + offset}``, at most ``h6``), so
    headings inside a response render smaller than the page's own.
    """
    if not heading_offset:
        return _md.render(text or "")
    tokens = _md.parse(text or "")
    for t in tokens:
        if t.type in ("heading_open", "heading_close"):
            t.tag = f"h{min(6, int(t.tag[1:]) + heading_offset)}"
    return _md.renderer.render(tokens, _md.options, {})


# Headings inside untrusted Markdown are never larger than the page's own smallest heading
# (st.subheader, ~1.5rem): a model's "# Title" must not outrank the page; a response renders inside
# a bordered, scrollable box (``box=True``), visibly apart from the page (issue 34). A constant
# stylesheet (no data in it): app.py adds it once per run, a style-only st.html takes no space.
MARKDOWN_CSS = (
    "<style>.reform-md h1,.reform-md h2,.reform-md h3,.reform-md h4,.reform-md h5,.reform-md h6"
    "{font-size:1rem;font-weight:600;line-height:1.4;margin:.6rem 0 .3rem;padding:0}"
    ".reform-md h1,.reform-md h2{font-size:1.1rem}"
    ".reform-box{border:1px solid rgba(128,128,128,.35);border-radius:.5rem;padding:.5rem 1rem;"
    "max-height:32rem;overflow:auto;margin-bottom:.5rem}</style>"
)


def show_markdown(text: Optional[str], *, heading_offset: int = 0, box: bool = False) -> None:
    """Render untrusted Markdown inertly (see module docstring; ``heading_offset`` as in
    :func:`safe_markdown_html`), headings capped by :data:`MARKDOWN_CSS` (added by ``app.py``);
    ``box``: inside a bordered, scrollable box (a response)."""
    cls = "reform-md reform-box" if box else "reform-md"
    st.html(f'<div class="{cls}">{safe_markdown_html(text, heading_offset=heading_offset)}</div>')


def show_raw(text: Optional[str]) -> None:
    """The exact text with line numbers (what the judges saw)."""
    st.code(text or "", language=None, line_numbers=True, wrap_lines=True)


# ----------------------------------------------------------------------------- small formatters


def label_text(value) -> str:
    """Judge / human label 1 → 'pass', 0 → 'fail', missing → '—'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return "pass" if float(value) >= 0.5 else "fail"


def p_badge(p) -> str:
    """A Markdown badge for a calibrated pass probability p_u (green ≥ .9, red ≤ .1, orange between)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ":gray-badge[p = n/a]"
    colour = "green" if p >= 0.9 else "red" if p <= 0.1 else "orange"
    return f":{colour}-badge[p = {p:.2f}]"


def _ci(lo, hi) -> str:
    """``lo–hi`` to the places its half-width supports (docs/display.md); "—" when missing."""
    return display.interval_text(lo, hi, display.decimals_for(lo, hi))


def metric_definitions(descriptions) -> list[str]:
    """What the Scores page's metrics mean (issue 15 item 17), worded for this benchmark: one
    Markdown line per metric of ``descriptions`` (:mod:`reform_core.metrics.descriptions`)."""
    lines = [f"**{md(t.label)}** ({md(t.name)}): {md(t.definition)}" for t in descriptions.display()]
    return lines + [
        "Every rate is a percentage; **n** is its denominator (prompts for TCPR"
        + (", eligible units for the others)." if descriptions.emcr else ").")
    ]


_METRIC_HELP = {
    "TCPR": "Share of prompts meeting all of their constraints (%).",
    "EMCR": "Equal-weight multi-constraint correction rate: (R¹ + R² + R³) / 3 (%).",
    **{
        f"R{k}": f"Joint correction rate at K = {k}: share of eligible units of {k} baseline-opposed "
        "target(s) met in every variant that asks for them (%)."
        for k in (1, 2, 3)
    },
}
_DENOMINATORS = {"instructions": "TCPR", "units": "EMCR", "n1": "R1", "n2": "R2", "n3": "R3"}


def table2_columns(shown: pd.DataFrame, descriptions=None) -> dict:
    """Column settings that keep :func:`table2_display` within the page at 1400 px: short
    headers ("meas.", "pop.", "n") with the full meaning in each header's tooltip (worded for
    this benchmark from ``descriptions`` when given). The rates carry no number format:
    :func:`styled` shows each to the places its interval supports."""
    config = {}
    tips = {t.label: t.tooltip for t in descriptions.texts} if descriptions is not None else {}
    for c in shown.columns:
        if c in _METRIC_HELP:
            config[c] = st.column_config.NumberColumn(
                c.replace("R1", "R¹").replace("R2", "R²").replace("R3", "R³"),
                help=tips.get(c, _METRIC_HELP[c]) + " " + ROUNDING_HELP,
            )
        elif c.endswith(" 95% CI"):
            config[c] = st.column_config.TextColumn("95% CI", help=f"95 % interval of {c.split()[0]}")
        elif c.endswith(" measurement"):
            config[c] = st.column_config.TextColumn(
                "meas.",
                help=f"95 % measurement interval of {c.split()[0]}: "
                "this fixed benchmark's score (questions held fixed)",
            )
        elif c.endswith(" population"):
            config[c] = st.column_config.TextColumn(
                "pop.", help=f"95 % population interval of {c.split()[0]}: adds the questions' own sampling"
            )
        elif c in _DENOMINATORS:
            # narrow: a denominator's digits, not its header, set the width (Table 2 fits 1400 px)
            digits = len(f"{int(shown[c].max() if len(shown) else 0):,}")
            config[c] = st.column_config.NumberColumn(
                "n", help=f"Denominator of {_DENOMINATORS[c]}: {c}", width=max(44, 12 + 9 * digits)
            )
    return config


ROUNDING_HELP = (
    "Shown to the places its interval supports (docs/display.md); greyed with 'too few' where fewer "
    f"than {display.MIN_UNITS} units or an interval wider than {display.MAX_WIDTH_PP:g} pp."
)


def table2_table(
    t2: pd.DataFrame,
    ci: Optional[pd.DataFrame],
    *,
    emcr: bool = True,
    kinds: tuple[str, ...] = ("measurement", "population"),
) -> display.Table:
    """Table 2 as shown (:class:`reform_core.display.Table`): per metric the rate rounded to what
    its first ``kinds`` interval supports, the 95 % intervals of ``kinds`` (``<METRIC> <kind>``) and
    the denominator (instructions for TCPR, eligible units for the others); a rate over too few
    units greyed with "too few units (n = 3)" in place of its intervals. ``ci``: long frame
    ``model, metric, measurement_lo/_hi, population_lo/_hi`` (an interval the data cannot support
    may be missing: a dash); ``emcr=False`` keeps TCPR only."""
    b = display.TableBuilder(t2[["model"]])
    dens = {
        "tcpr": ("instructions", t2["n_instructions"]),
        "emcr": ("units", t2["n1"] + t2["n2"] + t2["n3"]),
        "r1": ("n1", t2["n1"]),
        "r2": ("n2", t2["n2"]),
        "r3": ("n3", t2["n3"]),
    }
    have = ci is not None and not ci.empty
    # (model, metric) → (lo, hi) per kind, by plain dict lookups (a .loc per cell cost ~0.1 s per rerun)
    bounds = (
        {kind: dict(zip(zip(ci["model"], ci["metric"]), zip(ci[f"{kind}_lo"], ci[f"{kind}_hi"]))) for kind in kinds}
        if have
        else {kind: {} for kind in kinds}
    )
    for metric in ("tcpr", "emcr", "r1", "r2", "r3") if emcr else ("tcpr",):
        name, n = dens[metric]
        iv = {kind: [bounds[kind].get((m, metric), (None, None)) for m in t2["model"]] for kind in kinds}
        first, *rest = kinds
        label = metric.upper()
        b.estimate(
            label,
            t2[metric],
            [x[0] for x in iv[first]],
            [x[1] for x in iv[first]],
            n=n.to_numpy(),
            unit="instructions" if metric == "tcpr" else "units",
            interval=f"{label} {first}",
            extra=tuple((f"{label} {k}", [x[0] for x in iv[k]], [x[1] for x in iv[k]]) for k in rest) if have else (),
        )
        if not have:  # no intervals yet: the points to the default places, no interval columns
            b.drop(f"{label} {first}")
        b.column(name, n.astype(int).to_numpy(), 0)
    return b.build()


def table2_display(
    t2: pd.DataFrame,
    ci: Optional[pd.DataFrame],
    *,
    emcr: bool = True,
    kinds: tuple[str, ...] = ("measurement", "population"),
) -> pd.DataFrame:
    """The values of :func:`table2_table` (rounded rates, interval texts, denominators)."""
    return table2_table(t2, ci, emcr=emcr, kinds=kinds).frame


def population_display(t2: pd.DataFrame, ci: Optional[pd.DataFrame], *, emcr: bool = True) -> display.Table:
    """Table 2's rates with their 95 % *population* intervals only (model, then per metric the
    rate, rounded by that interval, and ``<METRIC> population``); None-safe as :func:`table2_table`."""
    out = table2_table(t2, ci, emcr=emcr, kinds=("population",))
    return out.select([c for c in out.frame.columns if c not in _DENOMINATORS])


def styled(table: display.Table):
    """A :class:`reform_core.display.Table` for ``st.dataframe``: each number to its places, a
    too-few estimate greyed. Numbers stay numbers (the table still sorts; whole ones as
    integers), except in a column with a missing value, which becomes text with "—" (as
    :func:`tidy` does)."""
    frame, places = table.frame.copy(), table.decimals
    text = table.text()
    for c in frame.columns:
        if frame[c].isna().any() and (places[c].notna().any() or frame[c].isna().all()):
            frame[c] = text[c]
        elif places[c].notna().all() and len(frame) and (places[c] == 0).all():
            frame[c] = frame[c].astype("int64")
    sty = frame.style
    for c in frame.columns:
        if not pd.api.types.is_float_dtype(frame[c]):
            continue
        for d in places[c].dropna().unique():
            rows = places.index[places[c] == d]
            sty = sty.format(f"{{:.{int(d)}f}}", subset=pd.IndexSlice[rows, [c]])
    grey = np.where(table.greyed.to_numpy(), f"color: {GREY}", "")
    return sty.apply(lambda _: grey, axis=None)


GREY = "#9aa0a6"


def both_wrong_display(both_wrong: pd.DataFrame) -> pd.DataFrame:
    """The audit's both-judges-wrong rate per model (%, clipped at 0) with its 95 % interval, the
    rate to the places its interval supports."""
    d = [display.decimals_for(lo, hi) for lo, hi in zip(both_wrong["lo"], both_wrong["hi"])]
    return pd.DataFrame(
        {
            "model": both_wrong["model"],
            "agreements": both_wrong["agreements"],
            "audited": both_wrong["audited"],
            "both wrong %": [
                round(max(float(v), 0.0), k) if pd.notna(v) else None for v, k in zip(both_wrong["both_wrong"], d)
            ],
            "95% interval": [
                display.interval_text(lo, hi, k) for lo, hi, k in zip(both_wrong["lo"], both_wrong["hi"], d)
            ],
        }
    )


def annotators_display(acc: pd.DataFrame) -> pd.DataFrame:
    """Each annotator's estimated accuracy (%; latent-class fit over the double-adjudicated items)."""
    out = acc[["annotator", "accuracy", "sensitivity", "specificity", "decisions", "double_items"]].copy()
    for c in ("accuracy", "sensitivity", "specificity"):
        out[c] = (100 * out[c].astype(float)).round(1)
    return out.sort_values("annotator").reset_index(drop=True)


def model_notes(result) -> list[str]:
    """One line per model note of a scoring result (why a number is missing, what was left out)."""
    return [f"**{md_escape(model)}**: {md_escape(note)}" for model, notes in result.notes.items() for note in notes]


md_escape = md  # the older name, kept for callers


def md_lines(value) -> str:
    """Like :func:`md`, line by line (Markdown hard breaks): for messages of several lines,
    such as an import's ``file:line: field: message`` list, shown in an alert."""
    return "  \n".join(md(line) for line in ("" if value is None else str(value)).splitlines())


def ifeval_display(result, ci: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """IFEval's accuracies per model (%): calibrated prompt / instruction level with their 95 %
    intervals (``ci``: TCPR and constraint-level rows), each rounded to what its first interval
    supports, and strict / loose from the rules judges (one decimal; empty where no such judge
    ran; the notes say why)."""
    m = result.models
    out = pd.DataFrame(
        {
            "model": m["model"],
            "prompt level (calibrated)": result.tables["table2"]
            .set_index("model")["tcpr"]
            .reindex(m["model"])
            .to_numpy(),
            "instruction level (calibrated)": m["constraint_level"],
        }
    )
    lookup = ci.set_index(["model", "metric"]) if ci is not None and not ci.empty else None
    places = {}
    if lookup is not None:  # one interval (ci_low/_high) or measurement and population ones (…_lo/_hi)
        kinds = (
            [("95% CI", "ci_low", "ci_high")]
            if "ci_low" in lookup.columns
            else [
                (f"95% {k}", f"{k}_lo", f"{k}_hi") for k in ("measurement", "population") if f"{k}_lo" in lookup.columns
            ]
        )
        at = 2
        for label, metric in (("prompt", "tcpr"), ("instruction", "constraint_level")):
            for i, (name, lo, hi) in enumerate(kinds):
                pairs = [
                    tuple(lookup.loc[(x, metric), [lo, hi]]) if (x, metric) in lookup.index else (None, None)
                    for x in m["model"]
                ]
                out.insert(at, f"{label} level {name}", [_ci(*b) for b in pairs])
                if i == 0:
                    places[f"{label} level (calibrated)"] = [display.decimals_for(*b) for b in pairs]
                at += 1
            at += 1
    for col in ("prompt level (calibrated)", "instruction level (calibrated)"):
        d = places.get(col, [1] * len(out))
        out[col] = [round(float(v), k) if pd.notna(v) else v for v, k in zip(out[col], d)]
    for mode in ("strict", "loose"):
        if mode in result.metrics:
            for key, label in (("prompt_level", "prompt"), ("instruction_level", "instruction")):
                col = f"{mode}_{key}"
                out[f"{label} level ({mode})"] = (m[col] if col in m else pd.Series(float("nan"), index=m.index)).round(
                    1
                )
    return out


def rank_notes(ranks: pd.DataFrame) -> list[str]:
    """One sentence per model pair that TCPR and EMCR order differently."""
    return [
        f"**{md(r.model_1)}** is above **{md(r.model_2)}** on TCPR ({r.tcpr_1:.2f} vs {r.tcpr_2:.2f}) "
        f"but below it on EMCR ({r.emcr_1:.2f} vs {r.emcr_2:.2f})."
        for r in ranks.itertuples()
    ]


def heatmap(
    cells: pd.DataFrame,
    metric: str,
    *,
    model_order: list[str],
    task_order: list[str],
    selection: Optional[alt.Parameter] = None,
) -> alt.Chart:
    """Task × model heatmap of one metric (the ReFormBench paper's Figure 3): shared 0–100 scale, values in cells."""
    data = cells[["model", "task_type", metric]].rename(columns={metric: "value"})
    base = alt.Chart(data).encode(
        x=alt.X("task_type:N", title="task type", sort=task_order, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("model:N", title=None, sort=model_order),
    )
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color("value:Q", title=f"{metric.upper()} %", scale=alt.Scale(domain=[0, 100], scheme="viridis")),
        tooltip=["model", "task_type", alt.Tooltip("value:Q", format=".2f", title=metric.upper())],
    )
    if selection is not None:
        rect = rect.add_params(selection)
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("value:Q", format=".1f"),
        color=alt.condition("datum.value > 60", alt.value("black"), alt.value("white")),
    )
    # a step height (per model row): a fixed pixel height gets squashed by Streamlit's layout
    return (rect + text).properties(title=metric.upper(), height=alt.Step(32))


_MICROSECONDS = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d)(:\d\d(\.\d+)?)?([+-]\d\d:?\d\d|Z)?$")


def _cell(value, decimals: int) -> str:
    """One cell as a person reads it: '—' for missing, yes/no, 'k = v' pairs, minutes."""
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {_cell(v, decimals)}" for k, v in value.items()) or "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v, decimals) for v in value) or "—"
    if isinstance(value, (pd.Timestamp, datetime)):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, (float, np.floating)):
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.{decimals}f}"
    text = str(value)
    m = _MICROSECONDS.match(text)
    return m.group(1) if m else text


def tidy(frame: pd.DataFrame, *, flags: tuple[str, ...] = (), decimals: int = 2) -> pd.DataFrame:
    """A table as shown (issue 15 item 17): no raw None/NaN ('—'), no True/False or 1/0 flags
    (yes/no; ``flags`` names the 0/1 columns), no Python dicts or lists, no microsecond
    timestamps (minutes), no '2.000' for a whole number. Clean numeric columns stay numeric
    (sortable, exact); a column with a missing value becomes text (``decimals`` places)."""
    out = frame.copy()
    for c in out.columns:
        col = out[c]
        if c in flags:
            out[c] = [_cell(None if pd.isna(v) else bool(v), decimals) for v in col]
        elif pd.api.types.is_bool_dtype(col) or pd.api.types.is_datetime64_any_dtype(col):
            out[c] = [_cell(v, decimals) for v in col]
        elif pd.api.types.is_numeric_dtype(col):
            if col.isna().any():
                out[c] = [_cell(v, decimals) for v in col]
            elif pd.api.types.is_float_dtype(col):  # whole numbers as integers, never "2.000"
                whole = bool(np.all(np.mod(col.to_numpy(dtype=float), 1) == 0))
                if whole:
                    out[c] = col.astype("int64")
        else:
            out[c] = [_cell(v, decimals) for v in col]
    return out


EXPLORE_KEY_COLUMNS = [
    "model",
    "question",
    "instruction",
    "position",
    "feature",
    "mode",
    "label_a",
    "label_b",
    "agree",
    "adjudicated",
    "p",
]


def _yes_no(value, unknown: str = "—") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return unknown
    return "yes" if bool(value) else "no"


def explore_table(rows: pd.DataFrame, pair: Optional[tuple[str, str]]) -> tuple[pd.DataFrame, dict]:
    """The explorer's rows as shown: the key columns first (they fit at 1400 px: model,
    question, instruction, position, feature, mode, each judge's label named by its judge,
    agreement, adjudicated, p), labels as pass/fail and flags as yes/no, never 1/0 or None."""
    out = rows[EXPLORE_KEY_COLUMNS + [c for c in rows.columns if c not in EXPLORE_KEY_COLUMNS and c != "iid"]].copy()
    for c in ("label_a", "label_b"):
        out[c] = [label_text(v) for v in out[c]]
    out["agree"] = [_yes_no(v) for v in out["agree"]]
    out["adjudicated"] = [_yes_no(v) for v in out["adjudicated"]]
    if "baseline_opposed" in out:
        out["baseline_opposed"] = [_yes_no(v, "unknown") for v in out["baseline_opposed"]]
    a, b = pair if pair else ("judge A", "judge B")
    columns = {
        "position": st.column_config.NumberColumn("#", help="constraint position", format="%d", width=36),
        "label_a": st.column_config.TextColumn(f"A: {a}", help=f"judge A ({a}): pass or fail"),
        "label_b": st.column_config.TextColumn(f"B: {b}", help=f"judge B ({b}): pass or fail"),
        "agree": st.column_config.TextColumn("agree", help="do the two judges agree?", width=56),
        "adjudicated": st.column_config.TextColumn("adjudicated", help="has a person decided it?"),
        "p": st.column_config.ProgressColumn(
            "p", min_value=0.0, max_value=1.0, format="%.2f", width=90, help="calibrated pass probability"
        ),
    }
    return out, columns


# ----------------------------------------------------------------------------- cached analysis reads
# Keyed by the data version (row counts and max ids of the scored tables): any import,
# judgment or adjudication changes the key. The role check runs on every call, before
# the cache is consulted; the principal of the first caller is passed unhashed.


def data_version() -> tuple[int, ...]:
    return explore.data_version(state.engine())


def score_result(principal: Principal, *, calibration: str = "cluster", judge: Optional[str] = None):
    """The :class:`~reform_core.services.scoring.scoring.ScoreResult` of the current data version (shared,
    do not mutate): one scored state per labelling, new decisions applied to it incrementally
    (``reform_core.services.scoring.score_state``)."""
    require_any(principal, ("view_scores", "explore"))
    with st.spinner("Scoring the project…", show_time=True):
        return state.score_cache().result(
            state.engine(), principal, data_version(), calibration=calibration, judge=judge
        )


def intervals(principal: Principal, *, calibration: str = "cluster", judge: Optional[str] = None, start: bool = True):
    """95 % intervals (2,000 replicates, seed 0) of the current state: an
    :class:`~reform_core.services.scoring.score_state.Intervals` (``fresh`` False while they are being
    recomputed in the background; ``frame`` then holds the last ones, or None). ``start=False``:
    look only (the page then calls :func:`start_intervals` at its end)."""
    require(principal, "view_scores")
    return state.score_cache().intervals(
        state.engine(),
        principal,
        data_version(),
        _interval_fn(principal),
        calibration=calibration,
        judge=judge,
        start=start,
    )


def _interval_fn(principal: Principal):
    return lambda r: explore.score_intervals(principal, r)


def start_intervals(principal: Principal, *, calibration: str = "cluster", judge: Optional[str] = None) -> None:
    """Start the stale intervals' background recomputation (no data-version query: the state
    the page has just shown is the one recomputed)."""
    require(principal, "view_scores")
    state.score_cache().start_intervals(state.engine(), _interval_fn(principal), calibration=calibration, judge=judge)


@st.cache_resource(ttl=600, max_entries=1, show_spinner="Indexing examples…")  # one version: bounded memory
def _explore_frame(version: tuple, _principal: Principal) -> tuple[pd.DataFrame, pd.Series]:
    frame = explore.explore_frame(_principal, state.score_cache().result(state.engine(), _principal, version))
    return frame, frame.set_index("iid")["p"]


def explore_frame(principal: Principal) -> tuple[pd.DataFrame, pd.Series]:
    """The explorer's instance table (stratified p) and p by iid, cached per data version."""
    require(principal, "explore")
    return _explore_frame(data_version(), principal)


@st.cache_data(ttl=600, max_entries=2, show_spinner=False)
def _overview_data(version: tuple, _principal: Principal) -> dict:
    from reform_core.services.project.overview import data_part

    return data_part(state.engine(), _principal)


@st.cache_data(ttl=60, max_entries=2, show_spinner=False)
def _overview_decisions(version: tuple, _principal: Principal) -> dict:
    from reform_core.services.project.overview import decisions_part

    return decisions_part(state.engine(), _principal)


def overview(principal: Principal):
    """The project overview: the counts and agreement cached per version of the judged data
    (seconds at 10×), the decision counts and plan progress per version of the decisions
    (counters: milliseconds), so a new decision never recomputes the judged-data part."""
    from reform_core.services.project.overview import combine
    from reform_core.services.scoring.score_state import split_version

    require(principal, "view_overview")
    version = data_version()
    # blinded after the caches: a cached part never carries one role's view to another
    return combine(
        _overview_data(split_version(version)[0], principal),
        _overview_decisions(version, principal),
        blind=not principal.can("view_scores"),
    )


@st.cache_data(ttl=600, max_entries=4, show_spinner=False)
def _judges_summary(version: tuple, _principal: Principal) -> pd.DataFrame:
    from reform_core.services.judging import judging

    return judging.judges_summary(state.engine(), _principal)


def judges_summary(principal: Principal) -> pd.DataFrame:
    """The Judges page's per-judge counts, recomputed whenever a judgment or judge is added
    or any job (a judge run) starts, records progress or ends — never stale until a reload."""
    from reform_core.services.judging import judging

    require(principal, "run_judges")
    return _judges_summary(judging.summary_version(state.engine()), principal)

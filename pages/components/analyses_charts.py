"""Altair charts of the auxiliary analyses (Table 3, prompting, A4 coverage, Table 4).

One look on the whole Scores page: every model has one colour (``palette.model_scale``, the
models in name order, "Pooled" last and grey), the two conditions of a comparison the same
two colours, and every estimate is drawn the same way — a dot, its 95 % *measurement*
interval as a thick bar and its 95 % *population* interval as a thin line
(:data:`INTERVAL_LEGEND`). Every chart takes ``models``: all the models of the page (the
colour scale's domain), not only those of its own table.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.components.palette import CONDITION_COLOURS, model_order, model_scale
from reform_core.analyses_display import MEASURES, METRICS

INTERVAL_LEGEND = (
    "Dot: the estimate; thick bar: its 95 % measurement interval (questions fixed); thin line: its "
    "95 % population interval (questions resampled)."
)


def _intervals(base: alt.Chart, x: str, colour: alt.Color, tooltip: list) -> alt.LayerChart:
    """Dot + thick measurement bar + thin population line of ``x`` (columns ``pop_lo/hi``, ``meas_lo/hi``)."""
    pop = base.mark_rule(strokeWidth=1.5).encode(x=alt.X("pop_lo:Q", title=x), x2="pop_hi:Q", color=colour)
    meas = base.mark_rule(strokeWidth=7, opacity=0.45).encode(x="meas_lo:Q", x2="meas_hi:Q", color=colour)
    dot = base.mark_point(filled=True, size=70, opacity=1).encode(x="value:Q", color=colour, tooltip=tooltip)
    return alt.layer(pop, meas, dot)


def _long(df: pd.DataFrame, keys: list[str], sides: dict[str, str]) -> pd.DataFrame:
    """One row per (keys, side) with ``value, pop_lo, pop_hi, meas_lo, meas_hi``."""
    parts = []
    for col, side in sides.items():
        parts.append(
            df[keys].assign(
                side=side,
                value=df[col],
                pop_lo=df[f"{col}_pop_low"],
                pop_hi=df[f"{col}_pop_high"],
                meas_lo=df[f"{col}_meas_low"],
                meas_hi=df[f"{col}_meas_high"],
            )
        )
    return pd.concat(parts, ignore_index=True)


def _tooltip() -> list:
    return [
        alt.Tooltip("value:Q", format=".1f", title="estimate"),
        alt.Tooltip("meas_lo:Q", format=".1f"),
        alt.Tooltip("meas_hi:Q", format=".1f"),
        alt.Tooltip("pop_lo:Q", format=".1f"),
        alt.Tooltip("pop_hi:Q", format=".1f"),
    ]


def composition(df: pd.DataFrame, models: list[str]) -> alt.FacetChart:
    """Table 3: separate vs joint per model, one panel per measure (the gap, in pp, stays in the table)."""
    rates = df[df["measure"] != "gap"].assign(measure=lambda d: d["measure"].map(MEASURES))
    data = _long(rates, ["model", "measure"], {"separate": "separate", "joint": "joint"})
    colour = alt.Color(
        "side:N", title="answered", scale=alt.Scale(domain=["separate", "joint"], range=list(CONDITION_COLOURS))
    )
    base = alt.Chart().encode(
        y=alt.Y("model:N", sort=model_order(models), title=None),
        yOffset=alt.YOffset("side:N", sort=["separate", "joint"]),
    )
    layers = _intervals(base, "pass rate %", colour, ["model", "measure", "side", *_tooltip()])
    return (
        alt.layer(layers, data=data)
        .properties(width=260, height=alt.Step(14))
        .facet(
            column=alt.Column("measure:N", title=None, sort=[MEASURES[k] for k in ("all_pass", "opposed", "aligned")])
        )
    )


def prompting(df: pd.DataFrame, models: list[str]) -> alt.LayerChart:
    """Prompting: the difference prompted − main (pp) per metric and model, zero marked."""
    data = _long(
        df.assign(metric=df["metric"].map(METRICS).fillna(df["metric"])), ["model", "metric"], {"diff_pp": "Δ"}
    )
    colour = alt.Color("model:N", scale=model_scale(models), title="model")
    base = alt.Chart(data).encode(
        y=alt.Y("metric:N", sort=list(METRICS.values()), title=None),
        yOffset=alt.YOffset("model:N", sort=model_order(models)),
    )
    zero = alt.Chart(pd.DataFrame({"x": [0]})).mark_rule(color="#888", strokeDash=[4, 3]).encode(x="x:Q")
    return (zero + _intervals(base, "prompted − main (pp)", colour, ["model", "metric", *_tooltip()])).properties(
        height=alt.Step(16)
    )


def coverage(df: pd.DataFrame, models: list[str]) -> alt.LayerChart:
    """Table A4: catalog coverage of the extractions per model and pooled."""
    data = _long(df, ["model"], {"coverage": "coverage"})
    colour = alt.Color("model:N", scale=model_scale(models), legend=None)
    base = alt.Chart(data).encode(y=alt.Y("model:N", sort=model_order(models), title=None))
    return _intervals(base, "coverage %", colour, ["model", *_tooltip()]).properties(height=alt.Step(24))


def correlation(df: pd.DataFrame, models: list[str]) -> alt.LayerChart:
    """Table 4: Spearman ρ per model (and pooled) with its Fisher-z interval."""
    data = df.assign(value=df["rho"], lo=df["rho_pop_low"], hi=df["rho_pop_high"])[
        ["model", "value", "lo", "hi", "features"]
    ]
    colour = alt.Color("model:N", scale=model_scale(models), legend=None)
    base = alt.Chart(data).encode(y=alt.Y("model:N", sort=model_order(models), title=None))
    rule = base.mark_rule(strokeWidth=1.5).encode(
        x=alt.X("lo:Q", title="Spearman ρ (95 % interval, Fisher z)", scale=alt.Scale(zero=False)),
        x2="hi:Q",
        color=colour,
    )
    dot = base.mark_point(filled=True, size=70, opacity=1).encode(
        x="value:Q",
        color=colour,
        tooltip=[
            "model",
            alt.Tooltip("value:Q", format=".3f", title="ρ"),
            alt.Tooltip("lo:Q", format=".3f"),
            alt.Tooltip("hi:Q", format=".3f"),
            "features",
        ],
    )
    return (rule + dot).properties(height=alt.Step(24))


def frequency(df: pd.DataFrame, models: list[str]) -> alt.Chart:
    """Table 4's feature frequencies: features × models, colour = % of the common questions."""
    data = df.assign(pct=100 * df["frequency"])
    mean = data.groupby("feature")["pct"].mean()
    order = mean[mean > 0].sort_values(ascending=False).index.tolist()  # never-seen features: the table has them
    data = data[data["feature"].isin(order)]
    return (
        alt.Chart(data)
        .mark_rect()
        .encode(
            x=alt.X("model:N", sort=model_order(models), title=None, axis=alt.Axis(labelAngle=0, orient="top")),
            y=alt.Y("feature:N", sort=order, title=None),
            color=alt.Color("pct:Q", title="% of questions", scale=alt.Scale(domain=[0, 100], scheme="viridis")),
            tooltip=["feature", "model", alt.Tooltip("pct:Q", format=".1f", title="% of questions")],
        )
        .properties(height=alt.Step(14))
    )

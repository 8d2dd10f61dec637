"""Colours and orders shared by the charts of a page, so that one model, one condition or one
failure direction looks the same in every chart (issue 34 item 4)."""

from __future__ import annotations

import altair as alt
import pandas as pd

POOLED = "Pooled"
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac")
CONDITION_COLOURS = ("#4c78a8", "#f58518")  # first / second condition of a comparison (separate/joint, main/prompted)
DIRECTIONS = ("under", "exact", "over")  # WISE failure directions, in this order everywhere
DIRECTION_COLOURS = ("#e45756", "#54a24b", "#4c78a8")


def model_order(models) -> list[str]:
    """The models in name order, the pooled row last (every chart and legend of the page)."""
    names = {str(m) for m in models}
    return sorted(names - {POOLED}) + ([POOLED] if POOLED in names else [])


def model_scale(models) -> alt.Scale:
    """One colour per model, the same in every chart of the page; the pooled row grey."""
    order = model_order(models)
    return alt.Scale(
        domain=order, range=[("#7f7f7f" if m == POOLED else PALETTE[i % len(PALETTE)]) for i, m in enumerate(order)]
    )


def direction_chart(directions: pd.DataFrame, forms: list[str]) -> alt.Chart:
    """Failure direction per form (share of outputs, stacked): the directions in the order and
    colours of :data:`DIRECTIONS`, the forms in the order ``forms`` (the study's), on every page."""
    order = [f for f in forms if f in directions.index] + [f for f in directions.index if f not in forms]
    d = (
        directions.reindex(order)
        .rename_axis("form")
        .reset_index()
        .melt("form", var_name="direction", value_name="share")
    )
    known = [x for x in DIRECTIONS if x in set(d["direction"])]
    domain = known + sorted(set(d["direction"]) - set(DIRECTIONS))
    rank = {x: i for i, x in enumerate(domain)}
    d = d.assign(order=d["direction"].map(rank))
    return (
        alt.Chart(d)
        .mark_bar()
        .encode(
            x=alt.X("form:N", sort=order, title=None),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of outputs"),
            color=alt.Color(
                "direction:N",
                sort=domain,
                scale=alt.Scale(
                    domain=domain,
                    range=[
                        DIRECTION_COLOURS[DIRECTIONS.index(x)] if x in DIRECTIONS else PALETTE[(i + 4) % len(PALETTE)]
                        for i, x in enumerate(domain)
                    ],
                ),
            ),
            order=alt.Order("order:Q"),
            tooltip=["form", "direction", alt.Tooltip("share:Q", format=".1%")],
        )
    )

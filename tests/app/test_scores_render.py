"""Score-table render helpers: intervals and denominators beside each rate; rank notes."""

from __future__ import annotations

import pandas as pd

from pages.components import render
from reform_core.metrics.reform import rank_comparison


def test_table2_display_puts_both_intervals_and_counts_next_to_rates():
    t2 = pd.DataFrame(
        {
            "model": ["m1", "m2"],
            "tcpr": [70.0, 60.0],
            "emcr": [50.0, 55.0],
            "r1": [60.0, 61.0],
            "r2": [50.0, 52.0],
            "r3": [40.0, 52.0],
            "n_instructions": [10, 10],
            "n1": [4, 5],
            "n2": [3, 3],
            "n3": [1, 2],
        }
    )
    ci = pd.DataFrame(
        {
            "model": ["m1", "m2"],
            "metric": ["tcpr", "tcpr"],
            "measurement_lo": [65.04, 55.0],
            "measurement_hi": [75.0, 64.96],
            "population_lo": [60.0, float("nan")],
            "population_hi": [80.0, float("nan")],
        }
    )
    table = render.table2_table(t2, ci)
    out = render.table2_display(t2, ci)
    assert out.columns.tolist()[:5] == ["model", "TCPR", "TCPR measurement", "TCPR population", "instructions"]
    # half-widths ±5 pp: whole points (one significant digit of the half-width, docs/display.md)
    assert out["TCPR measurement"].tolist() == ["65–75", "55–65"]
    assert out["TCPR population"].tolist() == ["60–80", "—"]
    assert table.decimals["TCPR"].tolist() == [0, 0]
    # m1 has 8 eligible units: too few, greyed, said in place of the interval; m2 (10) has none yet: a dash
    assert out["EMCR measurement"].tolist() == ["too few units (n = 8)", "—"]
    assert table.greyed["EMCR"].tolist() == [True, False] and table.greyed["EMCR measurement"].tolist() == [True, False]
    assert table.greyed["R3"].tolist() == [True, True] and not table.greyed["TCPR"].any()
    assert table.decimals["EMCR"].tolist() == [0, 1], "no interval: one decimal"
    assert out["units"].tolist() == [8, 10]
    styler = render.styled(table)
    html = styler.to_html()
    assert render.GREY in html and "too few units (n = 8)" in html
    config = render.table2_columns(out)
    assert config["TCPR measurement"]["label"] == "meas." and config["TCPR population"]["label"] == "pop."


def test_both_wrong_and_annotator_tables():
    bw = pd.DataFrame(
        {"model": ["m1"], "agreements": [100], "audited": [10], "both_wrong": [-0.2], "lo": [0.0], "hi": [9.5]}
    )
    out = render.both_wrong_display(bw)
    assert out.iloc[0].to_dict() == {
        "model": "m1",
        "agreements": 100,
        "audited": 10,
        "both wrong %": 0.0,
        "95% interval": "0–10",
    }, "±4.75: whole points"
    acc = pd.DataFrame(
        {
            "annotator": ["bo", "al"],
            "sensitivity": [0.9, 1.0],
            "specificity": [0.8, 0.99],
            "accuracy": [0.85, 0.995],
            "decisions": [4, 5],
            "double_items": [4, 5],
        }
    )
    shown = render.annotators_display(acc)
    assert shown["annotator"].tolist() == ["al", "bo"] and shown["accuracy"].tolist() == [99.5, 85.0]


def test_rank_notes_name_each_discordant_pair():
    t2 = pd.DataFrame({"model": ["a", "b", "c"], "tcpr": [70.0, 60.0, 50.0], "emcr": [40.0, 45.0, 30.0]})
    notes = render.rank_notes(rank_comparison(t2))
    assert len(notes) == 1
    assert notes[0].startswith("**a** is above **b** on TCPR (70.00 vs 60.00)")
    assert "below it on EMCR (40.00 vs 45.00)" in notes[0]


def test_ifeval_display_shows_both_accuracies_with_either_interval_shape():
    from types import SimpleNamespace

    result = SimpleNamespace(
        models=pd.DataFrame({"model": ["gpt4"], "constraint_level": [84.7]}),
        tables={"table2": pd.DataFrame({"model": ["gpt4"], "tcpr": [78.5]})},
        metrics=["tcpr", "prompt_level"],
    )
    one = pd.DataFrame(
        {
            "model": ["gpt4", "gpt4"],
            "metric": ["tcpr", "constraint_level"],
            "ci_low": [75.0, 82.0],
            "ci_high": [81.9, 87.1],
        }
    )
    out = render.ifeval_display(result, one)
    assert out.columns.tolist() == [
        "model",
        "prompt level (calibrated)",
        "prompt level 95% CI",
        "instruction level (calibrated)",
        "instruction level 95% CI",
    ]
    assert out.iloc[0].tolist() == ["gpt4", 78.0, "75–82", 85.0, "82–87"], "±3.45 and ±2.55: whole points"
    two = pd.DataFrame(
        {
            "model": ["gpt4"],
            "metric": ["tcpr"],
            "measurement_lo": [76.0],
            "measurement_hi": [80.0],
            "population_lo": [74.0],
            "population_hi": [82.0],
        }
    )
    out = render.ifeval_display(result, two)
    assert out.columns.tolist()[2:4] == ["prompt level 95% measurement", "prompt level 95% population"]
    assert out.iloc[0].tolist()[1:] == [78.0, "76–80", "74–82", 84.7, "—", "—"], "no interval: one decimal"
    assert render.ifeval_display(result, None).columns.tolist() == [
        "model",
        "prompt level (calibrated)",
        "instruction level (calibrated)",
    ]

"""The display rule (docs/display.md): rounding to the half-width's first significant digit,
the too-few rule, p-values, readable tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from reform_core import display


@pytest.mark.parametrize(
    ("lo", "hi", "places"),
    [
        (56.46, 89.15, 0),  # ±16.3 pp: whole points (never tens: coarsest 0)
        (41.0, 59.0, 0),  # ±9 pp
        (24.54, 25.46, 1),  # ±0.46
        (10.0, 10.1, 2),  # ±0.05
        (10.0, 10.0001, 2),  # finer than the finest: clamped
        (None, 10.0, 1),
        (float("nan"), 1.0, 1),
        (5.0, 5.0, 1),  # no usable interval: the default
    ],
)
def test_decimals_follow_the_half_widths_first_significant_digit(lo, hi, places):
    assert display.decimals_for(lo, hi) == places


def test_decimals_by_hand_against_the_definition():
    """A literal restatement: the place of the first non-zero digit of (hi − lo) / 2."""
    for lo, hi in [(0.9952, 1.0), (0.5, 0.9), (0.12, 0.125)]:
        half = (hi - lo) / 2
        first = next(k for k in range(0, 10) if int(half * 10**k) >= 1)  # 0.0024 → 3rd place
        assert display.decimals_for(lo, hi, finest=6) == first


def test_show_rounds_greys_and_says_too_few():
    s = display.show(72.805403, 56.46, 89.15, 51, unit="instructions")
    assert (s.point, s.interval, s.value, s.greyed) == ("73", "56–89", 73.0, False)
    few = display.show(83.59, 20.6, 100.0, 3)
    assert few.greyed and few.interval == "too few units (n = 3)" and few.point == "84"
    wide = display.show(71.98, 41.3, 100.0, 48)  # 58.7 pp wide: uninformative though n ≥ 10
    assert wide.greyed and wide.interval == "too uncertain: wider than 50 pp (n = 48)"
    narrow = display.show(25.0, 24.54, 25.46, 40)
    assert (narrow.point, narrow.interval, narrow.greyed) == ("25.0", "24.5–25.5", False)
    missing = display.show(60.123, None, None, 40)  # e.g. the estimator returned no interval (null)
    assert (missing.point, missing.interval, missing.greyed) == ("60.1", "—", False)
    assert display.show(None, 1, 2, 40).point == "—"


def test_negative_bounds_read_with_to():
    assert display.interval_text(-21.2, -3.1, 0) == "-21 to -3"
    assert display.interval_text(-0.4, 2.2, 0) == "0–2", "a bound that rounds to 0 is not '-0'"
    assert display.interval_text(-5.2, 4.1, 0) == "-5 to 4"


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (2e-20, "< 1e-4"),
        (0.00009999, "< 1e-4"),
        (1e-4, "0.0001"),
        (0.03141, "0.031"),
        (0.5, "0.5"),
        (1.0, "1"),
        (float("nan"), "—"),
        (None, "—"),
    ],
)
def test_p_values(p, text):
    assert display.p_value_text(p) == text


def test_bootstrap_p_values_stop_at_one_over_the_replicates():
    assert display.p_value_text(0.0, replicates=2000) == "< 0.0005"
    assert display.p_value_text(0.0004, replicates=2000) == "< 0.0005"
    assert display.p_value_text(0.003, replicates=2000) == "0.003"


def test_table_builder_keeps_numbers_and_shows_text():
    b = display.TableBuilder(pd.DataFrame({"model": ["a", "b"]}))
    b.estimate(
        "TCPR", [72.81, 25.0], [56.46, 24.5], [89.15, 25.5], n=[51, 4], extra=(("pop.", [54.2, 0.0], [90.7, 100.0]),)
    )
    b.column("n", [51, 4], 0)
    t = b.build()
    assert t.frame["TCPR"].tolist() == [73.0, 25.0] and t.greyed["TCPR"].tolist() == [False, True]
    assert t.frame["TCPR 95% CI"].tolist() == ["56–89", "too few units (n = 4)"]
    assert t.frame["pop."].tolist() == ["54–91", "too few units (n = 4)"]
    assert t.text()["TCPR"].tolist() == ["73", "25"] and t.text()["n"].tolist() == ["51", "4"]
    assert math.isnan(t.decimals.loc[0, "model"])

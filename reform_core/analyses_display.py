"""The auxiliary analyses' tables as a person reads them (Scores page tabs, ``analyses`` CLI).

Readable column names, points rounded to what their population interval supports, both
intervals as ``lo–hi`` text, a too-few estimate greyed with its ``n``
(:mod:`reform_core.display`, docs/display.md), p-values as ``< 1e-4``. The result frames of
:mod:`reform_core.services.scoring.analyses` (and ``analyses --json``) keep full precision. Pure.
"""

from __future__ import annotations

import pandas as pd

from reform_core import display

MEASURES = {
    "all_pass": "all pass (TCPR)",
    "opposed": "baseline-opposed targets",
    "aligned": "baseline-aligned targets",
    "gap": "gap (opposed − aligned, pp)",
}
METRICS = {"tcpr": "TCPR", "emcr": "EMCR", "r1": "R¹", "r2": "R²", "r3": "R³"}
CONDITIONS = {"composition": ("separate", "joint"), "prompting": ("main", "prompted")}


def _estimate(b: display.TableBuilder, df: pd.DataFrame, col: str, label: str) -> None:
    """``col`` with its population interval (which rounds it) and its measurement interval beside
    it (``<first word of label> pop.`` / ``meas.``: 95 % intervals)."""
    name = label.split(" ")[0]
    b.estimate(
        label,
        df[col],
        df[f"{col}_pop_low"],
        df[f"{col}_pop_high"],
        n=df["n"],
        interval=f"{name} pop.",
        extra=((f"{name} meas.", df[f"{col}_meas_low"], df[f"{col}_meas_high"]),),
    )


def composition(df: pd.DataFrame) -> display.Table:
    """Table 3: separate vs joint answering per model and measure, with both intervals."""
    b = display.TableBuilder(
        pd.DataFrame({"model": df["model"], "measure": df["measure"].map(MEASURES).fillna(df["measure"])})
    )
    for col, label in (("separate", "separate %"), ("joint", "joint %"), ("delta_pp", "Δ pp")):
        _estimate(b, df, col, label)
    b.column("n", df["n"], 0)  # pair groups (all pass) or targets
    return b.build()


def prompting(df: pd.DataFrame) -> display.Table:
    """The prompting comparison: main vs prompted per model and metric, the difference in pp."""
    b = display.TableBuilder(
        pd.DataFrame({"model": df["model"], "metric": df["metric"].map(METRICS).fillna(df["metric"])})
    )
    for col, label in (("base", "main %"), ("other", "prompted %"), ("diff_pp", "Δ pp")):
        _estimate(b, df, col, label)
    b.column("n", df["n"], 0)
    return b.build()


def coverage(df: pd.DataFrame) -> display.Table:
    """Table A4: catalog coverage of the open-ended extractions per model (and pooled)."""
    keys = df[["model", "extracted", "excluded", "valid", "covered", "uncovered"]].rename(
        columns={"excluded": "excluded (not format)"}
    )
    b = display.TableBuilder(keys)
    b.estimate(
        "coverage %",
        df["coverage"],
        df["coverage_pop_low"],
        df["coverage_pop_high"],
        n=df["valid"],
        unit="instances",
        interval="pop. 95%",
        extra=(("meas. 95%", df["coverage_meas_low"], df["coverage_meas_high"]),),
    )
    return b.build()


def correlation(df: pd.DataFrame) -> display.Table:
    """Table 4: Spearman ρ of each model's feature frequencies with the reference models'."""
    b = display.TableBuilder(df[["model"]])
    b.estimate(
        "ρ",
        df["rho"],
        df["rho_pop_low"],
        df["rho_pop_high"],
        interval="ρ 95% CI (Fisher z)",
        coarsest=1,
        finest=3,
        default=3,
        min_units=0,
        max_width=float("inf"),
    )
    b.column("p", [display.p_value_text(p) for p in df["p_value"]])
    b.column("features", df["features"], 0)
    b.column("reference", df["reference"])
    return b.build()


def frequency(df: pd.DataFrame) -> pd.DataFrame:
    """Table 4's frequencies as features × models (% of the common questions, one decimal)."""
    wide = df.pivot_table(index="feature", columns="model", values="frequency", sort=False)
    return (100 * wide).round(1).rename_axis(None, axis=1).reset_index()


def targets(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 4's per-target rates (whole %: a target has a handful of constraints)."""
    out = df.rename(columns={"separate": "separate %", "joint": "joint %", "delta_pp": "Δ (pp)"}).copy()
    for c in ("separate %", "joint %", "Δ (pp)"):
        out[c] = out[c].round(0)
    return out


TABLES = {
    "table3_composition": composition,
    "prompting": prompting,
    "table_a4_coverage": coverage,
    "table4_correlation": correlation,
}


def readable(key: str, df: pd.DataFrame) -> display.Table:
    """The readable :class:`~reform_core.display.Table` of one analysis table (``TABLES``)."""
    return TABLES[key](df)

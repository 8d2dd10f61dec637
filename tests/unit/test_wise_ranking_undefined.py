"""WISE ranking intervals per statistic (issue 34 item 5): τ_b undefined in some bootstrap
replicates (every model tied under a form) no longer costs the Jaccard and rank-shift
intervals, which are always defined; the undefined replicates are counted. Checked against
a literal loop with scipy.stats.kendalltau / rankdata on the same item draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reform_core.agreement import item_bootstrap_weights
from reform_core.metrics import wise

ITEMS = [f"i{k:02d}" for k in range(10)]
MODELS = ["a", "b", "c"]


def _outputs() -> pd.DataFrame:
    """Under POS the models differ; under TIED every model passes every item except ``a`` on i00,
    so every replicate that misses i00 ties all models (τ_b undefined there)."""
    rows = []
    pos = {"a": 0.9, "b": 0.6, "c": 0.3}
    for m in MODELS:
        for k, item in enumerate(ITEMS):
            rows.append({"model": m, "item": item, "form": "POS", "passed": int((k + 1) / len(ITEMS) <= pos[m])})
            rows.append({"model": m, "item": item, "form": "TIED", "passed": int(not (m == "a" and item == "i00"))})
    return pd.DataFrame(rows)


def _literal(df: pd.DataFrame, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    table = {(r.model, r.item, r.form): r.passed for r in df.itertuples()}
    w = item_bootstrap_weights(len(ITEMS), n_boot, np.random.default_rng(seed))
    out = {k: np.full(n_boot, np.nan) for k in ("tau_b", "top3_jaccard", "max_rank_shift")}
    for b in range(n_boot):
        comp = {
            f: np.array([sum(w[b, i] * table[(m, it, f)] for i, it in enumerate(ITEMS)) / len(ITEMS) for m in MODELS])
            for f in ("POS", "TIED")
        }
        if np.ptp(comp["TIED"]) > 0:
            out["tau_b"][b] = stats.kendalltau(comp["POS"], comp["TIED"]).statistic
        top = {f: set(np.flatnonzero(stats.rankdata(-comp[f], method="min") <= 3)) for f in comp}
        out["top3_jaccard"][b] = len(top["POS"] & top["TIED"]) / len(top["POS"] | top["TIED"])
        rank = {f: stats.rankdata(-comp[f], method="average") for f in comp}
        out["max_rank_shift"][b] = np.abs(rank["TIED"] - rank["POS"]).max()
    return out


def test_each_statistic_gets_its_interval_over_its_defined_replicates():
    df, n_boot, seed = _outputs(), 600, 4
    ci = wise.ranking_stability_intervals(df, reference="POS", n_boot=n_boot, rng=np.random.default_rng(seed))
    ref = _literal(df, n_boot, seed)
    undefined = int(np.isnan(ref["tau_b"]).sum())
    assert 0.05 * n_boot < undefined < 0.5 * n_boot, "the case: τ_b undefined in some, not most, replicates"
    assert ci.loc["TIED", "tau_b_undefined"] == undefined
    assert ci.loc["TIED", "top3_jaccard_undefined"] == 0 and ci.loc["TIED", "max_rank_shift_undefined"] == 0
    for name in ("tau_b", "top3_jaccard", "max_rank_shift"):
        reps = ref[name][~np.isnan(ref[name])]
        lo, hi = np.quantile(reps, [0.025, 0.975])
        assert ci.loc["TIED", f"{name}_low"] == pytest.approx(lo, abs=1e-9), name
        assert ci.loc["TIED", f"{name}_high"] == pytest.approx(hi, abs=1e-9), name


def test_a_mostly_undefined_statistic_has_no_interval_but_the_others_keep_theirs():
    df = _outputs()
    df.loc[(df["form"] == "TIED") & (df["item"] == "i00"), "passed"] = 1  # every model ties in every replicate
    ci = wise.ranking_stability_intervals(df, reference="POS", n_boot=200, rng=np.random.default_rng(1))
    assert ci.loc["TIED", "tau_b_undefined"] == 200 and np.isnan(ci.loc["TIED", "tau_b_low"])
    assert np.isfinite(ci.loc["TIED", "top3_jaccard_low"]) and np.isfinite(ci.loc["TIED", "max_rank_shift_high"])


def test_the_service_reports_the_undefined_count_and_keeps_the_other_intervals():
    from reform_core.services.studies import wise as service

    out = _outputs()
    comp = wise.model_compliance(out)[["POS", "TIED"]]
    table = wise.wording_contrasts(comp, reference="POS")
    notes: list[str] = []
    got = service._with_ranking(table, comp, out, notes, reference="POS", n_boot=600, level=0.95, seed=4)
    undefined = int(got.loc["TIED", "tau_b_undefined"])
    assert undefined > 0 and np.isfinite(got.loc["TIED", "tau_b_low"])
    assert np.isfinite(got.loc["TIED", "top3_jaccard_low"]) and np.isfinite(got.loc["TIED", "max_rank_shift_low"])
    assert notes == [
        f"form TIED: {name} is undefined in {undefined:,} of 600 ranking replicates (every model "
        f"tied); its interval is over the other {600 - undefined:,}"
        for name in ("τ_b", "the reversal rate")
    ]

"""Catalog coverage and frequency correlation (ReFormBench, arXiv:2610.19693, §4.5, App. A.4)."""

import numpy as np
import pandas as pd
import pytest

from reform_core.metrics.coverage import catalog_coverage, feature_frequency, frequency_correlation

# ReFormBench Table A4: extracted, excluded, covered, uncovered -> coverage (%)
TABLE_A4 = {
    "Gemini 3.1 Pro": (9085, 42, 8595, 448, 95.05),
    "DeepSeek-V3.2": (8967, 48, 8565, 354, 96.03),
    "gpt-oss-120b": (11601, 24, 11177, 400, 96.54),
    "Doubao-Seed-2.1-Pro": (10259, 28, 9741, 490, 95.21),
}


def test_catalog_coverage_reproduces_table_a4():
    parts = []
    for model, (extracted, excluded, covered, uncovered, _) in TABLE_A4.items():
        exact = covered // 2
        mapping = (
            ["exact"] * exact
            + ["subtype"] * (covered - exact - 10)
            + ["composite"] * 10
            + ["uncovered"] * uncovered
            + ["not_format"] * excluded
        )
        assert len(mapping) == extracted
        parts.append(pd.DataFrame({"model": model, "mapping": mapping}))
    out = catalog_coverage(pd.concat(parts)).set_index("model")
    for model, (*_, cov) in TABLE_A4.items():
        assert round(out.loc[model, "coverage"], 2) == cov
    pooled = out.loc["Pooled"]
    assert pooled[["extracted", "excluded", "valid", "covered", "uncovered"]].tolist() == [
        39912,
        142,
        39770,
        38078,
        1692,
    ]
    assert round(pooled["coverage"], 2) == 95.75
    with pytest.raises(ValueError, match="mapping"):
        catalog_coverage(pd.DataFrame({"model": ["m"], "mapping": ["maybe"]}))


def test_feature_frequency_counts_once_per_response():
    ann = pd.DataFrame(
        {"model": ["m", "m", "m", "n"], "question": ["q1", "q1", "q2", "q1"], "feature": ["a", "a", "a", "b"]}
    )
    f = feature_frequency(ann, features=["a", "b", "c"], n_questions=4)
    assert f.loc["a", "m"] == 0.5 and f.loc["b", "n"] == 0.25 and f.loc["c"].sum() == 0
    with pytest.raises(ValueError, match="catalog"):
        feature_frequency(ann, features=["a"])


def test_spearman_with_ties_by_hand():
    # ranks x = (1, 2.5, 2.5, 4), y = (1, 3, 2, 4): rho = 4.5 / sqrt(4.5 * 5)
    freq = pd.DataFrame({"ref": [0.1, 0.2, 0.2, 0.3], "x": [0.1, 0.3, 0.2, 0.4]}, index=list("abcd"))
    out = frequency_correlation(freq, ["ref"]).set_index("model")
    assert out.loc["x", "rho"] == pytest.approx(4.5 / np.sqrt(22.5))


def test_pooled_row_averages_vectors_before_ranking():
    rng = np.random.default_rng(3)
    freq = pd.DataFrame(rng.random((66, 5)).round(2), columns=["r1", "r2", "e1", "e2", "e3"])
    freq.iloc[:5, 2] = 0.0
    out = frequency_correlation(freq, ["r1", "r2"]).set_index("model")
    ref = freq[["r1", "r2"]].mean(axis=1)
    for m in ["e1", "e2", "e3"]:
        assert out.loc[m, "rho"] == pytest.approx(freq[m].corr(ref, method="spearman"), abs=1e-12)
    pooled = freq[["e1", "e2", "e3"]].mean(axis=1).corr(ref, method="spearman")
    assert out.loc["Pooled", "rho"] == pytest.approx(pooled, abs=1e-12)
    assert out.loc["e1", "features"] == 61 and out.loc["Pooled", "features"] == 66

"""MOSAIC study metrics with prompt-bootstrap intervals (issue 18): the points equal the
existing per-metric functions, and each percentile interval equals a literal per-replicate
loop over the resampled prompts (same multinomial draw) written from MOSAIC
(arXiv:2601.18554) §3.2."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from reform_core.judges import mosaic_rubric
from reform_core.metrics import mosaic as M


def _random_study(seed: int = 7, prompts: int = 40, constraints: str = "ABCDEF") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    lists = {f"p{r:02d}": rng.choice(list(constraints), size=rng.integers(1, 5), replace=False) for r in range(prompts)}
    for model in ("m1", "m2"):
        for prompt, cons in lists.items():
            if model == "m2" and prompt == "p00":
                continue  # m2 did not answer one prompt
            for pos, c in enumerate(cons, 1):
                rows.append((model, prompt, c, pos, float(rng.random())))
    return pd.DataFrame(rows, columns=["model", "prompt", "constraint", "position", "score"])


def test_points_equal_the_per_metric_functions():
    df = _random_study()
    got = M.study_metrics(df, by="model")
    scc = M.scc(df, response="prompt", by="model")
    pd.testing.assert_frame_equal(got["scc"][["model", "constraint", "n", "scc"]], scc, check_dtype=False)
    pcc = M.pcc(df, response="prompt", by="model")
    pd.testing.assert_frame_equal(
        got["pcc"][["model", "constraint_i", "constraint_j", "n", "pcc"]], pcc, check_dtype=False
    )
    pos = M.poscc(df, response="prompt", by="model")
    pd.testing.assert_frame_equal(got["poscc"][["model", "position", "n", "poscc"]], pos, check_dtype=False)
    pa = M.prompt_accuracy(df, response="prompt", by="model")
    assert got["pa"]["pa"].tolist() == pytest.approx(pa.groupby("model")["pa"].mean().tolist(), abs=1e-15)
    strict = (pa["followed"] == pa["n_constraints"]).groupby(pa["model"]).mean()
    assert got["pa"]["all_followed"].tolist() == pytest.approx(strict.tolist(), abs=1e-15)
    assert got["scc"]["ci_low"].isna().all()  # no replicates asked for


def _loop_replicate(df: pd.DataFrame, counts: dict) -> dict:
    """SCC, PosCC, PCC, PA of one resample (prompt p drawn counts[p] times), per model."""
    out = {}
    for model, part in df.groupby("model"):
        lists = defaultdict(dict)
        for r in part.itertuples(index=False):
            lists[r.prompt][r.constraint] = (int(r.position), 1 if r.score >= 0.5 else 0)
        sample = [p for p in sorted(lists) for _ in range(counts[p])]
        res = {"scc": {}, "poscc": {}, "pcc": {}}
        for c in sorted({c for p in lists for c in lists[p]}):
            ys = [lists[p][c][1] for p in sample if c in lists[p]]
            res["scc"][c] = sum(ys) / len(ys) if ys else np.nan
        for pos in range(1, 5):
            ys = [y for p in sample for (q, y) in lists[p].values() if q == pos]
            res["poscc"][pos] = sum(ys) / len(ys) if ys else np.nan
        for a, b in combinations(sorted(res["scc"]), 2):
            ys = [lists[p][a][1] * lists[p][b][1] for p in sample if a in lists[p] and b in lists[p]]
            res["pcc"][(a, b)] = sum(ys) / len(ys) if ys else np.nan
        pas = [sum(y for _, y in lists[p].values()) / len(lists[p]) for p in sample]
        res["pa"] = sum(pas) / len(pas)
        out[model] = res
    return out


def test_intervals_equal_a_literal_loop_over_the_same_resamples():
    df = _random_study(prompts=30)
    n_boot, seed = 60, 11
    got = M.study_metrics(df, by="model", n_boot=n_boot, level=0.9, rng=np.random.default_rng(seed))
    prompts = sorted(df["prompt"].unique())
    draws = np.random.default_rng(seed).multinomial(len(prompts), np.full(len(prompts), 1 / len(prompts)), size=n_boot)
    reps = [_loop_replicate(df, dict(zip(prompts, w))) for w in draws]

    def interval(values):
        v = np.array(values, dtype=float)
        if np.isfinite(v).mean() < 0.95:
            return (np.nan, np.nan)
        return tuple(np.quantile(v[np.isfinite(v)], [0.05, 0.95]))

    for r in got["scc"].itertuples(index=False):
        lo, hi = interval([rep[r.model]["scc"][r.constraint] for rep in reps])
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-12, nan_ok=True)
    for r in got["poscc"].itertuples(index=False):
        lo, hi = interval([rep[r.model]["poscc"][r.position] for rep in reps])
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-12, nan_ok=True)
    for r in got["pcc"].itertuples(index=False):
        lo, hi = interval([rep[r.model]["pcc"][(r.constraint_i, r.constraint_j)] for rep in reps])
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-12, nan_ok=True)
    for r in got["pa"].itertuples(index=False):
        assert (r.pa_low, r.pa_high) == pytest.approx(interval([rep[r.model]["pa"] for rep in reps]), abs=1e-12)
    assert got["scc"]["ci_low"].notna().any() and got["pcc"]["ci_low"].notna().any()


def test_unchecked_constraints_are_left_out_not_passed():
    """A response whose position-2 constraint has no check: PA over its checked constraints,
    PosCC_2 without it; nothing is counted as followed."""
    df = pd.DataFrame(
        [("m", "r1", "A", 1, 1.0), ("m", "r1", "C", 3, 0.0), ("m", "r2", "A", 1, 0.0), ("m", "r2", "B", 2, 1.0)],
        columns=["model", "prompt", "constraint", "position", "score"],
    )
    got = M.study_metrics(df, by="model")
    assert got["pa"]["pa"].iloc[0] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert got["poscc"].set_index("position")["n"].to_dict() == {1: 2, 2: 1, 3: 1}
    assert got["scc"].set_index("constraint")["scc"].to_dict() == {"A": 0.5, "B": 1.0, "C": 0.0}


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.assign(position=[1, 1, 2, 3]), "occurs more than once"),
        (lambda d: d.assign(position=[0, 1, 2, 3]), "positions must be integers >= 1"),
        (lambda d: d.assign(score=[0.1, 2.0, 0.3, 0.4]), "scores must be numbers in [0, 1]"),
    ],
)
def test_bad_frames_are_named(change, message):
    df = pd.DataFrame(
        [("m", "r1", "A", 1, 1.0), ("m", "r1", "B", 2, 0.0), ("m", "r1", "C", 3, 1.0), ("m", "r1", "D", 4, 0.0)],
        columns=["model", "prompt", "constraint", "position", "score"],
    )
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        M.study_metrics(change(df), by="model")
    with pytest.raises(ValueError, match="rng"):
        M.study_metrics(df, by="model", n_boot=10)


def test_judge_prompt_and_score_parsing():
    msgs = mosaic_rubric.messages("The passage.", "Specific tone: The passage keeps a friendly tone.")
    assert msgs[0]["role"] == "system" and "strict judge" in msgs[0]["content"]
    assert "### Passage ###\nThe passage." in msgs[1]["content"] and "Specific tone: The passage" in msgs[1]["content"]
    assert mosaic_rubric.parse_score('```json\n{"reasoning": "ok", "score": 7}\n```') == (0.7, "ok")
    assert mosaic_rubric.parse_score('{"score": "5", "reasoning": null}') == (0.5, "")
    assert mosaic_rubric.parse_score('{"score": 4.9}')[0] < M.THRESHOLD <= mosaic_rubric.parse_score('{"score": 5}')[0]
    for bad in (
        '{"score": 11}',
        '{"score": -1}',
        '{"score": true}',
        '{"reasoning": "x"}',
        "no json",
        '{"score": "NaN"}',
    ):
        with pytest.raises(ValueError):
            mosaic_rubric.parse_score(bad)
    with pytest.raises(ValueError, match="rubric"):
        mosaic_rubric.messages("x", " ")


def test_a_model_absent_from_most_resamples_has_no_interval_and_no_warning():
    """A model that answered one of 30 prompts is missing from most replicates: its PA has no
    interval (NaN, not a number from the few replicates that drew it) and nothing warns."""
    import warnings

    df = _random_study(prompts=30)
    df = pd.concat([df, pd.DataFrame([("m3", "p05", "A", 1, 1.0)], columns=df.columns)], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = M.study_metrics(df, by="model", n_boot=200, rng=np.random.default_rng(1))
    m3 = got["pa"].set_index("model").loc["m3"]
    assert m3["pa"] == 1.0 and np.isnan(m3["pa_low"]) and np.isnan(m3["pa_high"])
    assert got["pa"].set_index("model").loc["m1", ["pa_low", "pa_high"]].notna().all()

"""`score` (docs/cli.md, docs/formats.md#adjudication-and-scores) on the demo project: JSON
shape, raw-judge vs calibrated, errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reform_core.services.accounts.auth import Principal
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.setup import load_demo
from reform_core.services.scoring.scoring import ScoringError, load_project, score

ANALYST = Principal(0, "ana", "analyst")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('score') / 'demo.db'}"
    load_demo(get_engine(url))
    return url


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


def test_score_json_shape(demo_url):
    r = _cli("score", "--db", demo_url, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["models"]) == {"helix-pro", "quill-2", "pixel-mini"}
    # a rate the default estimator puts a hair outside [0, 100] is shown clipped and says so in a note; EMCR is
    # the mean of the unclipped rates (the note gives each to two decimals)
    clipped = {
        (m, f"r{k}"): float(v)
        for m, k, v in re.findall(
            r"(\S+): r(\d): the estimator's unbiased value (-?[\d.]+) lies outside", " ".join(out["notes"])
        )
    }
    for name, m in out["models"].items():
        assert {"tcpr", "emcr", "r1", "r2", "r3", "units", "constraint_level", "excluded", "notes"} <= set(m)
        assert m["excluded"] == {"no_baseline_targets": 0, "unlabelled_instructions": 0}
        assert all(0 <= m[k] <= 100 for k in ("tcpr", "emcr", "r1", "r2") if m[k] is not None)
        assert len(m["units"]) == 3 and all(isinstance(u, int) for u in m["units"])
        r = [clipped.get((name, k), m[k]) for k in ("r1", "r2", "r3")]
        tolerance = 1e-5 + sum(0.005 for k in ("r1", "r2", "r3") if (name, k) in clipped) / 3
        assert m["emcr"] == pytest.approx(sum(r) / 3, abs=tolerance)


def test_raw_judge_scores_use_that_judges_labels(demo_url):
    eng = get_engine(demo_url)
    frames = load_project(eng)
    res = score(eng, ANALYST, judge="gpt-judge", frames=frames)
    main = res.instances[res.instances["condition"] == "main"]
    assert set(main["p"].unique()) <= {0.0, 1.0}
    # TCPR by hand: share of instructions whose three labels all pass, per model
    allpass = main.groupby(["model", "instruction"])["label_gpt-judge"].min().groupby("model").mean() * 100
    t2 = res.tables["table2"].set_index("model")
    for model, v in allpass.items():
        assert t2.loc[model, "tcpr"] == pytest.approx(v)
    with pytest.raises(ScoringError, match="unknown judge 'nope'"):
        score(eng, ANALYST, judge="nope", frames=frames)


def test_calibrated_differs_from_raw_only_on_disagreements(demo_url):
    eng = get_engine(demo_url)
    res = score(eng, ANALYST, calibration="stratified")
    inst = res.instances
    agree = inst["label_a"] == inst["label_b"]
    assert (inst.loc[agree, "p"] == inst.loc[agree, "label_a"]).all()
    dis = inst[~agree & inst["label_a"].notna() & inst["label_b"].notna()]
    assert set(dis["source"]) <= {"adjudicated", "stratum", "fallback"}
    assert (dis["source"] == "adjudicated").sum() > 0


def test_score_errors_exit_nonzero(demo_url, tmp_path):
    r = _cli("score", "--db", demo_url, "--judge", "nope", "--json")
    assert r.returncode != 0 and "unknown judge 'nope'" in r.stderr
    r = _cli("score", "--db", demo_url, "--calibration", "magic")
    assert r.returncode != 0 and "unknown estimator 'magic' (known: cluster, stratified, pooled)" in r.stderr
    r = _cli("score", "--db", f"sqlite:///{tmp_path / 'empty.db'}", "--json")
    assert r.returncode != 0 and "no judged constrained responses" in r.stderr

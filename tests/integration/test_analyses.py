"""Issue 17: `analyses --json` on a project broken along every failure route: the complete,
consistent pairs are scored, what is left out is counted and listed, every table is there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.integration.analyses_project import BROKEN, write_broken_project

REPO = Path(__file__).resolve().parents[2]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def broken_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('broken') / 'p.db'}"
    write_broken_project(url)
    return url


@pytest.fixture(scope="module")
def out(broken_url):
    r = _cli("analyses", "--db", broken_url, "--json", "--n-boot", "50")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_failure_route_is_counted_and_listed(out):
    assert out["excluded"]["composition"] == {
        "incomplete group": 1,
        "missing prompted version": 0,
        "feature mismatch": 1,
        "judge error": 1,
    }
    assert out["excluded"]["prompting"] == {
        "incomplete group": 0,
        "missing prompted version": 1,
        "feature mismatch": 0,
        "judge error": 0,
    }
    ex = pd.DataFrame(out["exclusions"])
    got = {(r.analysis, r.reason): r.pair_group for r in ex.itertuples()}
    for reason in ("incomplete group", "feature mismatch", "judge error"):
        assert got[("composition", reason)] == BROKEN[reason]
    assert got[("prompting", "missing prompted version")] == BROKEN["missing prompted version"]
    assert out["errors"] == {}


def test_tables_rules_and_intervals(out):
    t = out["tables"]
    assert {
        "table3_composition",
        "composition_targets",
        "prompting",
        "table_a4_coverage",
        "table4_frequency",
        "table4_correlation",
    } <= set(t)
    t3 = pd.DataFrame(t["table3_composition"])
    assert set(t3["measure"]) == {"all_pass", "opposed", "aligned", "gap"}
    assert t3.loc[t3["measure"] == "all_pass", "n"].iloc[0] == 120 - 3  # 120 groups of the single model, 3 left out
    for side in ("separate", "joint", "delta_pp"):
        for kind in ("pop", "meas"):
            lo, hi = t3[f"{side}_{kind}_low"], t3[f"{side}_{kind}_high"]
            assert lo.notna().all() and (lo <= hi).all()
    assert (t3["separate_pop_high"] - t3["separate_pop_low"] > t3["separate_meas_high"] - t3["separate_meas_low"]).all()
    pr = pd.DataFrame(t["prompting"])
    assert set(pr["metric"]) == {"tcpr", "emcr", "r1", "r2", "r3"}
    assert (pr.loc[pr["metric"] == "tcpr", "n"] == 120 - 1).all()  # one main instruction without its prompted version
    assert "pooled rule" in out["rule_text"] and "main adjudications only" in out["rule_text"]
    assert out["intervals"]["population"] == "cluster bootstrap over questions"
    cov = pd.DataFrame(t["table_a4_coverage"])
    assert cov["model"].iloc[-1] == "Pooled" and (cov["coverage_pop_low"] <= cov["coverage_pop_high"]).all()
    corr = pd.DataFrame(t["table4_correlation"])
    assert set(corr["model"]) == {"model-03", "Pooled"} and corr["reference"].iloc[0] == "model-01, model-02"


def test_stratified_rule_on_request(broken_url):
    r = _cli("analyses", "--db", broken_url, "--json", "--n-boot", "20", "--rule", "stratified")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert o["rule"] == "stratified" and "per condition" in o["rule_text"]
    assert o["excluded"]["composition"]["judge error"] == 1
    r = _cli("analyses", "--db", broken_url, "--rule", "nope")
    assert r.returncode != 0 and "rule must be one of" in r.stderr

"""Missing data is explicit (issue 14, point 2): left out and counted, never a pass, never
"feature absent"; a number that cannot be computed is null with the reason.

Defects pinned (each test fails on the code before issue 14):
* a (model, question) without baseline annotation counted as "no feature present": its
  require targets became baseline-opposed and built EMCR units;
* a constraint neither judge labelled was dropped alone (the instruction's product ran over
  the remaining constraints) while raw-judge scoring dropped the whole instruction;
* a metric without eligible units printed ``n/a`` / null without a reason; ``doctor`` said
  all ok.

Expected values are worked out by hand from the bundle (``scoring_project``'s docstring
lists the targets and their variants).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reform_core.services.accounts.auth import Principal
from reform_core.services.data.importer import import_bundle
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.export import export, recompute
from reform_core.services.project.operations import doctor
from reform_core.services.scoring.scoring import score, score_json
from tests.integration.scoring_project import write_bundle

REPO = Path(__file__).resolve().parents[2]
LEAD = Principal(0, "lead", "lead")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


# m2 has a baseline annotation for q1 only; m1 for both questions (bullet_list present).
PARTIAL_BASELINE = {("m1", "q1"): ["bullet_list"], ("m1", "q2"): ["bullet_list"], ("m2", "q1"): ["bullet_list"]}


def _code_block_fails_for_m2_in_q1_v2(j, m, i, p):
    return 0 if (m, i, p) == ("m2", "q1-v2", 3) else 1


@pytest.fixture
def partial(tmp_path, any_db_url):
    eng = get_engine(any_db_url)
    import_bundle(eng, write_bundle(tmp_path / "b", baseline=PARTIAL_BASELINE, label=_code_block_fails_for_m2_in_q1_v2))
    return eng, any_db_url


def test_unannotated_question_is_unknown_not_absent(partial, tmp_path):
    """m2's q2 has no baseline annotation. Before: its three require targets counted as
    baseline-opposed (feature "absent") and, all passing, built extra units that lifted EMCR.
    After: q2's five targets are unknown, left out of EMCR and counted.

    By hand, q1 with bullet_list present: opposed targets SH (v1,v2,v3), BL (v1,v3), TE (v1),
    CB (v2,v3); NE:forbid is aligned. Units: K=1 {SH, BL, CB} = 3; K=2 {SH-BL, SH-TE, SH-CB,
    BL-TE, BL-CB} = 5; K=3 {SH-BL-TE, SH-BL-CB} = 2. CB fails in v2, so every unit with CB
    fails: R1 = 2/3, R2 = 3/5, R3 = 1/2.
    """
    eng, url = partial
    out = score_json(score(eng, LEAD))
    m2 = out["models"]["m2"]
    assert m2["units"] == [3, 5, 2]
    assert m2["r1"] == pytest.approx(100 * 2 / 3, abs=1e-5)
    assert m2["r2"] == pytest.approx(60.0) and m2["r3"] == pytest.approx(50.0)
    assert m2["emcr"] == pytest.approx((100 * 2 / 3 + 60 + 50) / 3, abs=1e-5)
    assert m2["excluded"] == {"no_baseline_targets": 5, "unlabelled_instructions": 0}
    assert any("5 target(s)" in n and "left out of EMCR" in n for n in m2["notes"])
    m1 = out["models"]["m1"]
    assert m1["units"] == [6, 10, 4] and m1["emcr"] == 100.0 and m1["excluded"]["no_baseline_targets"] == 0
    # TCPR still counts every instruction: only EMCR needs the baseline
    assert m2["tcpr"] == pytest.approx(100 * 5 / 6, abs=1e-5)
    # instances.csv keeps the column, empty where unknown; the export recomputes to the same numbers
    manifest = export(eng, tmp_path / "exp", principal=LEAD, n_boot=20)
    assert manifest["models"]["m2"]["excluded"]["no_baseline_targets"] == 5
    inst = pd.read_csv(tmp_path / "exp" / "instances.csv", keep_default_na=False, dtype=str)
    q2_m2 = inst[(inst["model"] == "m2") & (inst["question"] == "q2")]
    assert len(q2_m2) == 9 and (q2_m2["baseline_opposed"] == "").all()
    assert set(inst.loc[inst["question"] == "q1", "baseline_opposed"]) == {"True", "False"}
    again = recompute(tmp_path / "exp")["models"]["m2"]
    assert again["units"] == [3, 5, 2] and again["emcr"] == pytest.approx(m2["emcr"], abs=1e-5)


def _m1_q1v1_p3_unlabelled(j, m, i, p):
    if (m, i, p) == ("m1", "q1-v1", 3):
        return None  # neither judge labelled it
    if (m, i, p) == ("m2", "q1-v1", 1):
        return "error" if j == "jb" else None  # one error row, no label at all
    if (m, i, p) == ("m1", "q2-v1", 1):
        return 0  # both judges: fail
    return 1


def test_unlabelled_constraint_leaves_its_instruction_out_of_every_method(tmp_path, sqlite_url):
    """Before: calibrated TCPR ran q1-v1's product over its two labelled constraints (m1:
    5/6 = 83.3 %) while raw-judge TCPR dropped q1-v1 (4/5 = 80 %): the methods scored
    different sets. After: every method drops it (4/5) and counts it."""
    eng = get_engine(sqlite_url)
    adj = (
        {
            "judge_a": "ja",
            "judge_b": "jb",
            "model": "m1",
            "instruction": "q1-v2",
            "position": 1,
            "choice": "A",
            "annotator": "alice",
        },
    )  # a pool for the pooled rule (on an agreement: no effect on p)
    import_bundle(eng, write_bundle(tmp_path / "b", label=_m1_q1v1_p3_unlabelled, adjudications=adj))
    for kw in ({"calibration": "stratified"}, {"calibration": "pooled"}, {"judge": "ja"}, {"judge": "jb"}):
        out = score_json(score(eng, LEAD, **kw))
        m1, m2 = out["models"]["m1"], out["models"]["m2"]
        assert m1["tcpr"] == pytest.approx(80.0), kw
        assert m1["excluded"]["unlabelled_instructions"] == 1 and m1["instructions"] == {"answered": 6, "scored": 5}, kw
        assert m2["excluded"]["unlabelled_instructions"] == 1 and m2["tcpr"] == pytest.approx(100.0), kw
        assert any(n.startswith("1 instruction(s) with a constraint") for n in m1["notes"]), kw


def _few_opposed_baseline():
    # require targets whose feature is present are aligned; bullet_list / numbered_enumeration
    # absent make the forbid targets aligned: only code_block:require (v2, v3) is opposed
    return {(m, q): ["section_headings", "typographic_emphasis"] for m in ("m1", "m2") for q in ("q1", "q2")}


def test_metrics_without_eligible_units_are_null_with_a_reason(tmp_path, sqlite_url):
    """Before: R2, R3 and EMCR came out null (JSON) / ``n/a`` (CLI) without a word."""
    eng = get_engine(sqlite_url)
    baseline = _few_opposed_baseline()
    del baseline[("m2", "q1")], baseline[("m2", "q2")]  # m2: no baseline annotation at all
    import_bundle(eng, write_bundle(tmp_path / "b", baseline=baseline))
    url = sqlite_url
    out = json.loads(_cli("score", "--db", url, "--json").stdout)
    m1, m2 = out["models"]["m1"], out["models"]["m2"]
    assert m1["units"] == [2, 0, 0] and m1["r1"] == 100.0
    assert m1["r2"] is None and m1["r3"] is None and m1["emcr"] is None
    assert "r2: no eligible units at K=2" in m1["notes"] and "r3: no eligible units at K=3" in m1["notes"]
    assert any(n.startswith("emcr: needs eligible units at every K") for n in m1["notes"])
    assert m2["units"] == [0, 0, 0] and m2["emcr"] is None and m2["r1"] is None
    assert any("no baseline annotation for this model's questions" in n for n in m2["notes"])
    text = _cli("score", "--db", url).stdout
    assert "n/a" not in text
    assert "m1: r2: no eligible units at K=2" in text and "m2: emcr, r1, r2, r3: no baseline annotation" in text


def test_project_without_baseline_never_claims_emcr(tmp_path, sqlite_url):
    eng = get_engine(sqlite_url)
    import_bundle(eng, write_bundle(tmp_path / "b", baseline={}))
    out = score_json(score(eng, LEAD))
    assert "emcr" not in out["metrics"] and "tcpr" in out["metrics"]
    # the catalog declares EMCR, so the project says once why it is not computed; no model's notes,
    # exclusion counts or metric definitions speak of EMCR (issue 32 item 4)
    assert any("need baseline annotations" in n and "this project has none" in n for n in out["notes"])
    assert set(out["metric_definitions"]) == {"tcpr", "constraint_level"}
    assert "all three of its constraints" in out["metric_definitions"]["tcpr"]  # every instruction has three here
    for m in out["models"].values():
        assert m["emcr"] is None and m["units"] == [0, 0, 0] and m["tcpr"] == 100.0
        assert not any("emcr" in n.lower() for n in m["notes"]), m["notes"]
        assert m["excluded"] == {"unlabelled_instructions": 0}


def test_doctor_reports_baseline_coverage_and_unlabelled_instances(tmp_path, sqlite_url):
    """Before: doctor said "ok" on a project with missing baselines and unlabelled instances."""
    eng = get_engine(sqlite_url)
    import_bundle(eng, write_bundle(tmp_path / "b", baseline=PARTIAL_BASELINE, label=_m1_q1v1_p3_unlabelled))
    checks = {c["check"]: c for c in doctor(eng)["checks"]}
    cov = checks["baseline coverage"]
    assert cov["warn"] and "3 of 4 (model, question) pairs" in cov["detail"] and "left out of EMCR" in cov["detail"]
    unl = checks["unlabelled instances"]
    assert unl["warn"] and unl["detail"].startswith("2 (response, constraint) pair(s) in 2 response(s)")
    r = _cli("doctor", "--db", sqlite_url)
    assert r.returncode == 0  # warnings, not faults
    assert "WARN  baseline coverage" in r.stdout and "WARN  unlabelled instances" in r.stdout

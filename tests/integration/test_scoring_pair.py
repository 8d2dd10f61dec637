"""The scoring pair is project state (issue 14, point 1).

Defects pinned (each test fails on the code before issue 14):
* ``score`` without ``--judges`` calibrated on the first two judges by creation order, so a
  judge holding only error rows (a failed first run) became part of the default pair;
* with more than two judges nothing asked which pair to use; ``export`` could not choose;
* the Sampling page listed judges alphabetically, the CLI by creation order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.status import status
from reform_core.services.platform.uow import get_engine
from reform_core.services.project import explore
from reform_core.services.project.export import export
from reform_core.services.scoring.scoring import ScoringError, project_pair, score, score_json, set_pair
from tests.integration.scoring_project import write_bundle

REPO = Path(__file__).resolve().parents[2]
LEAD = Principal(0, "lead", "lead")
ANALYST = Principal(0, "ana", "analyst")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


def _label(j, m, i, p):
    """``broken`` only errored (a base URL without /v1); jz and ja disagree on position 2 of
    m1's q1 variants; jc fails every position 3."""
    if j == "broken":
        return "error"
    if j == "ja" and m == "m1" and i.startswith("q1") and p == 2:
        return 0
    if j == "jc" and p == 3:
        return 0
    return 1


@pytest.fixture
def three_judges(tmp_path, any_db_url):
    """jz, ja, jc with labels (creation order), plus 'broken' created first with only errors,
    and one decision under a plan of the pair (jz, ja)."""
    eng = get_engine(any_db_url)
    adj = (
        {
            "judge_a": "jz",
            "judge_b": "ja",
            "model": "m1",
            "instruction": "q1-v1",
            "position": 2,
            "choice": "B",
            "annotator": "alice",
            "plan": "p-za",
        },
    )
    import_bundle(
        eng, write_bundle(tmp_path / "b", judges=("broken", "jz", "ja", "jc"), label=_label, adjudications=adj)
    )
    return eng, any_db_url


def test_error_only_judge_is_never_in_the_default_pair(tmp_path, sqlite_url):
    """Old code: the default pair was (broken, jz) — the judge with only 404 rows — and its
    'calibrated' scores were jz's raw labels."""
    eng = get_engine(sqlite_url)
    import_bundle(eng, write_bundle(tmp_path / "b", judges=("broken", "jz", "ja"), label=_label))
    res = score(eng, ANALYST)
    assert res.pair == ("jz", "ja") and res.pair_source == "only two judges"
    out = score_json(res)
    assert out["pair"] == ["jz", "ja"]
    assert any("only two judges with labels" in n for n in out["notes"])  # the output says how it chose
    assert score_json(score(eng, ANALYST, judges=("jz", "ja")))["models"] == out["models"]
    # never listed as a raw option with scores, never plannable, never settable
    assert explore.judges(eng, ANALYST) == ["jz", "ja"]
    assert adjudication.judges(eng) == ["jz", "ja"]  # the CLI's creation order, not alphabetical
    with pytest.raises(ScoringError, match="'broken' has no labels"):
        set_pair(eng, LEAD, "broken", "jz")
    with pytest.raises(ScoringError, match="'broken' has no labels"):
        score(eng, ANALYST, judge="broken")


def test_more_than_two_judges_need_an_explicit_pair(three_judges):
    eng, url = three_judges
    with pytest.raises(ScoringError) as exc:
        score(eng, ANALYST)
    msg = str(exc.value)
    assert "jz, ja, jc" in msg and "pair A B" in msg and "broken" not in msg
    r = _cli("score", "--db", url, "--json")
    assert r.returncode != 0 and "jz, ja, jc" in r.stderr and "pair A B" in r.stderr
    # a raw judge still scores without a pair; --judges stays an explicit override
    assert score(eng, ANALYST, judge="jc").method == "judge:jc"
    assert score(eng, ANALYST, judges=("jz", "jc")).pair == ("jz", "jc")


def test_pair_command_status_score_and_export_use_the_pair(three_judges, tmp_path):
    eng, url = three_judges
    r = _cli("pair", "--db", url, "ja", "jc", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"pair": ["ja", "jc"]}
    assert project_pair(eng) == ("ja", "jc")
    st = json.loads(_cli("status", "--db", url, "--json").stdout)
    assert st["pair"] == ["ja", "jc"]
    assert st["plans"] == [{"name": "p-za", "judge_a": "jz", "judge_b": "ja", "tasks": 1, "done": 1}]
    out = json.loads(_cli("score", "--db", url, "--json").stdout)
    assert out["pair"] == ["ja", "jc"] and out["pair_source"] == "project"
    # jc fails every position 3, ja passes all but m1 q1 position 2: the calibrated pair
    # (ja, jc) disagrees on every position 3; jz's labels must play no part
    res = score(eng, ANALYST)
    assert set(res.instances["label_a"].dropna()) <= {0.0, 1.0}
    assert (res.instances["label_a"] == res.instances["label_ja"]).all()
    assert (res.instances["label_b"] == res.instances["label_jc"]).all()
    manifest = export(eng, tmp_path / "exp", principal=LEAD, n_boot=20)
    assert manifest["judge_pair"] == ["ja", "jc"] and manifest["judge_pair_source"] == "project"
    r = _cli("pair", "--db", url, "broken", "ja")
    assert r.returncode != 0 and "has no labels" in r.stderr
    r = _cli("pair", "--db", url, "ja", "nope")
    assert r.returncode != 0 and "unknown judge 'nope'" in r.stderr
    assert json.loads(_cli("pair", "--db", url, "--json").stdout) == {"pair": ["ja", "jc"]}
    with pytest.raises(PermissionError):
        set_pair(eng, ANALYST, "ja", "jz")
    # the plan's own pair: its decision reaches the export (Table A3, strata.csv), never a raw
    # judge's labels under the name "stratified" (the export: all-zero A3, empty strata)
    _cli("pair", "--db", url, "jz", "ja")
    own = tmp_path / "own"
    manifest = export(eng, own, principal=LEAD, n_boot=20)
    assert manifest["judge_pair"] == ["jz", "ja"]
    strata = pd.read_csv(own / "strata.csv")
    assert strata["n_reviewed"].sum() == 1
    a3 = pd.read_csv(own / "table_a3_judge_agreement.csv")
    assert a3.loc[a3["model"] == "Total", "agrees_b"].item() == 1  # the decision chose jz's partner, B


def test_a_plans_decisions_count_only_for_its_own_pair(three_judges):
    eng, _ = three_judges
    own = score(eng, ANALYST, judges=("jz", "ja"))
    inst = own.instances.set_index(["model", "instruction", "position"])
    assert inst.loc[("m1", "q1-v1", 2), "source"] == "adjudicated" and inst.loc[("m1", "q1-v1", 2), "p"] == 0.0
    assert own.other_pair_decisions == 0
    other = score(eng, ANALYST, judges=("ja", "jc"))
    assert other.other_pair_decisions == 1  # the Scores page says so
    assert other.frames.adjudications.empty
    assert score_json(other)["other_pair_decisions"] == 1


def test_status_reports_plans_and_no_pair(three_judges):
    eng, _ = three_judges
    st = status(eng)
    assert st["pair"] is None and [p["name"] for p in st["plans"]] == ["p-za"]

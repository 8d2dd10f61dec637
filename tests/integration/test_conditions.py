"""Issue 17: conditions kept apart — a single-constraint condition with its own adjudications
leaves the main scores exactly as they are without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.data.simulated import simulation_frames
from reform_core.services.platform.uow import get_engine
from reform_core.simulate import simulate

REPO = Path(__file__).resolve().parents[2]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


def _main_only(frames: dict) -> dict:
    keep = set(frames["instructions"].loc[frames["instructions"]["condition"] == "main", "key"])
    out = dict(frames)
    out["instructions"] = frames["instructions"][frames["instructions"]["key"].isin(keep)]
    out["constraints"] = frames["constraints"][frames["constraints"]["instruction"].isin(keep)]
    resp = frames["responses"]
    out["responses"] = resp[(resp["instruction"] == "") | resp["instruction"].isin(keep)]
    out["judgments"] = frames["judgments"][frames["judgments"]["instruction"].isin(keep)]
    out["adjudications"] = frames["adjudications"][frames["adjudications"]["instruction"].isin(keep)]
    return out


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    sim = simulate(seed=5, scale="small", single_constraint=True)
    frames = simulation_frames(sim, adjudicate=25, seed=5)
    adj = frames["adjudications"]
    single = adj["instruction"].str.contains("-s")
    assert single.sum() > 0 and (~single).sum() > 0
    # the single-constraint condition's adjudications all lean one way (judge B)
    frames["adjudications"] = adj.assign(choice=np.where(single, "B", adj["choice"]))
    urls = {}
    for name, fr in (("with_single", frames), ("main_only", _main_only(frames))):
        url = f"sqlite:///{tmp_path_factory.mktemp(name) / 'p.db'}"
        import_bundle_obj(get_engine(url), frames_bundle(fr, source=name))
        urls[name] = url
    return urls


def _main_figures(out: dict) -> dict:
    keys = ("tcpr", "emcr", "r1", "r2", "r3", "units", "constraint_level", "instructions", "excluded")
    return {m: {k: r[k] for k in keys} for m, r in out["models"].items()}


@pytest.mark.parametrize("calibration", [None, "stratified", "pooled"])
def test_added_single_condition_leaves_main_scores_identical(projects, calibration):
    """``None``: whatever ``score`` does by default (it must hold for the default estimator too)."""
    outs = {}
    for name, url in projects.items():
        r = _cli("score", "--db", url, "--json", *(["--calibration", calibration] if calibration else []))
        assert r.returncode == 0, r.stderr
        outs[name] = json.loads(r.stdout)
    assert _main_figures(outs["with_single"]) == _main_figures(outs["main_only"])
    assert outs["with_single"]["provisional"] == outs["main_only"]["provisional"]


def test_imported_decisions_and_live_scores_keep_conditions_apart(projects):
    from sqlalchemy import text

    from reform_core.services.adjudication.adjudication import LiveScores

    eng = get_engine(projects["with_single"])
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT t.stratum, i.condition FROM adjudication_task t JOIN constraint_item c ON c.id = t.constraint_id "
                "JOIN instruction i ON i.id = c.instruction_id WHERE t.kind = 'disagreement'"
            )
        ).all()
    assert {c for _, c in rows} == {"main", "single"}
    for stratum, cond in rows:
        assert stratum.endswith("|single") == (cond == "single")
    live = {
        name: LiveScores.from_engine(get_engine(url), "judge_a", "judge_b").scores.set_index("model")
        for name, url in projects.items()
    }
    pd.testing.assert_frame_equal(live["with_single"], live["main_only"])


def test_stratified_intervals_reuse_the_scoring_run(projects):
    """The stratified intervals start from the scoring run's calibration, its main-condition
    stratum rates and its unit index instead of calibrating again (issue 16): the same numbers, to the last digit,
    on a project whose other condition has strata and decisions of its own."""
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.scoring import estimates
    from reform_core.services.scoring.scoring import score

    eng = get_engine(projects["with_single"])
    r = score(eng, cli_principal(eng), calibration="stratified")
    assert (r.rates["condition"] != "main").any()  # the other condition's strata are there to be left out
    main = r.instances[r.instances["condition"] == "main"]
    again = estimates.paper_intervals(main, r.frames.adjudications, "stratified", reps=300, seed=4)
    reused = estimates.paper_intervals(
        main, r.frames.adjudications, "stratified", reps=300, seed=4, rates=r.rates, index=r.index
    )
    pd.testing.assert_frame_equal(again, reused)

"""A simulated project with single-constraint and prompted conditions, broken along every
failure route of issue 17 (incomplete group, missing prompted version, feature mismatch,
judge error), for the analyses CLI and the Scores page tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.data.simulated import simulation_frames
from reform_core.services.platform.uow import get_engine
from reform_core.simulate import simulate

# main instruction -> what is broken about its versions
BROKEN = {
    "incomplete group": "i00003",
    "feature mismatch": "i00005",
    "judge error": "i00007",
    "missing prompted version": "i00009",
}


def _drop_instructions(frames: dict, keys: set[str]) -> None:
    frames["instructions"] = frames["instructions"][~frames["instructions"]["key"].isin(keys)]
    frames["constraints"] = frames["constraints"][~frames["constraints"]["instruction"].isin(keys)]
    frames["responses"] = frames["responses"][~frames["responses"]["instruction"].isin(keys)]
    frames["judgments"] = frames["judgments"][~frames["judgments"]["instruction"].isin(keys)]
    if "adjudications" in frames:
        frames["adjudications"] = frames["adjudications"][~frames["adjudications"]["instruction"].isin(keys)]


def broken_frames(seed: int = 5) -> dict:
    sim = simulate(seed=seed, scale="small", single_constraint=True, prompted=True, extractions=True)
    frames = simulation_frames(sim, adjudicate=20, seed=seed)
    _drop_instructions(frames, {BROKEN["incomplete group"] + "-s3", BROKEN["missing prompted version"] + "-p"})
    cons = frames["constraints"]
    key = BROKEN["feature mismatch"] + "-s2"
    used = set(cons.loc[cons["instruction"].str.startswith(BROKEN["feature mismatch"]), "feature"])
    other = next(f for f in cons["feature"].unique() if f not in used)
    frames["constraints"] = cons.assign(
        feature=np.where(cons["instruction"] == key, other, cons["feature"]), category=""
    )
    jd = frames["judgments"]
    err = (jd["instruction"] == BROKEN["judge error"] + "-s1").to_numpy()
    jd = jd.assign(
        label=pd.Series(jd["label"], dtype=object).where(~err, None),
        status=np.where(err, "error", "ok"),
        error=np.where(err, "HTTP 500 from the provider", ""),
    )
    frames["judgments"] = jd
    if "adjudications" in frames:
        adj = frames["adjudications"]
        frames["adjudications"] = adj[adj["instruction"] != BROKEN["judge error"] + "-s1"]
    return frames, sim


def write_broken_project(url: str, seed: int = 5):
    frames, sim = broken_frames(seed)
    import_bundle_obj(
        get_engine(url), frames_bundle(frames, source="broken", construction_models=tuple(sim.construction_models))
    )
    return sim

"""Simulated projects written into a database (the ``simulate`` command; the simulator is
:mod:`reform_core.simulate`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as repo
from reform_core.safe_csv import write_csv
from reform_core.services.data.importer import Progress, frames_bundle, import_bundle_obj

SIM_CONDITIONS = ("main", "single", "prompted")


def simulate_into(
    engine: Engine,
    *,
    seed: int = 0,
    scale: str = "paper",
    truth: Optional[str | Path] = None,
    progress: Progress = None,
    adjudicate: int = 0,
    conditions: tuple[str, ...] = ("main",),
    extractions: bool = False,
) -> dict:
    """Write a synthetic project (``reform_core.simulate``); optionally the hidden truth as CSV.

    ``adjudicate``: number of disagreements per model and condition the simulator's oracle
    decides, recorded as imported adjudications so calibration has reviewed strata.
    ``conditions``: ``main`` plus optionally ``single`` (single-constraint versions) and
    ``prompted``; ``extractions``: open-ended feature extractions (Table A4).
    """
    from reform_core.simulate import simulate

    unknown = [c for c in conditions if c not in SIM_CONDITIONS]
    if unknown or "main" not in conditions:
        raise ValueError(f"conditions: expected main plus any of single, prompted; got {', '.join(conditions)}")
    sim = simulate(
        seed=seed,
        scale=scale,
        single_constraint="single" in conditions,
        prompted="prompted" in conditions,
        extractions=extractions,
    )
    frames = simulation_frames(sim, adjudicate=adjudicate, seed=seed)
    counts = import_bundle_obj(
        engine,
        frames_bundle(frames, source=f"simulate(seed={seed})", construction_models=tuple(sim.construction_models)),
        progress=progress,
    )
    with engine.begin() as conn:
        repo.set_meta(conn, {"project_name": f"simulated ({scale}, seed {seed})"})
    if truth:
        t = sim.truth.copy()
        Path(truth).parent.mkdir(parents=True, exist_ok=True)
        write_csv(t, truth)
    return counts


def simulation_frames(sim, *, adjudicate: int = 0, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The simulator's frames in the importer's shape."""
    import numpy as np

    q = sim.questions.rename(columns={"question": "key"})
    ins = sim.instructions.rename(columns={"instruction": "key"})
    cons = sim.constraints.copy()
    cons["params"] = [
        json.loads(p) if isinstance(p, str) and p else (p if isinstance(p, dict) else {}) for p in cons["params"]
    ]
    models = sim.models.rename(columns={"model": "name"})
    resp = sim.responses.copy()
    resp["kind"] = np.where(resp["instruction"] == "", "baseline", "constrained")
    base = sim.baseline.copy()
    judges = pd.DataFrame({"name": list(sim.judges), "provider": "replay"})
    jd = sim.judgments.copy()
    frames = {
        "questions": q,
        "instructions": ins,
        "constraints": cons,
        "models": models,
        "responses": resp,
        "baseline": base,
        "judges": judges,
        "judgments": jd,
        "extractions": sim.extractions.assign(source="simulate"),
    }
    if adjudicate:
        inst = sim.instances()
        ja, jb = sim.judges[0], sim.judges[1]
        la, lb = inst[f"label_{ja}"], inst[f"label_{jb}"]
        dis = inst[(la != lb) & la.notna() & lb.notna()]
        rng = np.random.default_rng(seed)
        picks = []
        for _, g in dis.groupby(["model", "condition"]):  # every condition has its own strata
            picks.append(g.sample(n=min(adjudicate, len(g)), random_state=rng.integers(2**31)))
        if picks:
            sel = pd.concat(picks)
            a = sim.oracle(sel["iid"].to_numpy(), rng=rng)
            a = np.asarray(a)
            choice = np.where(a == sel[f"label_{ja}"].to_numpy(), "A", "B")
            frames["adjudications"] = pd.DataFrame(
                {
                    "judge_a": ja,
                    "judge_b": jb,
                    "model": sel["model"].to_numpy(),
                    "instruction": sel["instruction"].to_numpy(),
                    "position": sel["position"].to_numpy(),
                    "choice": choice,
                    "annotator": "oracle",
                    "plan": "simulated-oracle",
                }
            )
    return frames

"""Moments of the work: the decisions a team holds part-way through a plan.

A replicate's decisions (:func:`bench.validation.planned_decisions`) come in the order they were
made; :func:`at_stage` cuts them to what a team holds at one moment:

* ``first:<share>:queue`` — the first round (each task's first decision, both of an item doubled
  from the start) of the first ``share`` of the tasks in the queue's order (the app serves
  whole questions in a random order);
* ``first:<share>:random`` — the first round of a random ``share`` of the tasks (an outside team
  returning part of ``tasks``);
* ``first`` — every task's first round, every later opinion the rule asks for still pending;
* ``final`` — every decision.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STAGES = (
    "first:0.25:queue",
    "first:0.5:queue",
    "first:0.75:queue",
    "first:0.25:random",
    "first:0.5:random",
    "first:0.75:random",
    "first",
    "final",
)


def first_round(decisions: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Each task's first ``required`` decisions (its first round: 1, or 2 when doubled from the start)."""
    req = tasks.set_index("iid")["required"]
    rank = decisions.groupby("iid", sort=False).cumcount().to_numpy()
    return decisions[rank < req.reindex(decisions["iid"]).to_numpy()].reset_index(drop=True)


def at_stage(decisions: pd.DataFrame, tasks: pd.DataFrame, stage: str, rng: np.random.Generator) -> pd.DataFrame:
    """The decisions held at ``stage`` (module docstring)."""
    if stage == "final":
        return decisions
    first = first_round(decisions, tasks)
    if stage == "first":
        return first
    _, share, order = stage.split(":")
    n = int(round(float(share) * len(tasks)))
    if order == "queue":
        keep = tasks.sort_values("queue_order")["iid"].to_numpy()[:n]
    elif order == "random":
        keep = rng.choice(tasks["iid"].to_numpy(), size=n, replace=False)
    else:
        raise ValueError(f"unknown stage {stage!r}")
    return first[first["iid"].isin(keep)].reset_index(drop=True)

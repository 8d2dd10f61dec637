"""Fitted against true adjudicator-error rates at the "every first task" stage (issue 36).

Scores the same decisions of each simulated project twice — with the error rates the estimator
fits and with the simulator's true ones (every annotator 0.95 / 0.95) — at the stage where every
first task is decided and the later opinions are pending, and at the end. Prints the mean TCPR
error (pp) of each and their paired difference. One-off diagnostic, not part of ``run_all``:

    python bench/stage_error_rates.py --projects 16
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stages import at_stage  # noqa: E402
from bench.validation import adjudicated_replicate  # noqa: E402
from reform_core.estimators import adjudicator_error as ae  # noqa: E402
from reform_core.estimators import cluster  # noqa: E402

STAGES = ("first", "final")


def true_model(annotators) -> ae.ErrorModel:
    """The simulator's adjudicators: every one right 95 % of the time on either truth."""
    idx = pd.Index(annotators)
    ones = pd.Series(1, index=idx)
    return ae.ErrorModel(
        pd.Series(0.95, index=idx), pd.Series(0.95, index=idx), (0.95, 0.95), pd.Series(dtype=float), True, ones, ones
    )


def project_errors(seed: int, questions: int) -> list[dict]:
    """TCPR error per model, stage and error model on one simulated project."""
    r = adjudicated_replicate(
        seed, scale="paper", human_error=0.05, both_wrong=0.01, n_questions=questions, n_instructions=4 * questions
    )
    true = true_model(r.decisions["annotator"].astype(str).unique())
    rows = []
    for stage in STAGES:
        dec = at_stage(r.decisions, r.tasks, stage, np.random.default_rng([seed, 7]))
        for label, em in (("fitted", None), ("true", true)):
            est = cluster.estimate(
                r.instances,
                r.tasks,
                dec,
                r.params,
                judge_a=r.judge_a,
                judge_b=r.judge_b,
                condition=None,
                error_model=em,
                error_boot=0,
                index=r.index,
            )
            for _, x in est.table.iterrows():
                err = x["tcpr"] - r.truth.loc[x["model"], "tcpr"]
                rows.append(dict(seed=seed, stage=stage, rates=label, model=x["model"], err=err))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=16)
    ap.add_argument("--questions", type=int, default=150)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = pd.DataFrame([row for s in range(1, a.projects + 1) for row in project_errors(s, a.questions)])
    print(df.groupby(["stage", "rates"])["err"].agg(["mean", "sem", "count"]).round(3))
    wide = df.pivot_table(index=["seed", "stage", "model"], columns="rates", values="err")
    print("fitted − true, paired:")
    print((wide["fitted"] - wide["true"]).groupby(level="stage").agg(["mean", "sem", "count"]).round(3))


if __name__ == "__main__":
    main()

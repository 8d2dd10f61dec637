"""The default estimator at every moment of the work (issue 36, point 3).

Run: ``python bench/bench_stages.py --replicates 200 --jobs 2`` (results cached per seed under
``bench/results/raw/stages/``, so an interrupted run resumes; ``--collect`` rebuilds the report).

Each replicate simulates a ReFormBench-shaped project (:mod:`reform_core.simulate`: correlated
truths, judges wrong together on 1 % of instances) of ``--questions`` questions, draws the
default plan, lets simulated annotators who err ``e`` decide its tasks (the plan's opinion rule
followed), and scores the decisions a team holds at each stage of :mod:`bench.stages`: the first
round of 25 / 50 / 75 % of the tasks in the queue's order and in a random order, every first
round with every later opinion pending, and the finished plan. A second scenario, ``clustered``,
concentrates the judges' errors (issue 36, point 5): both judges wrong together on 5 % of one
feature category's instances and on none elsewhere, and judge B wrong on 35 % of one model's
instances; it is scored on the finished plan and with every later opinion pending. Bias, coverage of the measurement
interval (Clopper–Pearson interval) and width of TCPR and EMCR per stage, and the worst
|error| / half-width over the finished replicates; the targets of issue 13: |bias| ≤ 0.2 pp,
coverage 93–97 %. Results: ``bench/results/stages.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import machine_line  # noqa: E402
from bench.stages import STAGES  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "stages.md"
RAW = Path(__file__).resolve().parent / "results" / "raw" / "stages"
REVISION = "s4"  # estimator revision in the cache key
METRICS = ("tcpr", "emcr")
ERRORS = (0.0, 0.05)


CLUSTERED = {"category_both_wrong": 0.05, "model_judge_b_error": 0.35}
SCENARIO_STAGES = {"base": STAGES, "clustered": ("first", "final")}


def clustered(seed: int, error: float, questions: int):
    """A replicate whose judges' errors are concentrated (module docstring): the simulator's project
    without joint errors, then both labels flipped on 5 % of one category's rows and judge B's on
    35 % of one model's rows, the default plan drawn on those labels and decided."""
    from bench.validation import Replicate, planned_decisions
    from reform_core.frames import CONDITION_MAIN
    from reform_core.metrics import reform
    from reform_core.simulate import simulate
    from reform_core.unit_index import build_index

    sim = simulate(seed, "paper", both_wrong=0.0, n_questions=questions, n_instructions=4 * questions)
    inst = sim.instances()
    inst = inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)
    ja, jb = (f"label_{j}" for j in sim.judges)
    rng = np.random.default_rng([seed, 11])
    category = sorted(inst["category"].unique())[seed % inst["category"].nunique()]
    both = (inst["category"] == category).to_numpy() & (rng.random(len(inst)) < CLUSTERED["category_both_wrong"])
    model = sorted(inst["model"].unique())[seed % inst["model"].nunique()]
    b_wrong = (inst["model"] == model).to_numpy() & (rng.random(len(inst)) < CLUSTERED["model_judge_b_error"])
    truth = inst["truth"].to_numpy(dtype=float)
    inst[ja] = np.where(both, 1 - truth, inst[ja])
    inst[jb] = np.where(both | b_wrong, 1 - truth, inst[jb])
    drng = np.random.default_rng([seed, 1, int(round(1000 * error))])
    params, tasks, decisions = planned_decisions(inst, ja, jb, seed, error, drng)
    index = build_index(inst)
    return Replicate(
        inst,
        ja,
        jb,
        params,
        tasks,
        decisions,
        index,
        reform.table2(inst, p="truth", index=index).set_index("model"),
        drng,
    )


def one(args) -> pd.DataFrame:
    """One replicate at every stage: per stage, model and metric the error and the interval."""
    seed, error, questions, scenario = args
    warnings.filterwarnings("ignore")
    from bench.stages import at_stage
    from bench.validation import adjudicated_replicate
    from reform_core.estimators import base

    if scenario == "clustered":
        r = clustered(seed, error, questions)
    else:
        r = adjudicated_replicate(
            seed, scale="paper", human_error=error, both_wrong=0.01, n_questions=questions, n_instructions=4 * questions
        )
    rows = []
    for stage in SCENARIO_STAGES[scenario]:
        dec = at_stage(r.decisions, r.tasks, stage, np.random.default_rng([seed, 7]))
        data = base.EstimationData(
            instances=r.instances,
            decisions=dec,
            judge_a=r.judge_a,
            judge_b=r.judge_b,
            design=r.params,
            tasks=r.tasks,
            index=r.index,
        )
        est = base.get("cluster").estimate(data, base.Options(intervals=True, reps=100, refits=3, seed=seed))
        for x in est.intervals[est.intervals["metric"].isin(METRICS)].itertuples(index=False):
            rows.append(
                {
                    "seed": seed,
                    "error": error,
                    "scenario": scenario,
                    "stage": stage,
                    "model": x.model,
                    "metric": x.metric,
                    "estimate": x.estimate,
                    "truth": r.truth.loc[x.model, x.metric],
                    "lo": x.measurement_lo,
                    "hi": x.measurement_hi,
                }
            )
    return pd.DataFrame(rows)


def raw_path(seed: int, error: float, questions: int, scenario: str = "base") -> Path:
    tag = "" if scenario == "base" else f"{scenario}_"
    return RAW / f"{REVISION}_q{questions}" / f"{tag}e{int(round(100 * error)):02d}_{seed}.csv"


def run(seeds, questions: int, jobs: int, deadline: float | None, scenarios=("base",)) -> None:
    todo = [
        (s, e, questions, sc)
        for sc in scenarios
        for e in (ERRORS if sc == "base" else (0.05,))
        for s in seeds
        if not raw_path(s, e, questions, sc).exists()
    ]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for args, frame in zip(todo, pool.map(one, todo)):
            path = raw_path(*args)
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.to_csv(path, index=False)
            if deadline is not None and time.time() > deadline:
                break


def summary(df: pd.DataFrame) -> pd.DataFrame:
    from scipy.stats import binomtest

    ok = df.dropna(subset=["estimate"])
    rows = []
    if "scenario" not in ok:
        ok = ok.assign(scenario="base")
    ok = ok.assign(scenario=ok["scenario"].fillna("base"))
    for (scenario, error, stage, metric), g in ok.groupby(["scenario", "error", "stage", "metric"], sort=False):
        err = g["estimate"] - g["truth"]
        has = g["lo"].notna()
        hit = ((g["lo"] <= g["truth"]) & (g["truth"] <= g["hi"]))[has]
        ci = binomtest(int(hit.sum()), int(has.sum())).proportion_ci() if has.any() else None
        rows.append(
            {
                "scenario": scenario,
                "adjudicator error": f"{100 * error:.0f} %",
                "stage": stage,
                "metric": metric.upper(),
                "bias (pp)": f"{err.mean():+.2f} ± {err.std(ddof=1) / np.sqrt(len(err)):.2f}",
                "coverage": f"{100 * hit.mean():.1f} % ({100 * ci.low:.1f}–{100 * ci.high:.1f})" if ci else "—",
                "intervals": f"{int(has.sum())}/{len(g)}",
                "mean width (pp)": f"{(g['hi'] - g['lo'])[has].mean():.2f}",
                "worst |error| / half-width": f"{(err.abs() / ((g['hi'] - g['lo']) / 2))[has].max():.2f}",
            }
        )
    return pd.DataFrame(rows)


def report(questions: int) -> str:
    files = sorted((RAW / f"{REVISION}_q{questions}").glob("*.csv"))
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else pd.DataFrame()
    n = (
        df.assign(scenario=df.get("scenario", "base"))
        .fillna({"scenario": "base"})
        .groupby(["scenario", "error"])["seed"]
        .nunique()
        .to_dict()
        if len(df)
        else {}
    )
    lines = [
        "## The default estimator at every stage of the work (bench/bench_stages.py)",
        "",
        f"- {machine_line()}",
        f"- Command: `python bench/bench_stages.py --replicates N --jobs 2 --questions {questions}`; "
        f"replicates per adjudicator error: {n}; ReFormBench-shaped simulator, {questions} questions, "
        "10 models, judges wrong together on 1 %, correlated truths; stages of bench/stages.py",
        "- Targets (issue 13): |bias| ≤ 0.2 pp, measurement coverage 93–97 %.",
        "",
    ]
    if len(df):
        t = summary(df)
        lines += ["| " + " | ".join(t.columns) + " |", "|" + "---|" * len(t.columns)]
        lines += ["| " + " | ".join(map(str, r)) + " |" for r in t.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=150)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--minutes", type=float, default=None, help="stop starting new replicates after this long")
    ap.add_argument("--collect", action="store_true", help="only rebuild the report from the cache")
    ap.add_argument("--scenarios", default="base", help="comma-separated: base, clustered")
    a = ap.parse_args()
    if not a.collect:
        deadline = time.time() + 60 * a.minutes if a.minutes else None
        run(
            range(a.first_seed + 1, a.first_seed + a.replicates + 1),
            a.questions,
            a.jobs,
            deadline,
            tuple(a.scenarios.split(",")),
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(report(a.questions), encoding="utf-8")
    print(OUT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()

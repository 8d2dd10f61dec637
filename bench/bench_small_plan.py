"""The default estimator on a small plan sized by the planner, with and without the audit floor.

Run: ``python bench/bench_small_plan.py --replicates 200 --jobs 2`` (results cached per seed
under ``bench/results/raw/small_plan/``; ``--collect`` rebuilds the report).

Each replicate simulates a ReFormBench-shaped project (:mod:`reform_core.simulate`: 240
questions, 3 models, judges wrong together on 1 % of instances, correlated truths), plans it
with ``plan --target-half-width 6 --metric tcpr`` (:func:`reform_core.estimators.planner.plan_for_half_width`,
the planner's default assumptions), lets simulated annotators who err 5 % decide the tasks
(the plan's opinion rule followed) and scores the finished plan under each rule of :data:`RULES`
for the audit floor (which metrics have one, and whether its rate counts the errors the audit
found or is the prior's half event alone; the first rule is the product's). Such a plan audits a
few dozen agreements per model, so the audit usually finds none of the rare rows both judges
have wrong: the question this bench answers is whether the intervals still cover then. Coverage of the measurement interval (Clopper–Pearson
interval), bias and mean half-width of TCPR and the constraint level, and the planner's
predicted half-width. Results: ``bench/results/small_plan.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import machine_line  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "small_plan.md"
RAW = Path(__file__).resolve().parent / "results" / "raw" / "small_plan"
REVISION = "p3"  # estimator revision in the cache key
HALF_WIDTH = 6.0
HUMAN_ERROR = 0.05
JOINT = ("emcr", "r1", "r2", "r3")
ALL = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
# rule -> (metrics with a floor, metrics whose floor rate counts the errors the audit found)
RULES = {
    "every metric; found errors counted for R^K, EMCR": (ALL, JOINT),
    "every metric; found errors counted everywhere": (ALL, ALL),
    "products (TCPR, R^K, EMCR)": (ALL[:5], ALL[:5]),
    "joint products only": (JOINT, JOINT),
    "none": ((), ()),
}
METRICS = ("tcpr", "constraint_level")


def replicate(seed: int) -> pd.DataFrame:
    """One replicate: rows ``rule, model, metric, truth, estimate, lo, hi, predicted``."""
    from bench.validation import simulated_decisions
    from bench.validation_any_shape import point_frame
    from reform_core.estimators import cluster, draws, planner
    from reform_core.estimators.cluster import variance
    from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY
    from reform_core.simulate import simulate
    from reform_core.unit_index import build_index

    sim = simulate(seed, "paper", n_questions=240, n_instructions=1200, n_models=3, both_wrong=0.01)
    inst = sim.instances()
    inst = inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)
    ja, jb = "label_judge_a", "label_judge_b"
    design, table = planner.plan_for_half_width(
        inst, half_width=HALF_WIDTH, metric="tcpr", seed=seed, judge_a=ja, judge_b=jb
    )
    tasks = draws.draw(inst, design, judge_a=ja, judge_b=jb)
    by_iid = inst.set_index(INSTANCE_KEY)
    reference = pd.Series(
        design.second_opinion_reference(
            tasks["iid"], tasks["kind"], by_iid[ja].reindex(tasks["iid"]).to_numpy(dtype=float)
        ),
        index=tasks["iid"].to_numpy(),
    )
    rng = np.random.default_rng([seed, 36])
    decisions = simulated_decisions(by_iid["truth"].astype(float), tasks, HUMAN_ERROR, rng, reference=reference)
    index = build_index(inst, condition=None)
    truth = point_frame(index, inst, "truth").set_index(["model", "metric"])["estimate"]
    predicted = table.set_index("model")["predicted_half_width"]
    rows, kept = [], (variance.FLOORED_METRICS, variance.FOUND_FLOOR_METRICS)
    try:
        for rule, (floored, found) in RULES.items():
            variance.FLOORED_METRICS, variance.FOUND_FLOOR_METRICS = floored, found
            est = cluster.estimate(
                inst,
                tasks,
                decisions,
                design,
                judge_a=ja,
                judge_b=jb,
                error_boot=0,
                rng=np.random.default_rng(seed),
                index=index,
            )
            t = est.table.set_index("model")
            rows += [
                {
                    "rule": rule,
                    "model": m,
                    "metric": k,
                    "truth": truth[(m, k)],
                    "estimate": t.loc[m, k],
                    "lo": t.loc[m, f"{k}_lo"],
                    "hi": t.loc[m, f"{k}_hi"],
                    "predicted": predicted[m],
                }
                for m in t.index
                for k in METRICS
            ]
    finally:
        variance.FLOORED_METRICS, variance.FOUND_FLOOR_METRICS = kept
    return pd.DataFrame(rows).assign(seed=seed)


def one(seed: int) -> Path:
    warnings.filterwarnings("ignore")
    path = RAW / REVISION / f"{seed}.csv"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        replicate(seed).to_csv(path.with_suffix(".tmp"), index=False)
        path.with_suffix(".tmp").replace(path)
    return path


def _coverage(hit: np.ndarray) -> str:
    from scipy.stats import beta

    n, k = len(hit), int(hit.sum())
    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k / n:.1%} ({lo:.1%}–{hi:.1%})"


def report(wall: float, command: str) -> str:
    files = sorted((RAW / REVISION).glob("*.csv"))
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    seeds = df["seed"].nunique()
    lines = [
        "## The default estimator on a planner-sized plan (bench/bench_small_plan.py)",
        "",
        f"- {machine_line()}; wall time of this invocation {wall / 60:.0f} min (replicates cached).",
        f"- Command: `{command}`; {seeds} replicates (simulator seeds {df['seed'].min()}–{df['seed'].max()}) × 3 "
        f"models; 240 questions, judges wrong together on 1 %, adjudicators erring {HUMAN_ERROR:.0%}; plan "
        f"`--target-half-width {HALF_WIDTH:g} --metric tcpr`.",
        "- The audit floor's rules compared on the same decisions (module docstring); the first is the product's.",
        "",
        "| floor on | metric | bias (pp) ± se | coverage (95 % CI) | mean half-width | planner's half-width |",
        "|---|---|---:|---|---:|---:|",
    ]
    for (rule, metric), d in df.groupby(["rule", "metric"], sort=False):
        err = d["estimate"] - d["truth"]
        hit = ((d["lo"] <= d["truth"]) & (d["truth"] <= d["hi"])).to_numpy()
        pred = f"{d['predicted'].mean():.2f}" if metric == "tcpr" else "—"
        lines.append(
            f"| {rule} | {metric.replace('_', ' ')} | {err.mean():+.2f} ± {err.std(ddof=1) / np.sqrt(len(err)):.2f} "
            f"| {_coverage(hit)} | {((d['hi'] - d['lo']) / 2).mean():.2f} | {pred} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--collect", action="store_true")
    args = ap.parse_args()
    start = time.time()
    if not args.collect:
        seeds = range(args.first_seed, args.first_seed + args.replicates)
        with ProcessPoolExecutor(args.jobs) as pool:
            for _ in pool.map(one, seeds):
                pass
    command = f"python bench/bench_small_plan.py --replicates {args.replicates} --jobs {args.jobs}"
    OUT.write_text(report(time.time() - start, command), encoding="utf-8")
    print(OUT.read_text())


if __name__ == "__main__":
    main()

"""The measurement interval on a *fixed* benchmark (issue 13, a diagnostic beside
``bench_validation.py`` and ``bench_coverage_tails.py``).

The measurement interval speaks of the score of this fixed benchmark: its uncertainty comes
from the plan's draws (which questions are adjudicated, which agreements audited) and from the
adjudicators, not from the benchmark. ``bench_validation.py`` draws a new benchmark in every
replicate, so its coverage mixes two things: how well the variance estimate tracks the
plan-and-decision variance of each benchmark, and how the benchmarks differ (a bias that
depends on the benchmark, or benchmarks whose errors the variance estimate misses).

This bench holds a few simulated benchmarks fixed and redraws only the plan (its seed) and the
adjudicators' decisions, then reports per metric:

* *coverage*: share of (benchmark, plan, model) intervals that contain this benchmark's true score;
* *conditional variance*: the estimate's variance over plans, averaged over (benchmark, model);
* *mean se²*: the reported variance, and the same with the audit's direct estimate alone;
* *spread of the conditional bias*: the variance over (benchmark, model) of the mean error,
  less the part the finite number of plans explains.

It also counts, per benchmark, the R3 units whose truth passes although one of their rows is
an agreement both judges got wrong (an agreed fail that truly passes): one such row unlocks
every unit holding its target, so whether the audit happens to draw it moves R3 by many units
at once (the rare, high-leverage events behind the estimator's one-sided misses).

    python bench/bench_fixed_benchmark.py [--benchmarks 40] [--plans 10] [--human-error 0] [--first-seed 0] [--jobs 2]

Results: ``bench/results/fixed_benchmark.md``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_validation import METRICS  # noqa: E402
from bench.machine import machine_line  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "fixed_benchmark.md"
BOTH_WRONG, CORRELATED = 0.01, True
ERROR_BOOT = 3  # as the validation bench runs it
LEVEL = 0.95


@functools.lru_cache(maxsize=2)
def _benchmark(seed: int):
    from reform_core.frames import CONDITION_MAIN
    from reform_core.metrics import reform
    from reform_core.simulate import simulate
    from reform_core.unit_index import build_index

    sim = simulate(seed, "paper", both_wrong=BOTH_WRONG, correlated=CORRELATED)
    ja, jb = (f"label_{j}" for j in sim.judges)
    inst = sim.instances()
    inst = inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)
    index = build_index(inst)
    truth = reform.table2(inst, p="truth", index=index).set_index("model")
    return inst, ja, jb, index, truth


def hidden_passes(seed: int) -> pd.Series:
    """Per model: R3 units whose truth passes while one of their rows is an agreed fail that
    truly passes (both judges wrong together)."""
    inst, ja, jb, ix, _ = _benchmark(seed)
    t, a, b = (ix.pass_vector(inst, c) for c in ("truth", ja, jb))
    flipped = (a == 0) & (b == 0) & (t == 1)
    passes = ix.evaluate(t)[1] == 1
    hidden = ix.evaluate(1.0 - flipped)[1] == 0  # the unit holds a flipped row
    sel = passes & hidden & (ix.unit_k == 3)
    return pd.Series(np.bincount(ix.unit_model[sel], minlength=len(ix.models)), index=ix.models)


def one(args) -> pd.DataFrame:
    """The default estimator on benchmark ``seed`` under plan ``plan_seed``."""
    seed, plan_seed, human_error = args
    warnings.filterwarnings("ignore")
    pd.set_option("future.infer_string", False)
    from bench.validation import planned_decisions
    from reform_core.estimators import cluster

    inst, ja, jb, index, truth = _benchmark(seed)
    rng = np.random.default_rng([plan_seed, 1, int(round(1000 * human_error))])
    params, tasks, decisions = planned_decisions(inst, ja, jb, plan_seed, human_error, rng)
    est = cluster.estimate(
        inst, tasks, decisions, params, judge_a=ja, judge_b=jb, index=index, rng=rng, error_boot=ERROR_BOOT, level=LEVEL
    )
    t = est.table.set_index("model")
    comp = est.components.set_index(["model", "metric"])
    rows = []
    for mi, m in enumerate(t.index):
        for mt in METRICS:
            c = comp.loc[(m, mt)]
            rows.append(
                {
                    "seed": seed,
                    "plan": plan_seed,
                    "model": m,
                    "metric": mt,
                    "err": t.loc[m, mt] - truth.loc[m, mt],
                    "se": t.loc[m, f"se_{mt}"],
                    "df": est.df[mi],
                    "v_direct": c["sampling"] + max(c["audit_direct"], 0.0) + c["adjudicator_error"],
                }
            )
    return pd.DataFrame(rows)


def summarize(reps: pd.DataFrame) -> pd.DataFrame:
    out = []
    for mt in METRICS:
        g = reps[reps["metric"] == mt]
        cell = g.groupby(["seed", "model"])
        plans = cell.size().min()
        cond_var = cell["err"].var(ddof=1).mean()
        bias = cell["err"].mean()
        out.append(
            {
                "metric": mt,
                "coverage": (g["err"].abs() <= stats.t.ppf(0.5 + LEVEL / 2, g["df"]) * g["se"]).mean(),
                "cond_var": cond_var,
                "se2": (g["se"] ** 2).mean(),
                "se2_direct": g["v_direct"].mean(),
                "bias_spread": max(bias.var(ddof=1) - cond_var / plans, 0.0),
                "mean_bias": bias.mean(),
            }
        )
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmarks", type=int, default=40)
    ap.add_argument("--plans", type=int, default=10)
    ap.add_argument("--human-error", type=float, default=0.0)
    ap.add_argument("--first-seed", type=int, default=0, help="benchmarks: simulator seeds FIRST+1 … FIRST+benchmarks")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    seeds = range(args.first_seed + 1, args.first_seed + args.benchmarks + 1)
    # plan seeds far from the simulator's: plan k of benchmark s is 10⁶ + 1000 s + k
    jobs = [(s, 1_000_000 + 1000 * s + k, args.human_error) for s in seeds for k in range(args.plans)]
    with ProcessPoolExecutor(args.jobs) as ex:  # consecutive jobs share a benchmark (cached per worker)
        reps = pd.concat(ex.map(one, jobs, chunksize=max(args.plans // args.jobs, 1)), ignore_index=True)
    s = summarize(reps)
    r3 = reps[reps["metric"] == "r3"].groupby(["seed", "model"])["err"].mean().rename("bias")
    hidden = pd.concat({seed: hidden_passes(seed) for seed in seeds}, names=["seed", "model"]).rename("hidden")
    per = pd.concat([r3, hidden], axis=1).dropna()
    lines = [
        "## The measurement interval on fixed benchmarks (bench/bench_fixed_benchmark.py)",
        "",
        f"- {machine_line()} Wall time {(time.time() - t0) / 60:.0f} min.",
        f"- Command: `python bench/bench_fixed_benchmark.py --benchmarks {args.benchmarks} --plans {args.plans} "
        f"--human-error {args.human_error:g} --first-seed {args.first_seed} --jobs {args.jobs}`: simulator seeds "
        f"{seeds.start}–{seeds.stop - 1} (judges wrong together on {BOTH_WRONG:.0%} of instances, correlated "
        f"truths, adjudicators who err {args.human_error:.0%}), each benchmark held fixed under {args.plans} "
        "independently drawn default plans and their decisions; the default estimator, 10 models.",
        "- *cond. var*: the estimate's variance over plans on one benchmark, averaged over benchmark × model "
        "(%²); *mean se²*: the reported variance; *direct*: with the audit's design-based estimate alone; "
        "*bias spread*: the variance over benchmark × model of the mean error, less what the finite number "
        "of plans explains (%²).",
        "",
        "| metric | coverage | cond. var | mean se² | mean se² (direct) | bias spread | mean bias (pp) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.metric.upper()} | {r.coverage:.1%} | {r.cond_var:.3f} | {r.se2:.3f} | {r.se2_direct:.3f} | "
        f"{r.bias_spread:.3f} | {r.mean_bias:+.3f} |"
        for r in s.itertuples()
    ]
    rho = stats.spearmanr(per["hidden"], per["bias"]).statistic if len(per) > 2 else float("nan")
    lines += [
        "",
        f"R3 units that truly pass while a row both judges call a fail truly passes (*hidden passes*), per "
        f"model, and R3's mean error on that benchmark: median {per['hidden'].median():.0f} units "
        f"(range {per['hidden'].min():.0f}–{per['hidden'].max():.0f}); Spearman correlation with the mean "
        f"error {rho:+.2f}.",
        "",
    ]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

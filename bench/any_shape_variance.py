"""Where the default estimator's variance comes from on the any-shape family (a diagnostic
beside ``bench/validation_any_shape.py``, issue 32).

For each scenario it reruns the default estimator on the validation's replicates (same
generator seeds, plans, decisions and random streams: ``validation_any_shape.replicate``'s
steps, so the estimates and standard errors are the validation's) and records, per model and
metric, the variance by source (``cluster.estimate(...).components``) and the two inputs of the
audit's reported variance that the components do not show: the composite of
``audit_variance.audit_composite`` and the Jeffreys floor of ``audit_variance.audit_floor`` (the reported
audit variance is their maximum). Recorded by wrapping those two functions for the run (they
are restored after each replicate); nothing of the estimator is changed.

It also runs a **control**: the same generator with ``judge="uniform"`` (every feature errs at
the features' mean rates, both judges wrong together on 0.6 % of every constraint — as many
both-wrong errors, not concentrated on features), to tell the family's shape (no variants,
variable counts) from its feature-dependent judge.

    python bench/any_shape_variance.py [--replicates 200] [--first-seed 0] [--jobs 2]

Results: ``bench/results/validation_any_shape_variance.md`` (after the validation's section in
``bench/RESULTS.md``).
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
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_validation import metric_label  # noqa: E402
from bench.machine import machine_line  # noqa: E402
from bench.validation_any_shape import ERRORS, JUDGE_COLUMNS, METRICS  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "validation_any_shape_variance.md"
ERROR_BOOT = 3  # as the validation runs it
RAW_DIR = Path(__file__).resolve().parent / "results" / "raw"
RAW_NAME = "any_shape_variance_first{first}_n{n}.csv"


def _recording(variance, record: list):
    """Wrap the variance step's ``audit_floor`` and ``audit_composite`` to append, per metric in
    the estimator's order, the floor and the composite; returns the originals."""
    floor_fn, composite_fn = variance.audit_floor, variance.audit_composite

    def floor(*a, **k):
        got = floor_fn(*a, **k)
        record.append({"floor": got[0]})
        return got

    def composite(direct, exposure):
        got = composite_fn(direct, exposure)
        record[-1]["composite"] = got
        return got

    variance.audit_floor, variance.audit_composite = floor, composite
    return floor_fn, composite_fn


def one(args) -> pd.DataFrame:
    """The default estimator on one replicate: per model and metric the error, standard error,
    degrees of freedom and the variance inputs."""
    seed, error, judge = args
    warnings.filterwarnings("ignore")
    pd.set_option("future.infer_string", False)
    import importlib

    from bench.scenarios_any_shape import generate
    from bench.validation import planned_decisions
    from bench.validation_any_shape import point_frame
    from reform_core.estimators import cluster
    from reform_core.estimators.cluster.layout import METRICS as ESTIMATOR_METRICS
    from reform_core.unit_index import build_index

    variance = importlib.import_module("reform_core.estimators.cluster.variance")

    inst = generate(seed, judge=judge)
    ja, jb = JUDGE_COLUMNS
    rng = np.random.default_rng([int(seed), 1, int(round(1000 * error))])
    params, tasks, decisions = planned_decisions(inst, ja, jb, seed, error, rng)
    index = build_index(inst)
    record: list = []
    originals = _recording(variance, record)
    try:
        est = cluster.estimate(
            inst, tasks, decisions, params, judge_a=ja, judge_b=jb, index=index, rng=rng, error_boot=ERROR_BOOT
        )
    finally:
        variance.audit_floor, variance.audit_composite = originals
    truth = point_frame(index, inst, "truth").set_index(["model", "metric"])["estimate"]
    t, comp = est.table.set_index("model"), est.components.set_index(["model", "metric"])
    rows = []
    for metric, rec in zip(ESTIMATOR_METRICS, record):
        if metric not in METRICS:
            continue
        for mi, m in enumerate(index.models):
            c = comp.loc[(m, metric)]
            rows.append(
                {
                    "judge": judge,
                    "error": error,
                    "seed": seed,
                    "model": m,
                    "metric": metric,
                    "err": t.loc[m, metric] - truth[(m, metric)],
                    "se": t.loc[m, f"se_{metric}"],
                    "df": est.df[mi],
                    "sampling": c["sampling"],
                    "audit": c["audit"],
                    "direct": c["audit_direct"],
                    "adjudicator_error": c["adjudicator_error"],
                    "composite": rec["composite"][mi],
                    "floor": rec["floor"][mi],
                }
            )
    return pd.DataFrame(rows)


def _coverage(g: pd.DataFrame, audit: pd.Series) -> float:
    half = stats.t.ppf(0.975, g["df"]) * np.sqrt(g["sampling"] + audit.clip(lower=0.0) + g["adjudicator_error"])
    return float((g["err"].abs() <= half).mean())


def _implied(g: pd.DataFrame) -> dict:
    """The audit's variance implied by the realised errors — the mean squared error less the
    mean sampling and adjudicator-error components (the bias is ≈ 0) — and the mean floor,
    composite and reported audit variance over it."""
    implied = (g["err"] ** 2).mean() - g["sampling"].mean() - g["adjudicator_error"].mean()
    return {
        "implied_audit": implied,
        "floor_over_implied": g["floor"].mean() / implied,
        "composite_over_implied": g["composite"].mean() / implied,
        "audit_over_implied": g["audit"].mean() / implied,
    }


def summarize(reps: pd.DataFrame) -> pd.DataFrame:
    """Per judge × error × metric: coverage as run and with other audit variances rebuilt from
    the recorded inputs, the errors' sd over the rms standard error, and the floor's size."""
    out = []
    for (judge, error, metric), g in reps.groupby(["judge", "error", "metric"], sort=False):
        total = g["se"] ** 2
        out.append(
            {
                "judge": judge,
                "error": error,
                "metric": metric,
                "pairs": len(g),
                "coverage": _coverage(g, g["audit"]),
                "sd_over_se": g["err"].std(ddof=1) / np.sqrt(total.mean()),
                "mse": (g["err"] ** 2).mean(),
                "mean_var": total.mean(),
                "share_audit": g["audit"].mean() / total.mean(),
                "floor_binds": (g["floor"] > g["composite"]).mean(),
                "cov_composite": _coverage(g, g["composite"]),
                "cov_direct": _coverage(g, g["direct"]),
                "cov_floor": _coverage(g, g["floor"]),
                **_implied(g),
            }
        )
    return pd.DataFrame(out)


def by_model(reps: pd.DataFrame) -> pd.DataFrame:
    """Per judge × error × metric × model: how often the floor binds, and the errors' sd over
    the rms standard error (models are ordered strongest first)."""
    return (
        reps.groupby(["judge", "error", "metric", "model"], sort=False)
        .apply(
            lambda g: pd.Series(
                {
                    "floor_binds": (g["floor"] > g["composite"]).mean(),
                    "sd_over_se": g["err"].std(ddof=1) / np.sqrt((g["se"] ** 2).mean()),
                }
            )
        )
        .reset_index()
    )


def table_lines(s: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    lines = [
        "| judge | adjudicator error | metric | coverage as run | sd / se | MSE | mean se² | audit share | "
        "implied audit variance | reported / implied | composite / implied | floor / implied | floor binds | "
        "coverage: composite only | direct only | floor only | floor binds, strongest → weakest model |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in s.itertuples():
        m = models[(models["judge"] == r.judge) & (models["error"] == r.error) & (models["metric"] == r.metric)]
        lines.append(
            f"| {r.judge} | {r.error:.0%} | {metric_label(r.metric)} | {r.coverage:.1%} | {r.sd_over_se:.2f} | "
            f"{r.mse:.3f} | {r.mean_var:.3f} | {r.share_audit:.0%} | {r.implied_audit:.3f} | "
            f"{r.audit_over_implied:.2f} | {r.composite_over_implied:.2f} | {r.floor_over_implied:.2f} | "
            f"{r.floor_binds:.0%} | {r.cov_composite:.1%} | {r.cov_direct:.1%} | {r.cov_floor:.1%} | "
            + " ".join(f"{v:.0%}" for v in m["floor_binds"])
            + " |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    seeds = range(args.first_seed + 1, args.first_seed + args.replicates + 1)
    jobs = [(s, e, j) for j in ("by-feature", "uniform") for e in ERRORS for s in seeds]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            got = list(ex.map(one, jobs))
    else:
        got = [one(j) for j in jobs]
    reps = pd.concat(got, ignore_index=True)
    lines = [
        "## Where the any-shape family's variance comes from (bench/any_shape_variance.py)",
        "",
        f"- {machine_line()} Wall time {(time.time() - t0) / 60:.0f} min.",
        f"- Command: `python bench/any_shape_variance.py --replicates {args.replicates} --first-seed "
        f"{args.first_seed} --jobs {args.jobs}` (generator seeds {seeds[0]}–{seeds[-1]}, the validation's "
        "replicates: the *by-feature* rows reproduce its coverage to the pair); *uniform*: the control judge "
        "(module docstring).",
        "- *sd / se*: the errors' standard deviation over the root mean square standard error (1 = right on "
        "average); *MSE* and *mean se²* in pp²; *audit share*: the audit's reported variance over the total; "
        "*implied audit variance*: MSE less the mean sampling and adjudicator-error components (pp²; the bias "
        "is ≈ 0), the audit's variance the realised errors show; *reported / composite / floor over implied*: "
        "the mean reported audit variance (max of the two), composite and Jeffreys floor over it (1 = right on "
        "average); *floor binds*: share of model × replicate pairs whose floor exceeds the composite (so it is "
        "the reported audit variance); *coverage: … only*: the intervals rebuilt with that audit variance in "
        "place of max(composite, floor) (*direct*: the audit's design-based estimate).",
        f"- Raw rows: `bench/results/raw/{RAW_NAME.format(first=args.first_seed, n=args.replicates)}`.",
        "",
    ]
    raw = RAW_DIR / RAW_NAME.format(first=args.first_seed, n=args.replicates)
    raw.parent.mkdir(parents=True, exist_ok=True)
    reps.to_csv(raw, index=False)
    lines += table_lines(summarize(reps), by_model(reps)) + [""]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

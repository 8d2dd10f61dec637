"""Where the default estimator's measurement intervals miss (issue 13, a diagnostic beside
``bench_validation.py``).

For the validation's five one-factor scenarios it reruns the default estimator on the same
replicates (``bench.validation.adjudicated_replicate``, which ``run_replicate`` uses
too: same simulator seeds, plans, decisions and random streams, so the estimates and standard
errors are the validation's) and splits each metric's misses by side: the truth *below* the interval (the
estimate too high) or *above* it (too low). It also reports how the standard error moves
with the error of the estimate (``corr(err, se)``) and with the audit's variance component
alone, and the ratio of the errors' standard deviation to the root mean square of the
standard errors (1 = the variance is right on average).

A Wald interval whose variance is right on average (ratio ≈ 1) still misses on one side when
its standard error is correlated with its error: the audit term is a Horvitz–Thompson sum of
rare, large corrections, and a replicate whose audit happened to find few of them gets both a
shifted estimate and a small standard error (the Wald interval of a Poisson count).

Where the variance comes from: the mean of each component (``cluster.estimate(...).components``:
sampling — the clusters' spread without the audit's residuals —, the audit as reported — the
composite of :func:`reform_core.estimators.cluster.audit_composite` or the Jeffreys floor —,
and adjudicator error), and what the intervals would do with the audit's design-based
estimate alone in place of the composite and floor (coverage and ``sd / se`` of that rule).

    python bench/bench_coverage_tails.py [--replicates 100] [--first-seed 0] [--jobs 2]

Seeds ``first-seed + 1 … first-seed + replicates``, as ``bench_validation.py`` numbers them.

Results: ``bench/results/coverage_tails.md``.
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

from bench.bench_validation import METRICS, scenario_name, scenarios  # noqa: E402
from bench.machine import machine_line  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "coverage_tails.md"
ERROR_BOOT = 3  # as the validation bench runs it (--error-boot 3)
LEVEL = 0.95


def one(args) -> pd.DataFrame:
    """The default estimator on replicate ``seed`` of a scenario: per model and metric the
    error, standard error, interval and variance components."""
    seed, (human_error, both_wrong, correlated) = args
    warnings.filterwarnings("ignore")
    pd.set_option(
        "future.infer_string", False
    )  # object strings, as bench_validation runs (the same numbers to the pair)
    from bench.validation import adjudicated_replicate
    from reform_core.estimators import cluster

    r = adjudicated_replicate(seed, human_error=human_error, both_wrong=both_wrong, correlated=correlated)
    truth = r.truth
    est = cluster.estimate(
        r.instances,
        r.tasks,
        r.decisions,
        r.params,
        judge_a=r.judge_a,
        judge_b=r.judge_b,
        index=r.index,
        rng=r.rng,
        error_boot=ERROR_BOOT,
        level=LEVEL,
    )
    t = est.table.set_index("model")
    comp = est.components.set_index(["model", "metric"])
    rows = []
    for mi, m in enumerate(t.index):
        for mt in METRICS:
            rows.append(
                {
                    "seed": seed,
                    "model": m,
                    "metric": mt,
                    "truth": truth.loc[m, mt],
                    "err": t.loc[m, mt] - truth.loc[m, mt],
                    "se": t.loc[m, f"se_{mt}"],
                    "lo": t.loc[m, f"{mt}_lo"],
                    "hi": t.loc[m, f"{mt}_hi"],
                    "df": est.df[mi],
                    "v_sampling": comp.loc[(m, mt), "sampling"],
                    "v_audit": comp.loc[(m, mt), "audit"],
                    "v_direct": comp.loc[(m, mt), "audit_direct"],
                    "v_error": comp.loc[(m, mt), "adjudicator_error"],
                }
            )
    return pd.DataFrame(rows)


def summarize(reps: pd.DataFrame) -> pd.DataFrame:
    """Per metric: coverage, misses by side, the correlations and the variance ratio."""
    out = []
    for mt in METRICS:
        g = reps[reps["metric"] == mt]
        total = g["v_sampling"] + g["v_audit"] + g["v_error"]
        se_direct = np.sqrt(g["v_sampling"] + g["v_direct"].clip(lower=0.0) + g["v_error"])
        half = stats.t.ppf(0.5 + LEVEL / 2, g["df"]) * se_direct
        out.append(
            {
                "metric": mt,
                "pairs": len(g),
                "coverage": ((g["lo"] <= g["truth"]) & (g["truth"] <= g["hi"])).mean(),
                "too_high": (g["truth"] < g["lo"]).mean(),
                "too_low": (g["truth"] > g["hi"]).mean(),
                "corr_se": np.corrcoef(g["err"], g["se"])[0, 1],
                "corr_audit": np.corrcoef(g["err"], g["v_audit"])[0, 1],
                "sd_over_se": g["err"].std(ddof=1) / np.sqrt((g["se"] ** 2).mean()),
                "share_sampling": g["v_sampling"].mean() / total.mean(),
                "share_audit": g["v_audit"].mean() / total.mean(),
                "share_error": g["v_error"].mean() / total.mean(),
                "coverage_direct": (g["err"].abs() <= half).mean(),
                "sd_over_se_direct": g["err"].std(ddof=1) / np.sqrt((se_direct**2).mean()),
            }
        )
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds FIRST+1 … FIRST+replicates (as bench_validation)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    lines = [
        "## Where the measurement intervals miss (bench/bench_coverage_tails.py)",
        "",
        f"- {machine_line()}",
        f"- Command: `python bench/bench_coverage_tails.py --replicates {args.replicates} --first-seed {args.first_seed} "
        f"--jobs {args.jobs}` (simulator seeds {args.first_seed + 1}–{args.first_seed + args.replicates}); "
        f"the default estimator on the validation's replicates (same seeds, plans, decisions and random streams; "
        f"{ERROR_BOOT} refits of the adjudicator-error model), 10 models per replicate.",
        "- *too high*: share of model × replicate pairs whose interval lies above the truth (the estimate too "
        "high); *too low*: below it. `corr(err, se)`: correlation of the estimate's error with its standard "
        "error; `corr(err, audit)`: with the audit's variance component alone; `sd / se`: the errors' standard "
        "deviation over the root mean square of the standard errors (1 = right on average). *Variance shares*: "
        "each component's mean over the mean total (sampling / audit as reported / adjudicator error). *Direct "
        "audit only*: the same intervals with the audit's design-based estimate (clipped at 0) in place of the "
        "composite and floor.",
        "",
    ]
    body = []
    for sc in scenarios("one-factor"):
        with ProcessPoolExecutor(args.jobs) as ex:
            seeds = range(args.first_seed + 1, args.first_seed + args.replicates + 1)
            reps = pd.concat(ex.map(one, [(s, sc) for s in seeds]), ignore_index=True)
        s = summarize(reps)
        body += [
            f"#### {scenario_name(*sc)}",
            "",
            "| metric | coverage | too high | too low | corr(err, se) | corr(err, audit) | sd / se "
            "| variance shares | direct audit only: coverage | sd / se |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        body += [
            f"| {r.metric.upper()} | {r.coverage:.1%} | {r.too_high:.1%} | {r.too_low:.1%} | {r.corr_se:+.2f} | "
            f"{r.corr_audit:+.2f} | {r.sd_over_se:.2f} | {r.share_sampling:.0%} / {r.share_audit:.0%} / "
            f"{r.share_error:.1%} | {r.coverage_direct:.1%} | {r.sd_over_se_direct:.2f} |"
            for r in s.itertuples()
        ]
        body.append("")
        print(f"{scenario_name(*sc)} done ({time.time() - t0:.0f} s)", flush=True)
    lines[2] += f" Wall time {(time.time() - t0) / 60:.0f} min."
    OUT.write_text("\n".join(lines + body), encoding="utf-8")
    print(OUT)


if __name__ == "__main__":
    main()

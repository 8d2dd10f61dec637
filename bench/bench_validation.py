"""Validation of the estimators on the simulator (issue 13, point 6; SPEC §4.1).

Run: ``python bench/bench_validation.py`` (all 12 scenarios × 100 paper-scale replicates:
hours on 2 cores; ``--jobs 2`` uses both; finished replicates are cached under
``bench/results/raw/validation/`` so an interrupted run resumes). Quick look:
``python bench/bench_validation.py --replicates 5 --scale-down``.

Scenarios: adjudicator error 0 %, 5 %, 10 % × judges wrong together on 0 % / 1 % of the
instances × correlated truths on / off (the full factorial). In each replicate
(:func:`reform_core.validation.run_replicate`) a paper-scale project is simulated, the
**default plan** is drawn, simulated annotators decide its tasks, and every estimator
scores from the same decisions: the new default (``cluster``), the paper's ``stratified``
and ``pooled`` rules, each judge's raw labels, and PPI++ (``ppi_py``) on a uniform random
human sample of the same number of decisions (``bench/ppi_baseline.py``). Results:
``bench/results/validation.md``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import machine_line  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "validation.md"
RAW = Path(__file__).resolve().parent / "results" / "raw" / "validation"
ERRORS = (0.0, 0.05, 0.10)
BOTH_WRONG = (0.0, 0.01)
CORRELATED = (True, False)
LABELS = {"cluster": "default (question-cluster)", "stratified": "SPEC §4 stratified", "pooled": "pooled",
          "judge_a": "judge A raw", "judge_b": "judge B raw", "ppi++": "PPI++ (uniform sample, same size)"}
TARGET = dict(bias=0.2, coverage=(0.93, 0.97))
SCALE_DOWN = dict(n_questions=300, n_instructions=1650, n_models=4)


def scenario_name(e: float, b: float, c: bool) -> str:
    return f"err{int(round(e * 100)):02d}_both{int(round(b * 100))}_{'corr' if c else 'indep'}"


def one(args) -> Path:
    warnings.filterwarnings("ignore")
    from bench.ppi_baseline import comparator
    from reform_core.validation import run_replicate

    seed, e, b, c, n_boot, error_boot, scale_down, tag = args
    path = RAW / tag / f"{scenario_name(e, b, c)}_{seed}.csv"
    if path.exists():
        return path
    t0 = time.perf_counter()
    rep = run_replicate(seed, human_error=e, both_wrong=b, correlated=c, n_boot=n_boot, error_boot=error_boot,
                        extra=comparator(e), **(SCALE_DOWN if scale_down else {}))
    rep["seconds"] = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    rep.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path


def section(name: str, reps: pd.DataFrame) -> list[str]:
    from reform_core.validation import summarize

    s = summarize(reps.drop(columns=["seconds"]))
    n_rep = reps["seed"].nunique()
    dec = reps[(reps["estimator"] == "cluster") & (reps["metric"] == "tcpr")]["decisions"].mean()
    secs = reps.drop_duplicates("seed")["seconds"]
    lines = [f"#### {name}", "",
             f"{n_rep} replicates × {reps['model'].nunique()} models; {dec:,.0f} human decisions per model on average "
             f"(default plan; PPI++ gets the same number); {secs.median():.1f} s per replicate (median).", "",
             "| estimator | metric | bias (pp) ± se | MAE | measurement coverage (95 % CI) | width | population coverage | width |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for _, r in s.iterrows():
        cov = "—" if pd.isna(r["coverage"]) else f"{r['coverage']:.1%} ({r['coverage_low']:.1%}–{r['coverage_high']:.1%})"
        pcov = "—" if pd.isna(r["pop_coverage"]) else f"{r['pop_coverage']:.1%}"
        w = "—" if pd.isna(r["width"]) else f"{r['width']:.2f}"
        pw = "—" if pd.isna(r["pop_width"]) else f"{r['pop_width']:.2f}"
        lines.append(f"| {LABELS.get(r['estimator'], r['estimator'])} | {r['metric'].upper()} | {r['bias']:+.3f} ± "
                     f"{r['bias_se']:.3f} | {r['mae']:.3f} | {cov} | {w} | {pcov} | {pw} |")
    return lines + [""]


def verdict(all_reps: dict[str, pd.DataFrame]) -> list[str]:
    """Targets of issue 13 for the default estimator, scenario by scenario."""
    from reform_core.validation import summarize

    lines = ["| scenario | metric | bias ≤ 0.2 pp | coverage 93–97 % | width ≤ PPI++ |", "|---|---|---|---|---|"]
    for name, reps in all_reps.items():
        s = summarize(reps.drop(columns=["seconds"])).set_index(["estimator", "metric"])
        for metric in ("tcpr", "emcr", "r1", "r2", "r3"):
            r = s.loc[("cluster", metric)]
            ppi_w = s.loc[("ppi++", metric), "width"] if ("ppi++", metric) in s.index else float("nan")
            ok_b = abs(r["bias"]) <= TARGET["bias"]
            ok_c = TARGET["coverage"][0] <= r["coverage"] <= TARGET["coverage"][1]
            ok_w = r["width"] <= ppi_w
            lines.append(f"| {name} | {metric.upper()} | {'yes' if ok_b else 'NO'} ({r['bias']:+.3f}) | "
                         f"{'yes' if ok_c else 'NO'} ({r['coverage']:.1%}) | {'yes' if ok_w else 'NO'} "
                         f"({r['width']:.2f} vs {ppi_w:.2f}) |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--error-boot", type=int, default=50)
    ap.add_argument("--scale-down", action="store_true", help="a third of the paper scale, 4 models (quick look)")
    ap.add_argument("--scenarios", nargs="*", help="names like err05_both1_corr (default: all 12)")
    args = ap.parse_args()
    tag = "small" if args.scale_down else "paper"
    grid = [(e, b, c) for e, b, c in itertools.product(ERRORS, BOTH_WRONG, CORRELATED)
            if not args.scenarios or scenario_name(e, b, c) in args.scenarios]
    jobs = [(1000 * i + r, e, b, c, args.n_boot, args.error_boot, args.scale_down, tag)
            for i, (e, b, c) in enumerate(grid) for r in range(args.replicates)]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            paths = list(ex.map(one, jobs))
    else:
        paths = [one(j) for j in jobs]
    print(f"{len(paths)} replicates in {(time.perf_counter() - t0) / 60:.1f} min", flush=True)
    all_reps = {}
    for i, (e, b, c) in enumerate(grid):
        mine = [p for p, j in zip(paths, jobs) if (j[1], j[2], j[3]) == (e, b, c)]
        all_reps[scenario_name(e, b, c)] = pd.concat([pd.read_csv(p) for p in mine], ignore_index=True)
    scale = "a third of paper scale (300 questions, 4 models)" if args.scale_down else "paper scale (910 questions, 5,000 instructions, 10 models)"
    lines = ["## Estimator validation on the simulator (bench/bench_validation.py)", "",
             f"- {machine_line()}",
             f"- {scale}; {args.replicates} replicates per scenario; intervals: 95 %, {args.n_boot:,} bootstrap replicates "
             f"for the paper rules' and the population intervals, {args.error_boot} refits of the adjudicator-error model.",
             "- truth: the scores of the same fixed benchmark from the hidden true labels; bias = mean(estimate − truth) "
             "over models × replicates; coverage = share of model × replicate pairs whose measurement interval holds the "
             "truth (exact Clopper–Pearson 95 % CI); width = mean measurement-interval width (pp). Definitions: "
             "`reform_core/validation.py`.", "",
             "### Targets for the default estimator (issue 13): |bias| ≤ 0.2 pp, coverage 93–97 %, width ≤ PPI++", ""]
    lines += verdict(all_reps) + ["", "### Every estimator, scenario by scenario", ""]
    for name, reps in all_reps.items():
        lines += section(name, reps)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    out = OUT if not args.scale_down else OUT.with_name("validation_small.md")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

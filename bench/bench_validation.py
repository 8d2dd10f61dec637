"""Statistical validation of calibration and intervals on the simulator (issue 5).

Run: ``cd /work/main && python bench/bench_validation.py`` (about 15–20 min on 2 busy
cores). Each replicate simulates a paper-scale project (seed = replicate number), draws the
SPEC §4 adjudication sample with a seeded generator, adjudicates it with the simulator's
oracle, calibrates (stratified), scores calibrated / judge A raw / judge B raw / truth and
computes the engine's 95 % intervals (2,000 bootstrap replicates) — see
:mod:`reform_core.validation`. A second, smaller set repeats it with a fallible oracle
(``human_error``). Results: ``bench/results/validation.md``.

Options: ``--replicates 100 --human-error-replicates 20 --human-error 0.05 --n-boot 2000
--scale paper``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import machine_line  # noqa: E402
from reform_core.validation import run_replicate, summarize  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "validation.md"
ESTIMATOR_LABELS = (
    ("calibrated", "calibrated"), ("judge_a", "judge A raw"), ("judge_b", "judge B raw"),
    ("oracle_disagreements", "all disagreements adjudicated"), ("true_rates", "true stratum rates"),
)


def run_set(seeds, label: str, **kwargs) -> tuple[pd.DataFrame, list[float]]:
    parts, times = [], []
    for i, seed in enumerate(seeds):
        t0 = time.perf_counter()
        parts.append(run_replicate(seed, rng=np.random.default_rng([seed, 1]), **kwargs))
        times.append(time.perf_counter() - t0)
        print(f"{label}: replicate {i + 1}/{len(seeds)} (seed {seed}) {times[-1]:.1f} s", flush=True)
    return pd.concat(parts, ignore_index=True), times


def section(title: str, reps: pd.DataFrame, times: list[float], settings: str) -> list[str]:
    s = summarize(reps).set_index("metric")
    n_rep = reps["seed"].nunique()
    per_model = reps[reps["metric"] == "tcpr"]
    frac = per_model["n_adjudicated"].sum() / per_model["n_disagreements"].sum()
    lines = [
        f"### {title}", "",
        f"- {settings}; {n_rep} replicates × {per_model['model'].nunique()} models; "
        f"mean {per_model['n_disagreements'].mean():,.0f} disagreements and "
        f"{per_model['n_adjudicated'].mean():,.0f} adjudications per model (sampling fraction {frac:.1%}).",
        f"- time per replicate: median {statistics.median(times):.2f} s over {len(times)} runs "
        f"(min {min(times):.2f}, max {max(times):.2f}); total {sum(times) / 60:.1f} min.", "",
        "Mean absolute error vs the truth (pp, over models × replicates):", "",
        "| metric | " + " | ".join(lab for _, lab in ESTIMATOR_LABELS) + " | mean signed error, calibrated "
        "| replicates where calibrated beats A / B |",
        "|---|" + "---:|" * (len(ESTIMATOR_LABELS) + 2),
    ]
    for m in s.index:
        r = s.loc[m]
        maes = " | ".join(f"{r[f'mae_{e}']:.3f}" for e, _ in ESTIMATOR_LABELS)
        lines.append(f"| {m.upper()} | {maes} | {r['bias_calibrated']:+.3f} | {r['win_a']:.0%} / {r['win_b']:.0%} |")
    lines += [
        "", "Coverage of the truth by 95 % intervals (share of model × replicate pairs, exact 95 % CI):", "",
        "| metric | pairs | engine interval (questions + adjudications) | mean width (pp) "
        "| adjudication-only interval (diagnostic) | mean width (pp) |",
        "|---|---:|---|---:|---|---:|",
    ]
    for m in s.index:
        r = s.loc[m]
        lines.append(
            f"| {m.upper()} | {int(r['n_pairs'])} | {r['coverage']:.1%} ({r['coverage_low']:.1%}–{r['coverage_high']:.1%}) "
            f"| {r['width']:.2f} | {r['adj_coverage']:.1%} ({r['adj_coverage_low']:.1%}–{r['adj_coverage_high']:.1%}) "
            f"| {r['adj_width']:.2f} |")
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--human-error-replicates", type=int, default=20)
    ap.add_argument("--human-error", type=float, default=0.05)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--scale", default="paper")
    args = ap.parse_args()

    base = dict(scale=args.scale, n_boot=args.n_boot)
    settings = f"simulate(seed, scale={args.scale!r}), SPEC §4 sample (z 95 %, p 0.5, e 0.03), {args.n_boot:,} bootstrap replicates"
    reps, times = run_set(list(range(args.replicates)), "oracle = truth", **base)
    lines = [
        "## Calibration and interval validation on the simulator (bench/bench_validation.py)", "",
        f"- {machine_line()}",
        "- truth: the scores from the hidden true labels on the same instances and eligible units; "
        "MAE and coverage as defined in `reform_core/validation.py`.", "",
    ]
    lines += section("Oracle = truth (human_error 0)", reps, times, settings)
    if args.human_error_replicates > 0:
        he, he_times = run_set(list(range(1000, 1000 + args.human_error_replicates)), "human error",
                               human_error=args.human_error, **base)
        lines += section(f"Fallible oracle (human_error {args.human_error})", he, he_times,
                         settings + f", oracle flips {args.human_error:.0%} of adjudications")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

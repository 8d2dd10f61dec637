"""Validation of the estimators on the simulator (issue 13, point 6; the targets of
docs/estimator.md#how-well-it-works).

Run: ``python bench/bench_validation.py --jobs 2`` (the one-factor design below, 100
paper-scale replicates per scenario; finished replicates are cached under
``bench/results/raw/validation/`` so an interrupted run resumes; ``--design full`` runs
the 12-scenario factorial instead). Quick look: ``--replicates 2``. ``--family any-shape``
runs the family that is not ReFormBench-shaped instead (``bench/validation_any_shape.py``:
1–6 constraints per prompt, no variants, no baselines, judges lenient on some features and
harsh on others; report ``bench/results/validation_any_shape.md``).

Scenarios. ``one-factor`` (default): a base scenario — adjudicators err 5 %, judges wrong
together on 1 % of the instances, correlated truths — and one-factor variations of it:
adjudicator error 0 % and 10 %, judges never wrong together, independent truths
(5 scenarios, every level of every factor appears). ``full``: the 3 × 2 × 2 factorial.
Replicate r of every scenario uses simulator seed ``--first-seed`` + r (common random numbers): scenarios
that differ only in the adjudicator error share the simulated project and the plan and
differ in the decisions (separate random streams).

In each replicate (:func:`bench.validation.run_replicate`) a paper-scale project is
simulated, the **default plan** is drawn, simulated annotators decide its tasks, and every
estimator scores from the same decisions: the new default (``cluster``), the paper's
``stratified`` and ``pooled`` rules, each judge's raw labels, and PPI++ (``ppi_py``) on a
uniform random human sample of the same number of decisions (``bench/ppi_baseline.py``).

Cost per replicate is kept low: analytic (linearised) measurement variance for the default
estimator, ``--error-boot`` refits of the adjudicator-error model (on a paper-scale replicate
with 5 % adjudicator error its variance component was 0.2 % of the EMCR measurement variance
and 0.7 % of TCPR's: ``cluster.estimate(...).components``), ``--n-boot`` bootstrap replicates for
the paper rules and the population intervals, and pandas' object strings in the bench
process (same numbers, about a third of the time of pyarrow strings for this workload).
Results: ``bench/results/validation.md`` (``python bench/run_all.py --collect`` rebuilds
``bench/RESULTS.md``).
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

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import machine_line  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "validation.md"
RAW = Path(__file__).resolve().parent / "results" / "raw" / "validation"
ERRORS = (0.0, 0.05, 0.10)
BOTH_WRONG = (0.0, 0.01)
CORRELATED = (True, False)
BASE = (0.05, 0.01, True)
LABELS = {
    "cluster": "default (question-cluster)",
    "stratified": "stratified (paper's rule)",
    "pooled": "pooled",
    "judge_a": "judge A raw",
    "judge_b": "judge B raw",
    "ppi++": "PPI++ (uniform sample, same size)",
}
TARGET = dict(bias=0.2, coverage=(0.93, 0.97))
# estimator revision in the cache key (raw results of another revision are not mixed in)
REVISION = "v11-floor-prior"
METRICS = ("tcpr", "emcr", "r1", "r2", "r3")
METRIC_LABELS = {"constraint_level": "constraint level"}


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.upper())


def scenario_name(e: float, b: float, c: bool) -> str:
    return f"err{int(round(e * 100)):02d}_both{int(round(b * 100))}_{'corr' if c else 'indep'}"


def scenarios(design_name: str) -> list[tuple[float, float, bool]]:
    """The scenarios of a design (module docstring), base first."""
    if design_name == "full":
        return list(itertools.product(ERRORS, BOTH_WRONG, CORRELATED))
    e0, b0, c0 = BASE
    out = (
        [BASE]
        + [(e, b0, c0) for e in ERRORS if e != e0]
        + [(e0, b, c0) for b in BOTH_WRONG if b != b0]
        + [(e0, b0, c) for c in CORRELATED if c != c0]
    )
    return out


def raw_path(tag: str, scenario: tuple, seed: int) -> Path:
    return RAW / tag / f"{scenario_name(*scenario)}_{seed}.csv"


ELSEWHERE_ERRORS = (0.0, 0.05)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.time() > deadline


def one_elsewhere(args) -> list[Path]:
    """One seed of the project generated elsewhere (``bench/independent_project.py``) through
    the product's command line (``bench/elsewhere_cli.py``): the default ``plan``, ``tasks`` and
    ``import`` rounds with the generator's heterogeneous adjudicators (second opinions included),
    ``score --json --intervals``; one CSV per adjudicator error level."""
    seed, error_boot, tag, deadline = args
    warnings.filterwarnings("ignore")
    from bench.elsewhere_cli import replicate
    from bench.validation import REPLICATE_COLUMNS

    paths = [RAW / tag / f"elsewhere_err{int(round(e * 100)):02d}_{seed}.csv" for e in ELSEWHERE_ERRORS]
    if all(p.exists() for p in paths) or _past(deadline):
        return paths
    t0 = time.perf_counter()
    got = replicate(seed, ELSEWHERE_ERRORS, reps=100)
    for e, path in zip(ELSEWHERE_ERRORS, paths):
        f = got[got["error"] == e].assign(estimator="cluster", pop_lo=np.nan, pop_hi=np.nan)
        f = f[REPLICATE_COLUMNS].copy()
        f["seconds"] = (time.perf_counter() - t0) / len(paths)
        path.parent.mkdir(parents=True, exist_ok=True)
        f.to_csv(path.with_suffix(".tmp"), index=False)
        os.replace(path.with_suffix(".tmp"), path)
    return paths


def one(args) -> list[Path]:
    """Every requested scenario of one seed that shares one simulated project
    (same ``both_wrong`` and ``correlated``); cached CSVs are kept."""
    if args[0] == "elsewhere":
        return one_elsewhere(args[1:])
    seed, group, n_boot, error_boot, tag, deadline = args
    warnings.filterwarnings("ignore")
    pd.set_option("future.infer_string", False)  # object strings: see the module docstring
    from bench.ppi_baseline import comparator
    from bench.validation import run_replicate
    from reform_core.simulate import simulate

    paths = [raw_path(tag, sc, seed) for sc in group]
    todo = [(sc, p) for sc, p in zip(group, paths) if not p.exists()]
    if todo and not _past(deadline):
        t0 = time.perf_counter()
        _, b, c = todo[0][0]
        project = simulate(seed, "paper", both_wrong=b, correlated=c)
        t_sim = time.perf_counter() - t0
        for (e, b, c), path in todo:
            t1 = time.perf_counter()
            rep = run_replicate(
                seed,
                human_error=e,
                both_wrong=b,
                correlated=c,
                n_boot=n_boot,
                error_boot=error_boot,
                extra=comparator(e),
                project=project,
            )
            rep["seconds"] = time.perf_counter() - t1 + t_sim / len(todo)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            rep.to_csv(tmp, index=False)
            os.replace(tmp, path)
    return paths


def _fmt_cov(r, prefix="") -> str:
    c = r[f"{prefix}coverage"]
    if pd.isna(c):
        return "—"
    return f"{c:.1%} ({r[f'{prefix}coverage_low']:.1%}–{r[f'{prefix}coverage_high']:.1%})" if not prefix else f"{c:.1%}"


def section(name: str, reps: pd.DataFrame, metrics: tuple = METRICS) -> list[str]:
    from bench.validation import summarize

    s = summarize(reps.drop(columns=["seconds"]))
    n_rep = reps["seed"].nunique()
    dec = reps[(reps["estimator"] == "cluster") & (reps["metric"] == "tcpr")]["decisions"].mean()
    secs = reps.drop_duplicates("seed")["seconds"]
    lines = [
        f"#### {name}",
        "",
        f"{n_rep} replicates × {reps['model'].nunique()} models; {dec:,.0f} human decisions per model on average "
        f"(default plan; PPI++ gets the same number); {secs.median():.1f} s per replicate (median, wall, "
        "shared machine).",
        "",
        "| estimator | metric | bias (pp) ± se | MAE | measurement coverage (95 % CI) | width | population coverage | width |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    order = {k: i for i, k in enumerate(LABELS)}
    s = s.assign(_o=s["estimator"].map(order), _m=s["metric"].map({m: i for i, m in enumerate(metrics)}))
    for _, r in s[s["metric"].isin(metrics)].sort_values(["_o", "_m"]).iterrows():
        w = "—" if pd.isna(r["width"]) else f"{r['width']:.2f}"
        pw = "—" if pd.isna(r["pop_width"]) else f"{r['pop_width']:.2f}"
        lines.append(
            f"| {LABELS.get(r['estimator'], r['estimator'])} | {metric_label(r['metric'])} | {r['bias']:+.3f} ± "
            f"{r['bias_se']:.3f} | {r['mae']:.3f} | {_fmt_cov(r)} | {w} | {_fmt_cov(r, 'pop_')} | {pw} |"
        )
    return lines + [""]


def verdict(all_reps: dict[str, pd.DataFrame], metrics: tuple = METRICS) -> tuple[list[str], int, int]:
    """Targets of issue 13 for the default estimator, scenario by scenario (coverage with its
    Clopper–Pearson 95 % interval); also counts (passed, checked)."""
    from bench.validation import summarize

    lines = [
        "| scenario | metric | bias ≤ 0.2 pp (± se) | coverage 93–97 % (95 % CI) | width ≤ PPI++ |",
        "|---|---|---|---|---|",
    ]
    ok_n = total = 0
    for name, reps in all_reps.items():
        s = summarize(reps.drop(columns=["seconds"])).set_index(["estimator", "metric"])
        for metric in metrics:
            r = s.loc[("cluster", metric)]
            ppi_w = s.loc[("ppi++", metric), "width"] if ("ppi++", metric) in s.index else float("nan")
            checks = (
                abs(r["bias"]) <= TARGET["bias"],
                TARGET["coverage"][0] <= r["coverage"] <= TARGET["coverage"][1],
                r["width"] <= ppi_w,
            )
            ok_n += sum(checks)
            total += 3
            yn = ["yes" if c else "NO" for c in checks]
            lines.append(
                f"| {name} | {metric_label(metric)} | {yn[0]} ({r['bias']:+.3f} ± {r['bias_se']:.3f}) | "
                f"{yn[1]} ({_fmt_cov(r)}) | {yn[2]} ({r['width']:.2f} vs {ppi_w:.2f}) |"
            )
    return lines, ok_n, total


def elsewhere_section(reps_by: dict[str, pd.DataFrame]) -> list[str]:
    """The "Done when" check on the project generated elsewhere: |bias| ≤ 0.5 pp and
    measurement coverage ≥ 88 % for TCPR and EMCR."""
    from bench.validation import summarize

    lines = [
        "### A project generated elsewhere (bench/independent_project.py)",
        "",
        "An independent generator (no code shared with `reform_core/simulate.py`; latent-class truths, targets "
        "recurring within small per-question pools, judge errors by category and by position, both-wrong errors "
        "clustered on ambiguous targets, 6 heterogeneous asymmetric adjudicators), 360 questions × 6 models, run "
        "through the command line (`bench/elsewhere_cli.py`): its project imported into a fresh SQLite database, "
        "`plan --judges judge-a,judge-b --seed S` (the default plan), then rounds of `tasks --out` → the "
        "generator's adjudicators decide every line → `import` (second opinions come back as tasks), and "
        "`score --json --intervals`. Target (issue 13): |bias| ≤ 0.5 pp and measurement coverage ≥ 88 % for "
        "TCPR and EMCR.",
        "",
        "| adjudicators | metric | replicates | bias (pp) ± se | MAE | coverage (95 % CI) | width | target |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for name, reps in reps_by.items():
        s = summarize(reps.drop(columns=["seconds"])).set_index("metric")
        for metric in METRICS:
            r = s.loc[metric]
            ok = (
                ("yes" if abs(r["bias"]) <= 0.5 and r["coverage"] >= 0.88 else "NO")
                if metric in ("tcpr", "emcr")
                else ""
            )
            lines.append(
                f"| {name.removeprefix('elsewhere_')} | {metric.upper()} | {reps['seed'].nunique()} | "
                f"{r['bias']:+.3f} ± {r['bias_se']:.3f} | {r['mae']:.3f} | {_fmt_cov(r)} | {r['width']:.2f} | {ok} |"
            )
    return lines + [""]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--family",
        choices=("reformbench", "any-shape"),
        default="reformbench",
        help="reformbench: the simulator's scenarios (default); any-shape: bench/validation_any_shape.py",
    )
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="replicates use simulator seeds FIRST+1 … FIRST+REPLICATES (a fresh set: seeds no tuning saw)",
    )
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--error-boot", type=int, default=3)
    ap.add_argument("--design", choices=("one-factor", "full"), default="one-factor")
    ap.add_argument("--collect", action="store_true", help="only summarise the cached replicates (no new runs)")
    ap.add_argument("--deadline", help="HH:MM (UTC): start no replicate after it; the summary shows what finished")
    ap.add_argument("--elsewhere", type=int, default=100, help="replicates of the project generated elsewhere")
    return ap.parse_args(argv)


def deadline_of(text: str | None) -> float | None:
    """``HH:MM`` (UTC, today) as a timestamp; None for none."""
    if not text:
        return None
    import datetime as _dt

    now = _dt.datetime.now(_dt.timezone.utc)
    hh, mm = map(int, text.split(":"))
    return now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()


def run_jobs(fn, jobs: list, n_jobs: int) -> None:
    """``fn`` on every job, in ``n_jobs`` processes (in this one for 1)."""
    if n_jobs > 1:
        with ProcessPoolExecutor(n_jobs) as ex:
            for _ in ex.map(fn, jobs):
                pass
    else:
        for j in jobs:
            fn(j)


def _concat(paths) -> pd.DataFrame | None:
    have = [p for p in paths if p.exists()]
    return pd.concat([pd.read_csv(p) for p in have], ignore_index=True) if have else None


def cached(args, tag: str, grid) -> tuple[dict, dict]:
    """The cached replicates per scenario, and those of the project generated elsewhere."""
    all_reps, elsewhere = {}, {}
    for sc in grid:
        got = _concat(raw_path(tag, sc, args.first_seed + r + 1) for r in range(args.replicates))
        if got is not None:
            all_reps[scenario_name(*sc)] = got
    for e in ELSEWHERE_ERRORS:
        name = f"elsewhere_err{int(round(e * 100)):02d}"
        got = _concat(RAW / tag / f"{name}_{r + 1}.csv" for r in range(args.elsewhere))
        if got is not None:
            elsewhere[name] = got
    return all_reps, elsewhere


def main() -> None:
    args = parse_args()
    deadline = deadline_of(args.deadline)
    if args.family == "any-shape":
        from bench.validation_any_shape import run

        run(args, deadline)
        return
    tag = f"paper_b{args.n_boot}_e{args.error_boot}_{REVISION}"
    grid = scenarios(args.design)
    groups: dict = {}
    for sc in grid:
        groups.setdefault((sc[1], sc[2]), []).append(sc)
    jobs = []
    for r in range(max(args.replicates, args.elsewhere)):  # interleaved: every scenario advances together
        if r < args.replicates:
            jobs += [
                (args.first_seed + r + 1, tuple(g), args.n_boot, args.error_boot, tag, deadline)
                for g in groups.values()
            ]
        if r < args.elsewhere:
            jobs.append(("elsewhere", r + 1, args.error_boot, tag, deadline))
    t0 = time.perf_counter()
    if not args.collect:
        run_jobs(one, jobs, args.jobs)
    minutes = (time.perf_counter() - t0) / 60
    all_reps, elsewhere = cached(args, tag, grid)
    n_have = {k: v["seed"].nunique() for k, v in all_reps.items()}
    lines = [
        "## Estimator validation on the simulator (bench/bench_validation.py)",
        "",
        f"- {machine_line()} Wall time of this invocation {minutes:.0f} min (replicates cached across invocations).",
        f"- Command: `python bench/bench_validation.py --jobs 2 --design {args.design} --replicates "
        f"{args.replicates} --first-seed {args.first_seed} --n-boot {args.n_boot} --error-boot {args.error_boot}`; "
        f"simulator seeds {args.first_seed + 1}–{args.first_seed + args.replicates}.",
        f"- Design: **{args.design}**"
        + (
            " (base scenario err05_both1_corr plus one-factor variations: adjudicator "
            "error 0 % / 10 %, judges never wrong together, independent truths)"
            if args.design == "one-factor"
            else " (full 3 × 2 × 2 factorial)"
        )
        + "; paper scale (910 questions, 5,000 instructions, 10 models); replicates per scenario: "
        + ", ".join(f"{k} {v}" for k, v in n_have.items())
        + ".",
        f"- Intervals 95 %; default estimator: linearised measurement variance, {args.error_boot} refits of the "
        f"adjudicator-error model; paper rules: {args.n_boot} Jeffreys-posterior draws (measurement) and "
        f"question bootstrap replicates (population); PPI++: `ppi_py.ppi_mean_ci` (CLT).",
        "- Truth: the scores of the same fixed benchmark from the hidden true labels; bias = mean(estimate − truth) "
        "over models × replicates (± its standard error); coverage = share of model × replicate pairs whose "
        "measurement interval holds the truth (exact Clopper–Pearson 95 % CI; the 10 models of a replicate "
        "share its questions, so the CI is if anything too narrow); width = mean measurement-interval width (pp). "
        "Definitions: `reform_core/validation.py`.",
        "",
    ]
    v, ok_n, total = verdict(all_reps)
    lines += (
        [
            "### Targets for the default estimator (issue 13): |bias| ≤ 0.2 pp, coverage 93–97 %, width ≤ PPI++",
            "",
            f"{ok_n} of {total} checks hold.",
            "",
        ]
        + v
        + ["", "### Every estimator, scenario by scenario", ""]
    )
    for name, reps in all_reps.items():
        lines += section(name, reps)
    if elsewhere:
        lines += elsewhere_section(elsewhere)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""The ``any-shape`` family of the estimator validation (issue 32, "Validity beyond
ReFormBench"): ``python bench/bench_validation.py --family any-shape --replicates 200 --jobs 2``.

Project: ``bench/scenarios_any_shape.py`` — 1–6 constraints per prompt, one instruction per
question (no variants), no baseline data (TCPR and the constraint level apply; EMCR and R^(K)
must come out absent), judges lenient on some features and harsh on others with both-wrong
errors on those features only. Scenarios: adjudicators who err 0 %, 5 % and 10 %; replicate r
of every scenario uses generator seed ``--first-seed`` + r (common random numbers: the three
scenarios share the project and the plan, and differ in the decisions).

Each replicate (:func:`replicate`) follows the issue-13 validation step by step on that
project: the default plan (``bench.validation.planned_decisions``: the plan's
parameters and tasks from ``reform_core.estimators.draws.default_design`` / ``draw``, simulated
annotators on its tasks with the second-opinion rule), then every estimator from the same
decisions: the default (``cluster.estimate`` with ``cluster.population_intervals``), the
paper's ``stratified`` and ``pooled`` rules, each judge's raw labels, and PPI++ on a uniform
random human sample of the same number of decisions (``bench/ppi_baseline.py``, constraint
level included). Truth: the scores of the same fixed benchmark from the hidden true labels.

Finished replicates are cached as CSV under ``bench/results/raw/validation/<tag>/`` (the tag
carries the estimator revision of ``bench_validation.REVISION``, this generator's revision and
the run's sizes), so an interrupted run resumes; a replicate that raises is recorded in a
``.err`` file beside them (retried on the next invocation) and counted in the report instead
of stopping the run. Report: ``bench/results/validation_any_shape.md``
(``python bench/run_all.py --collect`` adds it to ``bench/RESULTS.md``).
"""

from __future__ import annotations

import os
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bench import scenarios_any_shape as gen

OUT = Path(__file__).resolve().parent / "results" / "validation_any_shape.md"
RAW = Path(__file__).resolve().parent / "results" / "raw" / "validation"
GENERATOR_REVISION = "g1"  # bump when scenarios_any_shape changes what it generates
ERRORS = (0.0, 0.05, 0.10)
METRICS = ("tcpr", "constraint_level")  # the metrics that apply without variants and baselines
ABSENT = ("emcr", "r1", "r2", "r3")  # must be absent (NaN) for every estimator
JUDGE_COLUMNS = tuple(f"label_{j}" for j in gen.JUDGES)


def scenario_name(error: float) -> str:
    return f"anyshape_err{int(round(error * 100)):02d}"


def cache_tag(n_boot: int, error_boot: int, revision: str) -> str:
    return f"anyshape_q{gen.N_QUESTIONS}_m{gen.N_MODELS}_b{n_boot}_e{error_boot}_{revision}-{GENERATOR_REVISION}"


def raw_path(tag: str, error: float, seed: int) -> Path:
    return RAW / tag / f"{scenario_name(error)}_{seed}.csv"


def point_frame(index, instances: pd.DataFrame, column: str) -> pd.DataFrame:
    """Every metric of one 0/1 column (a judge's labels, the truth): ``model, metric, estimate``."""
    from reform_core.metrics.intervals import point_scores

    scores = point_scores(index, index.pass_vector(instances, column))
    return pd.DataFrame(
        [(m, k, v[i]) for k, v in scores.items() for i, m in enumerate(index.models)],
        columns=["model", "metric", "estimate"],
    )


def replicate(
    seed: int, instances: pd.DataFrame, human_error: float, *, n_boot: int, error_boot: int, level: float = 0.95
) -> pd.DataFrame:
    """One replicate of one scenario (module docstring): rows ``REPLICATE_COLUMNS`` of
    ``bench.validation`` for every estimator × model × metric of :data:`METRICS` and
    :data:`ABSENT` (the latter to show they are absent)."""
    from bench.ppi_baseline import comparator
    from bench.validation import REPLICATE_COLUMNS, planned_decisions
    from reform_core.estimators import base
    from reform_core.unit_index import build_index

    ja, jb = JUDGE_COLUMNS
    rng = np.random.default_rng([int(seed), 1, int(round(1000 * human_error))])
    params, tasks, decisions = planned_decisions(instances, ja, jb, seed, human_error, rng)
    index = build_index(instances)
    parts = []
    for name in ("cluster", "stratified", "pooled"):  # through the estimation seam, by name
        data = base.EstimationData(
            instances=instances, decisions=decisions, judge_a=ja, judge_b=jb, design=params, tasks=tasks, index=index
        )
        options = base.Options(
            intervals=True, reps=n_boot, level=level, refits=error_boot, seed=int(rng.integers(2**31))
        )
        parts.append(base.get(name).estimate(data, options).intervals.assign(estimator=name))
    parts += [
        point_frame(index, instances, col).assign(estimator=name) for name, col in (("judge_a", ja), ("judge_b", jb))
    ]
    parts.append(comparator(human_error, constraint_level=True)(instances, index, ja, jb, decisions, rng))
    out = pd.concat(parts, ignore_index=True).rename(
        columns={"measurement_lo": "lo", "measurement_hi": "hi", "population_lo": "pop_lo", "population_hi": "pop_hi"}
    )
    out = out[out["metric"].isin(METRICS + ABSENT)].reindex(columns=REPLICATE_COLUMNS)
    truth = point_frame(index, instances, "truth").set_index(["model", "metric"])["estimate"]
    out["truth"] = truth.reindex(pd.MultiIndex.from_frame(out[["model", "metric"]])).to_numpy()
    n_dec = decisions.merge(instances[["iid", "model"]], on="iid").groupby("model").size()
    out["decisions"] = out["model"].map(n_dec).fillna(0).astype(int)
    out["seed"] = int(seed)
    return out.reset_index(drop=True)


def one(args) -> list[Path]:
    """Every scenario of one seed (they share the generated project); cached CSVs are kept."""
    seed, n_boot, error_boot, tag, deadline = args
    warnings.filterwarnings("ignore")
    pd.set_option("future.infer_string", False)  # object strings, as bench_validation runs
    paths = [raw_path(tag, e, seed) for e in ERRORS]
    todo = [(e, p) for e, p in zip(ERRORS, paths) if not p.exists()]
    if not todo or (deadline is not None and time.time() > deadline):
        return paths
    t0 = time.perf_counter()
    instances = gen.generate(seed)
    t_gen = time.perf_counter() - t0
    for e, path in todo:
        path.parent.mkdir(parents=True, exist_ok=True)
        t1 = time.perf_counter()
        try:
            rep = replicate(seed, instances, e, n_boot=n_boot, error_boot=error_boot)
        except Exception:  # recorded and counted in the report; the run goes on
            path.with_suffix(".err").write_text(traceback.format_exc())
            continue
        rep["seconds"] = time.perf_counter() - t1 + t_gen / len(todo)
        rep.to_csv(path.with_suffix(".tmp"), index=False)
        os.replace(path.with_suffix(".tmp"), path)
        path.with_suffix(".err").unlink(missing_ok=True)
    return paths


def shape_lines(seeds: list[int]) -> list[str]:
    """What the generator made, measured on the first seeds of the run: constraints per
    prompt, and the judges' disagreements and both-wrong errors by the feature's type."""
    inst = pd.concat([gen.generate(s).assign(seed=s) for s in seeds], ignore_index=True)
    ja, jb = JUDGE_COLUMNS
    k = inst.groupby(["seed", "model", "question"]).size()
    inst["dis"] = inst[ja] != inst[jb]
    inst["both_wrong"] = (inst[ja] == inst[jb]) & (inst[ja] != inst["truth"])
    by = inst.groupby("leniency")
    lines = [
        f"Generated shape (seeds {seeds[0]}–{seeds[-1]}): {gen.N_QUESTIONS} prompts × {gen.N_MODELS} models, "
        f"one instruction per question, {len(inst) / len(seeds):,.0f} constraints per project; constraints per "
        "prompt "
        + ", ".join(f"{c}: {v:.0%}" for c, v in k.value_counts(normalize=True).sort_index().items())
        + f"; constraint pass rate {inst['truth'].mean():.1%}; baseline data: none.",
        "",
        "| feature type | share of constraints | judges disagree | both judges wrong | share of all both-wrong |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, d in by:
        lines.append(
            f"| {kind} | {len(d) / len(inst):.1%} | {d['dis'].mean():.2%} | {d['both_wrong'].mean():.2%} | "
            f"{d['both_wrong'].sum() / max(inst['both_wrong'].sum(), 1):.1%} |"
        )
    return lines + [f"| all | 100 % | {inst['dis'].mean():.2%} | {inst['both_wrong'].mean():.2%} | 100 % |", ""]


def absence_lines(all_reps: dict[str, pd.DataFrame]) -> list[str]:
    """EMCR and R^(K) must be absent without variants and baselines: finite estimates counted."""
    rows = pd.concat(all_reps.values(), ignore_index=True)
    rows = rows[rows["metric"].isin(ABSENT)]
    finite = rows.groupby("estimator")["estimate"].apply(lambda s: int(np.isfinite(s).sum()))
    n = rows.groupby("estimator").size()
    told = ", ".join(f"{e} {finite[e]} of {n[e]}" for e in n.index)
    return [
        f"EMCR and R¹–R³ (no variant recurs and no baseline exists, so no eligible unit): finite estimates "
        f"among the model × replicate × metric rows — {told}; PPI++ returns none. Target: 0 everywhere "
        f"({'met' if int(finite.sum()) == 0 else 'NOT MET'}).",
        "",
    ]


def load(tag: str, seeds: list[int]) -> tuple[dict[str, pd.DataFrame], list[Path]]:
    """Cached replicates per scenario, and the ``.err`` records of replicates that raised."""
    all_reps, failed = {}, []
    for e in ERRORS:
        have = [p for p in (raw_path(tag, e, s) for s in seeds) if p.exists()]
        failed += [
            p.with_suffix(".err") for p in (raw_path(tag, e, s) for s in seeds) if p.with_suffix(".err").exists()
        ]
        if have:
            all_reps[scenario_name(e)] = pd.concat([pd.read_csv(p) for p in have], ignore_index=True)
    return all_reps, failed


def header(args, tag: str, minutes: float, n_have: dict, failed: list[Path]) -> list[str]:
    from bench.machine import machine_line

    seeds = f"{args.first_seed + 1}–{args.first_seed + args.replicates}"
    return [
        "## Estimator validation beyond ReFormBench: any-shape family (bench/validation_any_shape.py)",
        "",
        f"- {machine_line()} Wall time of this invocation {minutes:.0f} min (replicates cached across invocations).",
        f"- Command: `python bench/bench_validation.py --family any-shape --jobs 2 --replicates {args.replicates} "
        f"--first-seed {args.first_seed} --n-boot {args.n_boot} --error-boot {args.error_boot}`; generator seeds "
        f"{seeds}; cache `bench/results/raw/validation/{tag}/`.",
        "- Scenarios: adjudicators who err 0 %, 5 %, 10 % on one generated project per seed (common random "
        "numbers); replicates per scenario: "
        + ", ".join(f"{k} {v}" for k, v in n_have.items())
        + (
            f"; **{len(failed)} replicate(s) raised** (tracebacks: "
            + ", ".join(p.name for p in failed[:5])
            + ("…" if len(failed) > 5 else "")
            + ")"
            if failed
            else "; none raised"
        )
        + ".",
        f"- Intervals 95 %; default estimator: linearised measurement variance, {args.error_boot} refits of the "
        f"adjudicator-error model; paper rules: {args.n_boot} Jeffreys-posterior draws; PPI++: `ppi_py.ppi_mean_ci` "
        "on a uniform sample of the same number of decisions per model (TCPR: whole prompts; constraint level: "
        "single constraints).",
        "- Truth, bias, coverage (exact Clopper–Pearson 95 % CI over model × replicate pairs; the models of a "
        "replicate share its plan and features, so the CI is if anything too narrow) and width as in the "
        "ReFormBench family (`bench/validation.py`). Where the default estimator's variance comes from "
        "on these replicates: `python bench/any_shape_variance.py` (next section).",
        "",
    ]


def report(args, tag: str, minutes: float) -> list[str]:
    """The report's lines (module docstring), written to :data:`OUT`."""
    from bench.bench_validation import section, verdict

    seeds = [args.first_seed + r + 1 for r in range(args.replicates)]
    all_reps, failed = load(tag, seeds)
    lines = header(args, tag, minutes, {k: v["seed"].nunique() for k, v in all_reps.items()}, failed)
    lines += shape_lines(seeds[:5])
    if all_reps:
        v, ok_n, total = verdict(all_reps, METRICS)
        lines += (
            [
                "### Targets for the default estimator (issues 13, 32): |bias| ≤ 0.2 pp, coverage 93–97 %, "
                "width ≤ PPI++",
                "",
                f"{ok_n} of {total} checks hold.",
                "",
            ]
            + v
            + [""]
            + absence_lines(all_reps)
        )
        lines += ["### Every estimator, scenario by scenario", ""]
        for name, reps in all_reps.items():
            lines += section(name, reps, METRICS)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    return lines


def run(args, deadline: float | None) -> None:
    """``bench_validation.py --family any-shape``: run the missing replicates (unless
    ``--collect``), then write the report."""
    from bench.bench_validation import REVISION, run_jobs

    tag = cache_tag(args.n_boot, args.error_boot, REVISION)
    jobs = [(args.first_seed + r + 1, args.n_boot, args.error_boot, tag, deadline) for r in range(args.replicates)]
    t0 = time.perf_counter()
    if not args.collect:
        run_jobs(one, jobs, args.jobs)
    print("\n".join(report(args, tag, (time.perf_counter() - t0) / 60)))

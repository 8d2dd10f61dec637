"""Benchmark of the scoring engine at paper scale (10 models × 5,000 instructions × 3).

Run: ``cd /work/main && python bench/bench_scoring.py``. Data: ``reform_core.simulate``
(seed 0, paper scale); adjudications: 40 % of each model's disagreements, labelled by the
simulator's oracle. Times are medians of repeated runs; results go to
``bench/results/scoring.md``.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.loop_reference import loop_table2  # noqa: E402
from bench.machine import cpu_model  # noqa: E402
from reform_core.calibration import calibrate_stratified, stratum_rates  # noqa: E402
from reform_core.metrics import reform  # noqa: E402
from reform_core.metrics.intervals import bootstrap_intervals  # noqa: E402
from reform_core.simulate import simulate  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "scoring.md"


def median_time(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def peak_mib(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    sim = simulate(seed=0, scale="paper")
    ja, jb = (f"label_{j}" for j in sim.judges)
    inst = sim.instances()
    dis = inst[inst[ja] != inst[jb]]
    sample = dis.groupby("model", group_keys=False).sample(frac=0.4, random_state=0)
    adj = pd.DataFrame({"iid": sample["iid"].to_numpy(), "a": sim.oracle(sample["iid"]).to_numpy()})

    t_cal, cal = median_time(lambda: calibrate_stratified(inst, adj, judge_a=ja, judge_b=jb), 3)
    rates = stratum_rates(inst, adj, judge_a=ja, judge_b=jb)

    def all_tables():
        return reform.reform_tables(cal, baseline=sim.baseline, adjudications=adj, judge_a=ja, judge_b=jb)

    t_tables, tabs = median_time(all_tables, 5)
    t_build, index = median_time(lambda: reform.build_index(cal), 5)
    t_eval, _ = median_time(lambda: reform.reform_tables(cal, index=index, judge_a=ja, judge_b=jb), 5)
    t_loop, loop = median_time(lambda: loop_table2(cal), 3)
    t_fast_same, fast = median_time(lambda: (reform.table2(cal), reform.violation_spread(cal)), 5)
    merged = fast[0].merge(fast[1], on="model").set_index("model")
    loop = loop.set_index("model")
    cols = ["tcpr", "emcr", "r1", "r2", "r3", "c1", "c2", "c3"]
    max_diff = float(np.nanmax(np.abs(merged[cols].to_numpy() - loop.loc[merged.index, cols].to_numpy())))
    counts_equal = bool(
        (merged[["n1", "n2", "n3"]].to_numpy() == loop.loc[merged.index, ["n1", "n2", "n3"]].to_numpy()).all()
    )

    t_boot_q, _ = median_time(
        lambda: bootstrap_intervals(cal, n_boot=2000, rng=np.random.default_rng(0), index=index), 3
    )
    t_boot_adj, ci_adj = median_time(
        lambda: bootstrap_intervals(cal, n_boot=2000, rng=np.random.default_rng(0), rates=rates, index=index), 3
    )

    mem_tables = peak_mib(all_tables)
    mem_boot = peak_mib(
        lambda: bootstrap_intervals(cal, n_boot=2000, rng=np.random.default_rng(0), rates=rates, index=index)
    )
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    t2 = tabs["table2"]
    a8 = tabs["a8"]
    ci = ci_adj[ci_adj["metric"].isin(["tcpr", "emcr"])].pivot(
        index="model", columns="metric", values=["ci_low", "ci_high"]
    )
    n_units = int(a8[["n1", "n2", "n3"]].to_numpy().sum())
    lines = [
        "## Scoring engine (bench/bench_scoring.py)",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: nproc={os.cpu_count()}, CPU: {cpu_model()}; Python {platform.python_version()}, "
        f"numpy {np.__version__}, pandas {pd.__version__}",
        f"- data: simulate(seed=0, scale='paper'): {len(inst):,} instances, {inst['model'].nunique()} models, "
        f"{inst['question'].nunique()} questions, {inst['instruction'].nunique():,} instructions, "
        f"{n_units:,} eligible units; {len(adj):,} adjudications (40 % of {len(dis):,} disagreements)",
        "",
        "| step | median (s) | runs |",
        "|---|---:|---:|",
        f"| calibrate_stratified (150k rows) | {t_cal:.3f} | 3 |",
        f"| every table (2, A2, A3, A5, A6/A7, A8, ranks) from the frames, index build included | {t_tables:.3f} | 5 |",
        f"| of which build_index | {t_build:.3f} | 5 |",
        f"| every table with a prebuilt index | {t_eval:.3f} | 5 |",
        f"| vectorised table2 + violation spread (same outputs as the loop) | {t_fast_same:.3f} | 5 |",
        f"| literal per-unit loop (loop_reference.loop_table2) | {t_loop:.3f} | 3 |",
        f"| bootstrap, 2,000 replicates, questions only | {t_boot_q:.3f} | 3 |",
        f"| bootstrap, 2,000 replicates, questions + adjudications within strata | {t_boot_adj:.3f} | 3 |",
        "",
        f"- speed-up of the vectorised engine over the loop: {t_loop / t_fast_same:.0f}× on the same outputs; "
        f"all tables incl. index build vs loop: {t_loop / t_tables:.0f}×",
        f"- vectorised vs loop: max |difference| over TCPR/EMCR/R/Ĉ = {max_diff:.2e}; unit counts equal: {counts_equal}",
        f"- peak traced memory: all tables {mem_tables:.0f} MiB; bootstrap with adjudications {mem_boot:.0f} MiB; "
        f"process max RSS {maxrss:.0f} MiB",
        "",
        "Simulated Table 2 with 95 % intervals (questions + adjudications, 2,000 replicates, seed 0):",
        "",
        "| model | TCPR | EMCR | R1 | R2 | R3 | units K=1/2/3 | TCPR 95 % | EMCR 95 % |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in t2.itertuples():
        lines.append(
            f"| {r.model} | {r.tcpr:.2f} | {r.emcr:.2f} | {r.r1:.2f} | {r.r2:.2f} | {r.r3:.2f} | {r.n1}/{r.n2}/{r.n3} | "
            f"{ci.loc[r.model, ('ci_low', 'tcpr')]:.2f}–{ci.loc[r.model, ('ci_high', 'tcpr')]:.2f} | "
            f"{ci.loc[r.model, ('ci_low', 'emcr')]:.2f}–{ci.loc[r.model, ('ci_high', 'emcr')]:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

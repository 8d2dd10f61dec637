"""Benchmark of the Explore page at paper scale: server-side rerun time of the filtered list
and of the example view (AppTest; budget ≤ 200 ms median each).

Run: ``cd /work/main && python bench/bench_explore.py [--db URL] [--runs N]``. Without
``--db`` it writes a paper-scale project (``simulate --seed 0 --scale paper --adjudicate
300``) to a temporary SQLite file. The first (cold) run scores the project once and fills
the cache; the timed reruns are what a user waits for after each click. Results go to
``bench/results/explore.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.machine import cpu_model  # noqa: E402

OUT = ROOT / "bench" / "results" / "explore.md"


def timed(at, runs: int, change=None) -> list[float]:
    """Seconds of ``runs`` reruns; ``change(at, i)`` sets a widget before each rerun."""
    times = []
    for i in range(runs):
        if change:
            change(at, i)
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", help="an existing paper-scale project (default: simulate one)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    url = args.db
    if url is None:
        path = Path(tempfile.mkdtemp(prefix="bench-explore-")) / "paper.db"
        url = f"sqlite:///{path}"
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "reform_core",
                "simulate",
                "--db",
                url,
                "--seed",
                "0",
                "--scale",
                "paper",
                "--adjudicate",
                "300",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        print(f"simulated paper-scale project in {time.perf_counter() - t0:.1f} s")
    os.environ.update({"REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false"})

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    t0 = time.perf_counter()
    at.switch_page("pages/explore.py").run()
    cold = time.perf_counter() - t0
    assert not at.exception, at.exception
    rows = at.number_input(key="explore_page").label
    print("cold", round(cold, 2), rows)

    results = {}
    results["list: plain rerun"] = timed(at, args.runs)
    models = at.selectbox(key="explore_model").options[1:]
    results["list: change model filter"] = timed(
        at, args.runs, lambda a, i: a.selectbox(key="explore_model").set_value(models[i % len(models)])
    )
    results["list: judges disagree + p range"] = timed(
        at,
        args.runs,
        lambda a, i: (
            a.selectbox(key="explore_agree").set_value("disagree"),
            a.slider(key="explore_p").set_value((0.05 + 0.01 * i, 0.95)),
        ),
    )
    results["list: next page"] = timed(at, args.runs, lambda a, i: a.number_input(key="explore_page").set_value(i + 2))
    first = at.dataframe[0].value.iloc[0]
    at.query_params.update({"model": str(first["model"]), "question": str(first["question"])})
    at.run()
    assert any(str(first["question"]) in s.value for s in at.subheader), "example view opened"
    results["example view: rerun"] = timed(at, args.runs)
    questions = at.dataframe[0].value["question"].astype(str).unique().tolist()

    def open_question(a, i):
        a.query_params["question"] = questions[i % len(questions)]

    results["example view: open another question"] = timed(at, args.runs, open_question)

    lines = [
        "## Explore page (AppTest server-side rerun)",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {os.cpu_count()} CPUs (`nproc` = {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()}), "
        f"{cpu_model()}; shared with other jobs, so expect noise",
        f"- data: paper scale (10 models × 5,000 instructions × 3 constraints = 150,000 instances, 300,000 judgments, "
        f"3,000 adjudications); `{rows}`",
        f"- cold first open (scores the project, fills the cache): {cold:.2f} s",
        f"- budget: ≤ 0.200 s median per rerun; {args.runs} runs each",
        "",
        "| interaction | median s | min s | max s |",
        "|---|---|---|---|",
    ]
    for name, t in results.items():
        lines.append(f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} |")
        print(f"{name:42s} median {statistics.median(t):.3f} s")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

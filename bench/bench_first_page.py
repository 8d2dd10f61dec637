"""App start on a fresh data directory (issue 34 item 3): from spawning ``streamlit run app.py``
with an empty database to the first page (the Overview, with the demo project's counts)
rendered in Chromium — the time a new user waits, loading of the demo included.

Each run gets a new temporary directory (fresh SQLite file: the demo is imported, its default
plan drawn and 90 % of it decided on this start) and a new server; the browser is started
before the server so that its own start is not counted. Runs of the tree being measured and,
with ``--baseline DIR``, of another checkout (e.g. ``git archive <commit> | tar -x -C DIR``) are
interleaved; the figure is the median over runs.

    flock /work/bench.lock python bench/bench_first_page.py [--runs 3] [--baseline DIR]

Results: ``bench/results/first_page.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_app import _free_port, _stop, _wait_http  # noqa: E402
from bench.machine import machine_line  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TARGET_S = 8.0


def one_run(browser, tree: Path) -> dict:
    """Seconds from spawning the server to the Overview's 'Questions' count on screen."""
    from playwright.sync_api import expect

    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        env = {
            **os.environ,
            "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
            "REFORM_AUTH_MODE": "local",
            "REFORM_LOAD_DEMO": "true",
            "REFORM_DATABASE_URL": f"sqlite:///{tmp}/reform.db",
        }
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
            ],
            cwd=tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_http(f"{base}/_stcore/health", proc)
            healthy = time.monotonic() - t0
            page.goto(base)
            expect(page.get_by_test_id("stMetric").filter(has_text="Questions")).to_be_visible(timeout=120_000)
            shown = time.monotonic() - t0
        finally:
            _stop(proc)
            context.close()
    return {"healthy_s": healthy, "first_page_s": shown}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout to time in the same runs (e.g. the previous main)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "first_page.md")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    trees = {"this tree": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    rows: dict[str, list[dict]] = {k: [] for k in trees}
    load0 = os.getloadavg()[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for run in range(args.runs):
            for name, tree in trees.items():
                r = one_run(browser, tree)
                rows[name].append(r)
                print(
                    f"run {run + 1} {name}: healthy {r['healthy_s']:.2f} s, first page {r['first_page_s']:.2f} s",
                    flush=True,
                )
        browser.close()
    write_report(rows, args, load0, os.getloadavg()[0])


def write_report(rows: dict, args, load0: float, load1: float) -> None:
    lines = [
        "## First page on a fresh data directory (bench/bench_first_page.py)",
        "",
        f"- {machine_line()} 1-min load average {load0:.1f} at the start, {load1:.1f} at the end (shared "
        "machine: compare within one run)",
        f"- {args.runs} runs per tree, interleaved; each a new server on an empty SQLite file (the demo imported "
        "on start) and a new browser context; from spawning `streamlit run app.py` to the Overview's counts "
        "on screen",
        "",
        "| tree | server healthy (s, median) | first page (s, median) | runs (s) | within 8 s |",
        "|---|---|---|---|---|",
    ]
    for name, rs in rows.items():
        first = [r["first_page_s"] for r in rs]
        med = statistics.median(first)
        lines.append(
            f"| {name} | {statistics.median(r['healthy_s'] for r in rs):.2f} | {med:.2f} | "
            f"{', '.join(f'{x:.2f}' for x in first)} | {'yes' if med <= TARGET_S else 'no'} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

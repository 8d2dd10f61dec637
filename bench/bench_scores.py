"""Scores and Overview pages after a new decision, and app memory over decide/score cycles
(issue 16), at paper scale and at 10×.

The app runs in this process under Streamlit's AppTest (the server-side script run a browser
rerun triggers: the same pages, caches and services, no browser). Per project:

* **cold**: first open of the Scores page (loads and scores the project, first intervals);
* **unchanged render**: the Scores page rerun with nothing new (median of 5);
* **after a new decision** (8 cycles): the annotator decides one item (claim + decide through
  the services, as the Adjudicate page does), then the Scores page is rerun — timed: the
  decision is applied to the kept scored state, every point is current, the intervals are
  recomputed in the background (their time is reported apart) and shown as "updating";
  ratio = that rerun / the median unchanged render of the same run;
* **Overview after a new decision**: the Overview page rerun after one more decision (8×),
  and its unchanged rerun;
* **memory**: the process's RSS after every cycle (and its peak, ``VmHWM``).

Projects: ``bench/out/paper_scores.db`` (simulate seed 0 paper scale, 300 oracle decisions per
model, an annotator and a stratified plan; built once) and ``bench/out/tenx.db``
(``bench/tenx.py``: 1,500,000 instances; built once), each given once a question-cluster plan
("cluster plan", the default design) with 600 / 1,500 of its tasks decided, so that the Scores
page runs its default estimator. Decisions are added to these files.

    flock /work/bench.lock nice -n 5 python bench/bench_scores.py [--scale paper tenx] [--cycles 8]

Results: ``bench/results/scores.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import machine_line  # noqa: E402

OUT = ROOT / "bench" / "out"
APP = str(ROOT / "app.py")


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    vals = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            k, v = line.split(":", 1)
            vals[k] = int(v.split()[0]) / 1024
    return vals["VmRSS"], vals["VmHWM"]


def reset_peak() -> bool:
    """Reset this process's VmHWM (Linux: ``/proc/self/clear_refs``), so the peak of the cycles
    is measured apart from the cold open's."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def wait_background(timeout: float = 900.0) -> None:
    """Until no background recomputation (intervals, auxiliary analyses) of the app runs."""
    import threading

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(t.is_alive() and t.name in ("reform-intervals", "reform-refresh") for t in threading.enumerate()):
            return
        time.sleep(0.05)


def paper_db() -> str:
    db = OUT / "paper_scores.db"
    done = db.with_suffix(".done")
    url = f"sqlite:///{db}"
    if not done.exists():
        from reform_core.services.accounts.users import create_user
        from reform_core.services.adjudication import adjudication as S
        from reform_core.services.data.simulated import simulate_into
        from reform_core.services.platform.uow import dispose_engines, get_engine

        OUT.mkdir(parents=True, exist_ok=True)
        db.unlink(missing_ok=True)
        eng = get_engine(url)
        simulate_into(eng, seed=0, scale="paper", adjudicate=300)
        lead = create_user(eng, None, username="lead", password="lead-password", role="lead")
        create_user(eng, None, username="ann", password="annotator-password", role="annotator")
        S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2, name="default plan")
        dispose_engines()
        done.write_text("ok\n")
    return url


CLUSTER_DECISIONS = {"paper": 600, "tenx": 1500}


def ensure_cluster_plan(url: str, decisions: int) -> None:
    """The default design: a question-cluster plan ("cluster plan") of the pair with
    ``decisions`` of its tasks decided (once per project file; the Scores page's default
    estimator then scores the project with it)."""
    from sqlalchemy import text

    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.adjudication.planning import create_cluster_plan
    from reform_core.services.platform.uow import dispose_engines, get_engine

    marker = Path(url.removeprefix("sqlite:///")).with_suffix(".cluster")
    if marker.exists():
        return
    eng = get_engine(url)
    with eng.connect() as conn:
        ids = dict(conn.execute(text("SELECT username, id FROM app_user WHERE username IN ('lead', 'ann')")).all())
    lead, ann = Principal(ids["lead"], "lead", "lead"), Principal(ids["ann"], "ann", "annotator")
    plan = create_cluster_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", name="cluster plan", seed=3).plan_id
    for k in range(decisions):
        item = S.claim_next(eng, ann, plan)
        if item is None:
            break
        S.decide(eng, ann, item.task_id, "AB"[k % 2], seconds=1)
    dispose_engines()
    marker.write_text(f"{decisions}\n")


def run_project(url: str, cycles: int) -> dict:
    """One project in a fresh process (so RSS is this project's): prints a JSON line."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", url, "--cycles", str(cycles)], cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(url: str, cycles: int) -> None:
    os.environ.update({"REFORM_DATABASE_URL": url, "REFORM_LOAD_DEMO": "false", "REFORM_AUTH_MODE": "local"})
    from sqlalchemy import text
    from streamlit.testing.v1 import AppTest

    from pages.components import state
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url)
    with eng.connect() as conn:
        uid = conn.execute(text("SELECT id FROM app_user WHERE username = 'ann'")).scalar()
        plan = conn.execute(text("SELECT id FROM sample_plan WHERE name = 'cluster plan'")).scalar()
        n_inst = conn.execute(text("SELECT COUNT(*) FROM judgment")).scalar() // 2
    ann = Principal(uid, "ann", "annotator")

    def decide() -> None:
        item = S.claim_next(eng, ann, plan)
        S.decide(eng, ann, item.task_id, "A", seconds=1)

    def timed(fn) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    at = AppTest.from_file(APP, default_timeout=1800)
    cold = timed(lambda: at.run())  # the app's entry page: Overview
    assert not at.exception, at.exception
    at.switch_page("pages/scores.py")
    cold_scores = timed(lambda: at.run())
    assert not at.exception, at.exception
    unchanged = [timed(lambda: at.run()) for _ in range(5)]
    wait_background()
    rss = [rss_mb()]
    peak_reset = reset_peak()
    after, ivl_bg, updating = [], [], []
    cache = state.score_cache()
    for _ in range(cycles):
        decide()
        after.append(timed(lambda: at.run()))
        assert not at.exception, at.exception
        updating.append(any("Intervals updating" in c.value for c in at.caption))
        cache.wait_intervals(eng, calibration="cluster")  # the Scores page's default
        ivl_bg.append(cache.interval_seconds(eng, calibration="cluster"))
        wait_background()  # and the auxiliary analyses: RSS of the settled state
        rss.append(rss_mb())
    unchanged_after = [timed(lambda: at.run()) for _ in range(3)]
    stats = cache.stats(eng, calibration="cluster")
    # Overview: unchanged rerun, then after a new decision
    at.switch_page("pages/overview.py")
    at.run()
    ov_unchanged = [timed(lambda: at.run()) for _ in range(5)]
    ov_after = []
    for _ in range(cycles):
        decide()
        ov_after.append(timed(lambda: at.run()))
        assert not at.exception, at.exception
    print(
        json.dumps(
            {
                "instances": n_inst,
                "cold_overview": cold,
                "cold_scores": cold_scores,
                "unchanged": unchanged,
                "after": after,
                "interval_bg": ivl_bg,
                "updating": updating,
                "unchanged_after": unchanged_after,
                "rss": rss,
                "peak_reset": peak_reset,
                "stats": stats,
                "ov_unchanged": ov_unchanged,
                "ov_after": ov_after,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", nargs="*", default=["paper", "tenx"])
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.cycles)
        return
    urls = {}
    if "paper" in a.scale:
        urls["paper"] = paper_db()
    if "tenx" in a.scale:
        from bench.tenx import build

        urls["tenx"] = build()
    for k, u in urls.items():
        ensure_cluster_plan(u, CLUSTER_DECISIONS[k])
    load0 = os.getloadavg()[0]
    res = {k: run_project(u, a.cycles) for k, u in urls.items()}
    load1 = os.getloadavg()[0]
    med = statistics.median
    label = {"paper": "paper scale", "tenx": "10×"}
    lines = [
        "## Scores and Overview after a new decision; app memory over cycles (bench/bench_scores.py)",
        "",
        f"- {machine_line()} 1-min load average {load0:.1f} at the start, {load1:.1f} at the end (shared machine: "
        "compare the ratios, measured in the same run)",
        "- the app in-process under Streamlit's AppTest (the server-side rerun a browser triggers; no browser), "
        "SQLite, local mode; a decision = claim + decide through the services as the Adjudicate page does; "
        f"{a.cycles} cycles of decide → Scores rerun per project; each project in a fresh process",
        "- the Scores page's default labels: the default estimator (question-cluster) over the pair's cluster plan "
        f'("cluster plan", {CLUSTER_DECISIONS["paper"]:,} / {CLUSTER_DECISIONS["tenx"]:,} of its tasks decided at paper '
        "scale / 10× before the run; the benchmark's decisions are added to it)",
        "- after a decision the Scores rerun applies it to the kept scored state (every point current) and shows "
        "the previous intervals marked *updating* while a background thread recomputes them (time reported apart)",
        "",
        "| project | instances | cold Scores open (s) | unchanged rerun (s, median) | after a new decision (s, median / max) "
        "| ratio (target ≤ 2) | intervals in the background (s, median) | shown as updating | incremental / rebuilt |",
        "|---|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for k, r in res.items():
        u = med(r["unchanged"])
        ratio = med(r["after"]) / u
        lines.append(
            f"| {label[k]} | {r['instances']:,} | {r['cold_scores']:.1f} | {u:.2f} | {med(r['after']):.2f} / "
            f"{max(r['after']):.2f} | {ratio:.2f} ({'yes' if ratio <= 2 else 'no'}) | "
            f"{med(r['interval_bg']):.1f} | {sum(r['updating'])}/{len(r['updating'])} | "
            f"{r['stats']['rescored']} / {r['stats']['rebuilt']} |"
        )
    lines += [
        "",
        "App memory (RSS of the process, MB) after the first Scores open and after each decide → Scores cycle, "
        "each read once the background recomputations (intervals, auxiliary analyses) are done; peaks (VmHWM) of "
        "the cold open and of the cycles apart (reset in between):",
        "",
        "| project | after open | after each cycle | growth first → last cycle | peak of the open | "
        "peak of the cycles | target |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for k, r in res.items():
        cyc = [x[0] for x in r["rss"][1:]]
        open_peak, peak = r["rss"][0][1], r["rss"][-1][1]
        target = "flat, ≤ 2048 in the cycles" if k == "tenx" else "flat"
        ok = (cyc[-1] - cyc[0] <= 0.1 * cyc[0]) and (k != "tenx" or (max(cyc) <= 2048 and peak <= 2048))
        lines.append(
            f"| {label[k]} | {r['rss'][0][0]:.0f} | {', '.join(f'{x:.0f}' for x in cyc)} | "
            f"{cyc[-1] - cyc[0]:+.0f} | {open_peak:.0f} | {peak:.0f}{'' if r['peak_reset'] else ' (not reset)'} | "
            f"{target}: {'yes' if ok else 'no'} |"
        )
    lines += [
        "",
        "| project | Overview unchanged rerun (s, median) | Overview after a new decision (s, median / max) | "
        "target (10×) ≤ 1 s |",
        "|---|---:|---|---|",
    ]
    for k, r in res.items():
        m = med(r["ov_after"])
        lines.append(
            f"| {label[k]} | {med(r['ov_unchanged']):.2f} | {m:.2f} / {max(r['ov_after']):.2f} | "
            f"{('yes' if m <= 1 else 'no') if k == 'tenx' else '—'} |"
        )
    lines += [
        "",
        f"Command: `flock /work/bench.lock nice -n 5 python bench/bench_scores.py --scale {' '.join(a.scale)} "
        f"--cycles {a.cycles}`",
        "",
    ]
    out = ROOT / "bench" / "results" / "scores.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Browser benchmark of the annotator loop (issue 16): ReForm's Adjudicate page side by side
with Potato 2.12.1, the annotation tool a team would otherwise pick, in the same run.

What is measured, per system, in a real Chromium driven by Playwright:

* **decision → next item visible**: from the key press that records a decision to the moment
  the next item is on screen and the page is idle (ReForm: one key, ``A``, decides and
  advances — on an audit item ``P`` opens the verdict's note, untimed, and ``Enter`` decides;
  the header reads ``Item n+1 of N`` and no element is stale. Potato: the label is
  selected with its key first, untimed; the timed step is the *Next* click, until the next
  instance's id and text are shown);
* **server CPU per decision**: user + system CPU of the server process (``/proc/PID/stat``)
  over the loop, divided by the decisions; ``2 cores / CPU per decision`` is the rate two
  cores can serve (derived, the browser's own CPU not counted);
* **server start → first item visible**: from spawning the server to the first item shown
  after signing in (ReForm: password sign-in, Adjudicate page; Potato: username login).

ReForm runs on a paper-scale project (simulate ``paper``: 150,000 instances) with two plans: a
51,000-task plan (every disagreement plus an agreement audit) and the default Cochran plan
(≈6,600 tasks), to show the loop is flat in plan size. Potato gets 50,000 items whose text
is the same instruction, constraint, response and two judgments. Potato is installed from
PyPI into its own virtual environment under ``bench/out/`` (ignored by git); the browser is
Debian's Chromium (never ``playwright install``). Runs are interleaved (ReForm big, ReForm
default, Potato) and each run starts fresh servers; figures are medians over runs of the
per-run medians.

    flock /work/bench.lock python bench/bench_app.py [--runs 3] [--decisions 20]

Results: ``bench/results/app.md`` (collected into ``bench/RESULTS.md`` by ``run_all.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "out"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
POTATO = "potato-annotation==2.12.1"
BIG_TASKS = 51_000
POTATO_ITEMS = 50_000
ANN = ("ann", "annotator-password")
TICK = os.sysconf("SC_CLK_TCK")
WARMUP = 3  # decisions before the timed ones (first-use imports and caches, for both systems)


# ----------------------------------------------------------------------------- helpers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


# ----------------------------------------------------------------------------- data


def build_reform(db: Path) -> dict:
    """Paper-scale project, an annotator, a 51,000-task plan and the default plan."""
    import pandas as pd

    from reform_core.services.accounts.users import create_user
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import dispose_engines, get_engine

    db.unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    eng = get_engine(url)
    simulate_into(eng, seed=0, scale="paper")
    lead = create_user(eng, None, username="lead", password="lead-password", role="lead")
    create_user(eng, None, username=ANN[0], password=ANN[1], role="annotator")
    disagreements = int(S.preview_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", margin=0.001)["planned"].sum())
    big = S.create_plan(
        eng,
        lead,
        judge_a="judge_a",
        judge_b="judge_b",
        margin=0.001,
        seed=1,
        audit=BIG_TASKS - disagreements,
        name="all disagreements + audit",
    )
    small = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2, name="default plan")
    items = _item_texts(eng, big.plan_id, POTATO_ITEMS)
    dispose_engines()
    # the annotator picks a plan by the name the page shows them (``Plan <id>``: plan names would name the judges)
    shown = S.blind_plan_names(pd.Series([big.plan_id, small.plan_id])).tolist()
    return {"url": url, "plans": {"big": (shown[0], big.tasks), "default": (shown[1], small.tasks)}, "items": items}


def _item_texts(eng, plan_id: int, n: int) -> list[str]:
    """What an annotator reads for the first ``n`` tasks of a plan, as plain text for Potato."""
    from sqlalchemy import text

    sql = text(
        "SELECT i.text, c.mode, c.feature, c.text, c.acceptance, r.text, ga.label, ga.rationale, gb.label, gb.rationale "
        "FROM adjudication_task t JOIN sample_plan p ON p.id = t.plan_id "
        "JOIN constraint_item c ON c.id = t.constraint_id JOIN instruction i ON i.id = c.instruction_id "
        "JOIN response r ON r.id = t.response_id "
        "LEFT JOIN judgment ga ON ga.judge_id = p.judge_a_id AND ga.response_id = t.response_id AND ga.constraint_id = t.constraint_id "
        "LEFT JOIN judgment gb ON gb.judge_id = p.judge_b_id AND gb.response_id = t.response_id AND gb.constraint_id = t.constraint_id "
        "WHERE t.plan_id = :p ORDER BY t.order_key LIMIT :n"
    )
    verdict = {1: "pass", 0: "fail"}
    with eng.connect() as conn:
        rows = conn.execute(sql, {"p": plan_id, "n": n}).all()
    return [
        f"Instruction: {r[0]}\n\nConstraint under review: {r[1]} {r[2]} — {r[3]}\nAcceptance criteria: {r[4]}"
        f"\n\nResponse:\n{r[5]}\n\nJudge A: {verdict.get(r[6], '–')} — {r[7]}\n\nJudge B: "
        f"{verdict.get(r[8], '–')} — {r[9]}"
        for r in rows
    ]


def potato_venv() -> Path:
    """Potato 2.12.1 in its own virtual environment (created once under bench/out/)."""
    venv = OUT / "potato-venv"
    exe = venv / "bin" / "potato"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", POTATO], check=True)
    return exe


def build_potato(task_dir: Path, items: list[str]) -> Path:
    """A Potato task: one radio question (A / B / neither, keys a / b / n) over the items."""
    import shutil

    shutil.rmtree(task_dir, ignore_errors=True)
    (task_dir / "data").mkdir(parents=True)
    with (task_dir / "data" / "items.jsonl").open("w", encoding="utf-8") as fh:
        for k, body in enumerate(items):
            fh.write(json.dumps({"id": f"item{k}", "text": body}) + "\n")
    (task_dir / "config.yaml").write_text(
        "annotation_task_name: Adjudication\ntask_dir: .\noutput_annotation_dir: annotation_output/\n"
        "output_annotation_format: jsonl\nannotation_codebook_url: ''\ndata_files:\n- data/items.jsonl\n"
        "item_properties:\n  id_key: id\n  text_key: text\nuser_config:\n  allow_all_users: true\n  users: []\n"
        "require_password: false\nalert_time_each_instance: 10000000\nannotation_schemes:\n- annotation_type: radio\n"
        "  name: better\n  description: Which judgment is better supported?\n  labels:\n"
        "  - name: A\n    key_value: a\n  - name: B\n    key_value: b\n  - name: neither\n    key_value: n\n"
        "site_dir: default\n",
        encoding="utf-8",
    )
    return task_dir


# ----------------------------------------------------------------------------- the two loops

_REFORM_READY = """(want) => {
  const h = [...document.querySelectorAll('h2, h3')].find(e => e.innerText.startsWith('Item '));
  return !!h && h.innerText.startsWith(want) && !document.querySelector('[data-stale="true"]')
      && !document.querySelector('[data-testid="stStatusWidget"]')
      && !!document.querySelector('[class*="st-key-adj_btn_s_"] button');
}"""


def _reform_decide(page) -> float:
    """Decide the item on screen by keys; the seconds from the deciding key to the next item.
    A disagreement: ``A`` decides. An audit (issue 33): ``P`` opens its note (untimed, as
    Potato's label selection), ``Enter`` decides."""
    key = "a"
    if page.locator('[class*="st-key-adj_btn_p_"]').count():
        page.keyboard.press("p")
        page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'INPUT'")
        key = "Enter"
    n = int(page.locator("h3").filter(has_text=re.compile(r"^Item ")).inner_text().split()[1].replace(",", ""))
    t0 = time.perf_counter()
    page.keyboard.press(key)
    page.wait_for_function(_REFORM_READY, arg=f"Item {n + 1:,} of", polling="raf")
    return time.perf_counter() - t0


def reform_run(browser, db_url: str, plan: str, decisions: int) -> dict:
    from playwright.sync_api import expect

    port = _free_port()
    env = {**os.environ, "REFORM_DATABASE_URL": db_url, "REFORM_AUTH_MODE": "password", "REFORM_LOAD_DEMO": "false"}
    t_spawn = time.perf_counter()
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
            "--server.address",
            "127.0.0.1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        _wait_http(f"{base}/_stcore/health", proc)
        page.goto(base)
        page.get_by_role("textbox", name="Username").fill(ANN[0])
        page.get_by_role("textbox", name="Password").fill(ANN[1])
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Adjudicate").click()
        expect(page.get_by_role("button", name="Judge A is better supported")).to_be_visible()
        start = time.perf_counter() - t_spawn
        box = page.get_by_role("combobox", name="Sample plan")
        shown = re.compile(rf"^{re.escape(plan)} · ")  # "Plan 3 · 12 / 400 items done"
        if not shown.match(box.input_value()):
            box.click()
            page.get_by_role("option", name=shown).click()
            expect(box).to_have_value(shown)
            page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page again
        expect(page.locator("h3").filter(has_text=re.compile(r"^Item "))).to_be_visible()
        page.wait_for_function(_REFORM_READY, arg="Item ", polling="raf")
        lat = []
        for k in range(WARMUP + decisions):
            if k == WARMUP:
                cpu0 = _cpu_seconds(proc.pid)
            seconds = _reform_decide(page)
            if k >= WARMUP:
                lat.append(seconds)
        cpu = (_cpu_seconds(proc.pid) - cpu0) / decisions
    finally:
        context.close()
        _stop(proc)
    return {"start_s": start, "next_s": statistics.median(lat), "cpu_s": cpu, "all": lat}


_POTATO_READY = """(want) => {
  const id = document.getElementById('instance_id');
  const t = document.getElementById('instance-text');
  return !!id && id.value === want && !!t && t.innerText.length > 0;
}"""


def potato_run(browser, exe: Path, task_dir: Path, decisions: int, user: str) -> dict:
    from playwright.sync_api import expect

    port = _free_port()
    t_spawn = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), "start", "config.yaml", "-p", str(port)],
        cwd=task_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(180_000)
    try:
        _wait_http(base + "/", proc)
        page.goto(base)
        page.get_by_label("Username").fill(user)
        page.get_by_role("button", name="Continue").click(no_wait_after=True)
        page.wait_for_url("**/annotate**")
        expect(page.locator("#instance-text")).to_be_visible()
        start = time.perf_counter() - t_spawn
        lat = []
        for k in range(WARMUP + decisions):
            if k == WARMUP:
                cpu0 = _cpu_seconds(proc.pid)
            current = page.locator("#instance_id").input_value()
            want = f"item{int(current.removeprefix('item')) + 1}"
            page.keyboard.press("a")  # select the label (untimed)
            expect(page.locator("input[type=radio]").first).to_be_checked()
            t0 = time.perf_counter()
            page.locator("#next-btn").click(no_wait_after=True)
            page.wait_for_function(_POTATO_READY, arg=want, polling="raf")
            if k >= WARMUP:
                lat.append(time.perf_counter() - t0)
        cpu = (_cpu_seconds(proc.pid) - cpu0) / decisions
    finally:
        context.close()
        _stop(proc)
    return {"start_s": start, "next_s": statistics.median(lat), "cpu_s": cpu, "all": lat}


# ----------------------------------------------------------------------------- report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--decisions", type=int, default=20)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    work = OUT / "app"
    work.mkdir(parents=True, exist_ok=True)
    print("building the paper-scale ReForm project and plans…", flush=True)
    reform = build_reform(work / "reform.db")
    print(f"  plans: {reform['plans']}", flush=True)
    print("installing Potato and writing its 50,000 items…", flush=True)
    exe = potato_venv()
    load0 = os.getloadavg()[0]
    rows: dict[str, list[dict]] = {"big": [], "default": [], "potato": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for run in range(args.runs):
            for key in ("big", "default"):
                r = reform_run(browser, reform["url"], reform["plans"][key][0], args.decisions)
                rows[key].append(r)
                print(
                    f"  run {run + 1} ReForm {key}: start {r['start_s']:.2f} s, next {r['next_s'] * 1000:.0f} ms, "
                    f"CPU {r['cpu_s'] * 1000:.0f} ms/decision",
                    flush=True,
                )
            with tempfile.TemporaryDirectory(dir=work) as tmp:  # a fresh Potato project per run
                task = build_potato(Path(tmp) / "potato", reform["items"])
                r = potato_run(browser, exe, task, args.decisions, user=f"u{run}")
            rows["potato"].append(r)
            print(
                f"  run {run + 1} Potato: start {r['start_s']:.2f} s, next {r['next_s'] * 1000:.0f} ms, "
                f"CPU {r['cpu_s'] * 1000:.0f} ms/decision",
                flush=True,
            )
        browser.close()
    load1 = os.getloadavg()[0]
    write_report(rows, reform, args, load0, load1)


def write_report(rows: dict, reform: dict, args, load0: float, load1: float) -> None:
    from bench.machine import machine_line

    med = {k: {m: statistics.median(r[m] for r in v) for m in ("start_s", "next_s", "cpu_s")} for k, v in rows.items()}
    ratio_next = {
        k: statistics.median(a["next_s"] / p["next_s"] for a, p in zip(rows[k], rows["potato"]))
        for k in ("big", "default")
    }
    ratio_cpu = {
        k: statistics.median(a["cpu_s"] / p["cpu_s"] for a, p in zip(rows[k], rows["potato"]))
        for k in ("big", "default")
    }
    flat = med["big"]["next_s"] / med["default"]["next_s"]
    names = {
        "big": f"ReForm, {reform['plans']['big'][1]:,}-task plan",
        "default": f"ReForm, {reform['plans']['default'][1]:,}-task plan (default)",
        "potato": f"Potato 2.12.1, {POTATO_ITEMS:,} items",
    }
    lines = [
        "## Annotator loop in the browser vs Potato (bench/bench_app.py)",
        "",
        f"- {machine_line()} 1-min load average {load0:.1f} at the start, {load1:.1f} at the end (shared machine: "
        "compare the ratios, measured in the same run)",
        f"- ReForm: paper-scale project (150,000 instances, SQLite), password mode, one annotator; Potato "
        f"{POTATO.split('==')[1]} (PyPI, own venv), username login, the same item texts; Chromium headless via Playwright",
        f"- {args.runs} interleaved runs × {args.decisions} timed decisions per system (after {WARMUP} untimed); each "
        "run starts fresh servers; "
        "figures are medians over runs of the per-run medians; ratios are per run, then the median",
        "- decision → next item: ReForm one key (`A`) records the decision and shows the next item; Potato: label "
        "key first (untimed), then *Next* (timed) until the next instance is shown",
        "- server CPU per decision: user + system CPU of the server process over the loop / decisions; capacity = "
        "2 cores / that (derived; the browser's CPU is not counted)",
        "",
        "| system | server start → first item (s) | decision → next item (ms) | server CPU per decision (ms) "
        "| 2 cores serve (decisions/s) |",
        "|---|---|---|---|---|",
    ]
    for k in ("big", "default", "potato"):
        m = med[k]
        lines.append(
            f"| {names[k]} | {m['start_s']:.2f} | {m['next_s'] * 1000:.0f} | {m['cpu_s'] * 1000:.1f} "
            f"| {2 / m['cpu_s']:.0f} |"
        )
    lines += [
        "",
        "| target (issue 16) | measured | holds |",
        "|---|---|---|",
        f"| decision → next ≤ 0.8 × Potato's, same run | {ratio_next['big']:.2f} × ({reform['plans']['big'][1]:,} tasks), "
        f"{ratio_next['default']:.2f} × ({reform['plans']['default'][1]:,}) | "
        f"{'yes' if max(ratio_next.values()) <= 0.8 else 'no'} |",
        f"| flat in plan size | {reform['plans']['big'][1]:,}-task / {reform['plans']['default'][1]:,}-task plan: "
        f"{flat:.2f} × | {'yes' if flat <= 1.25 else 'no'} (≤ 1.25 ×) |",
        f"| server CPU per decision ≤ Potato's | {ratio_cpu['big']:.2f} × / {ratio_cpu['default']:.2f} × | "
        f"{'yes' if max(ratio_cpu.values()) <= 1 else 'no'} |",
        f"| 2 cores serve ≥ 20 decisions/s | {2 / med['big']['cpu_s']:.0f} / s (derived) | "
        f"{'yes' if 2 / med['big']['cpu_s'] >= 20 else 'no'} |",
        f"| server start → first item: ReForm 3.3 s vs Potato 9.0 s (keep) | {med['big']['start_s']:.1f} s vs "
        f"{med['potato']['start_s']:.1f} s | {'yes' if med['big']['start_s'] < med['potato']['start_s'] else 'no'} |",
        "",
        "Command: `flock /work/bench.lock python bench/bench_app.py`",
        "",
    ]
    out = ROOT / "bench" / "results" / "app.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

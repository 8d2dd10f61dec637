"""Benchmark: every feature detector (via detect_features_many) on 9,100 baseline responses.

9,100 = 910 questions x 10 models, the unconstrained-baseline workload of the
ReFormBench paper (arXiv:2610.19693, Table A14). Responses are synthetic Markdown of about 400 words, generated
deterministically from a seeded numpy Generator: headings, bullet / numbered / nested /
task lists, tables, code fences, block quotes, bold key-value lines and plain paragraphs.

Times ``detect_features_many`` (one Markdown parse per response, results back in the
calling process as ``CheckResult`` objects) with 1 and 2 worker processes; CPU time is
this process plus its workers. Acceptance (issue 8): <= 10 s on this machine.

Run: ``cd /work/main && python bench/bench_features.py [--n 9100] [--runs 3]``.
Writes the medians to ``bench/results/features.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.machine import cpu_model as _cpu_model  # noqa: E402
from reform_core.verifiers.features import detect_features, detect_features_many  # noqa: E402

WORDS = (
    "model answer data format section list table code value result user system test plan method "
    "step item note report time cost risk goal team budget review design metric source query"
).split()
EMOJI = ["✅", "🚀", "⚠️", "💡", "★"]


def _sentence(rng, lo=6, hi=16):
    words = [WORDS[i] for i in rng.integers(0, len(WORDS), int(rng.integers(lo, hi)))]
    if rng.random() < 0.15:
        words.insert(int(rng.integers(0, len(words))), f"**{WORDS[int(rng.integers(0, len(WORDS)))]}**")
    if rng.random() < 0.05:
        words.append(EMOJI[int(rng.integers(0, len(EMOJI)))])
    return " ".join(words).capitalize() + "."


def _block(rng):
    kind = rng.choice(
        [
            "para",
            "para",
            "para",
            "heading",
            "bullets",
            "numbered",
            "nested",
            "table",
            "code",
            "quote",
            "fields",
            "tasks",
        ]
    )
    n = int(rng.integers(2, 6))
    if kind == "heading":
        return "#" * int(rng.integers(1, 4)) + " " + _sentence(rng, 2, 5)[:-1]
    if kind == "bullets":
        return "\n".join(f"- {_sentence(rng)}" for _ in range(n))
    if kind == "numbered":
        return "\n".join(f"{i + 1}. {_sentence(rng)}" for i in range(n))
    if kind == "nested":
        return "\n".join(f"- {_sentence(rng, 3, 6)}\n  - {_sentence(rng)}" for _ in range(n))
    if kind == "tasks":
        return "\n".join(f"- [{' x'[int(rng.integers(0, 2))]}] {_sentence(rng, 3, 8)}" for _ in range(n))
    if kind == "table":
        rows = [f"| {WORDS[i]} | {_sentence(rng, 2, 5)} | {int(rng.integers(1, 99))} |" for i in range(n)]
        return "| Item | Note | Value |\n|---|---|---|\n" + "\n".join(rows)
    if kind == "code":
        body = "\n".join(
            f"x{i} = compute({i})  # step {i}" if rng.random() < 0.5 else f"x{i} = x{i - 1} + {i}" for i in range(n)
        )
        return f"```python\n{body}\n```"
    if kind == "quote":
        return "> " + _sentence(rng) + "\n> " + _sentence(rng)
    if kind == "fields":
        return "\n".join(f"**{WORDS[i].capitalize()}:** {_sentence(rng, 2, 6)}" for i in range(n))
    return " ".join(_sentence(rng) for _ in range(int(rng.integers(2, 5))))


def make_responses(n: int, seed: int = 20240910, words: int = 400) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        parts, count = [], 0
        while count < words:
            block = _block(rng)
            parts.append(block)
            count += len(block.split())
        out.append("\n\n".join(parts))
    return out


def run(texts: list[str], processes: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process and its workers, features present) for
    detect_features_many on every text."""
    t0, c0 = time.perf_counter(), os.times()
    results = detect_features_many(texts, processes=processes)
    wall, c1 = time.perf_counter() - t0, os.times()
    cpu = sum(c1[:4]) - sum(c0[:4])  # user + system, self + reaped workers
    return wall, cpu, sum(r.passed for res in results for r in res.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=9100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--processes", default="1,2", help="comma-separated worker counts to time")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "features.md"))
    args = ap.parse_args()

    t0 = time.perf_counter()
    texts = make_responses(args.n)
    gen_s = time.perf_counter() - t0
    mean_words = statistics.mean(len(t.split()) for t in texts)
    detect_features(texts[0])  # import / catalog load outside the timing

    load_start = os.getloadavg()[0]
    rows, present = [], set()
    for processes in map(int, args.processes.split(",")):
        runs = [run(texts, processes) for _ in range(args.runs)]
        walls = [w for w, _, _ in runs]
        med, cpu = statistics.median(walls), statistics.median(c for _, c, _ in runs)
        present |= {p for _, _, p in runs}
        rows.append((processes, med, cpu, walls))
        print(
            f"{processes} process(es): median {med:.2f} s wall, {cpu:.2f} s CPU over {args.runs} runs "
            f"({med / args.n * 1e3:.2f} ms wall, {cpu / args.n * 1e3:.2f} ms CPU per response); runs: {', '.join(f'{t:.2f}' for t in walls)}"
        )
    if len(present) != 1:
        raise SystemExit(f"runs disagree on the number of features present: {sorted(present)}")
    load_end = os.getloadavg()[0]
    lines = [
        "## Feature detectors (`bench/bench_features.py`)",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {os.cpu_count()} CPUs (`nproc`), {_cpu_model()}; Python {platform.python_version()}; shared with other jobs "
        f"(1-min load average {load_start:.1f} at the start, {load_end:.1f} at the end), expect noise",
        f"- workload: {args.n:,} synthetic baseline responses, mean {mean_words:.0f} words "
        f"(generated in {gen_s:.1f} s, not timed); every rule-detectable ReFormBench feature "
        f"via `detect_features_many` (one Markdown parse per response, `CheckResult`s back in the caller); "
        f"{present.pop() / args.n:.1f} features present per response on average",
        "- target (issue 8): <= 10 s in total",
        "",
        "| processes | median wall (s) | median CPU (s, all processes) | per response (ms, wall) | per response (ms, CPU) | runs (s, wall) |",
        "|---|---|---|---|---|---|",
    ]
    for processes, med, cpu, walls in rows:
        lines.append(
            f"| {processes} | {med:.2f} | {cpu:.2f} | {med / args.n * 1e3:.2f} | {cpu / args.n * 1e3:.2f} | "
            f"{', '.join(f'{t:.2f}' for t in walls)} |"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

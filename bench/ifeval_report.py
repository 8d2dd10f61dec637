"""Our IFEval checker against the reference checker's verdicts, as a report.

    python bench/ifeval_report.py [--data DIR] [--out reports/ifeval_disagreements.md]

Data: the vendored copy ``tests/data/ifeval`` unless ``--data`` names another folder with
the same files: IFEval's 541 prompts, GPT-4's responses, the reference checker's verdicts on
them (``official_verdicts_gpt4.csv``) and on the stress cases of ``bench/ifeval_stress.py``
(``reference_verdicts_stress.csv.gz``); both verdict files are written by
``bench/ifeval_reference.py``. Lists every differing verdict with its reason. The acceptance
test ``tests/unit/test_ifeval_official.py`` builds the same report into a temporary folder;
only this script rewrites the tracked ``reports/ifeval_disagreements.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ifeval_stress import TRANSFORMS  # noqa: E402
from reform_core import ifeval_eval  # noqa: E402
from reform_core.verifiers import ifeval  # noqa: E402

DATA = ROOT / "tests" / "data" / "ifeval"
REPORT = ROOT / "reports" / "ifeval_disagreements.md"
RESPONSES = "input_response_data_gpt4_20231107_145030.jsonl"
OFFICIAL = "official_verdicts_gpt4.csv"
STRESS = "reference_verdicts_stress.csv.gz"
MODES = ("strict", "loose")
RANDOM_REASON = "langdetect's random draw (the reference runs langdetect unseeded and gives either verdict)"


def _gpt4(data: Path) -> tuple[list[ifeval_eval.IFEvalPrompt], dict[str, str]]:
    return ifeval_eval.read_inputs(data / "input_data.jsonl"), ifeval_eval.read_responses(data / RESPONSES)


def compare(data: Path = DATA) -> dict[str, tuple[pd.DataFrame, list[int]]]:
    """Per mode: the reference verdicts on GPT-4's responses merged with ours (``_merge`` =
    both where matched; ``random`` 0) and the keys without a response."""
    prompts, responses = _gpt4(data)
    official = pd.read_csv(data / OFFICIAL).assign(random=0)
    # A key may hold one instruction id twice (different kwargs): match by occurrence.
    official["occ"] = official.groupby(["key", "instruction_id"]).cumcount()
    out = {}
    for mode in MODES:
        run = ifeval_eval.evaluate(prompts, responses, mode=mode)
        ours = run.verdicts.assign(occ=run.verdicts.groupby(["key", "instruction_id"]).cumcount())
        merged = official.merge(ours, on=["key", "instruction_id", "occ"], how="outer", indicator=True)
        out[mode] = (merged, run.missing)
    return out


def compare_stress(data: Path = DATA) -> dict[str, tuple[pd.DataFrame, list[int]]]:
    """As :func:`compare`, on the stress cases: each row's response rebuilt from GPT-4's
    response ``source`` and its ``transform``, checked with the row's instruction."""
    prompts, responses = _gpt4(data)
    by_key = {p.key: responses[p.prompt] for p in prompts if p.prompt in responses}
    ref = pd.read_csv(data / STRESS)
    texts = [TRANSFORMS[t](by_key[s]) for s, t in zip(ref["source"], ref["transform"])]
    out = {}
    for mode in MODES:
        results = [
            ifeval.check(iid, text, json.loads(kw), mode=mode)
            for iid, kw, text in zip(ref["instruction_id"], ref["kwargs_json"], texts)
        ]
        merged = ref.assign(passed=[r.passed for r in results], evidence=[r.evidence for r in results], _merge="both")
        out[mode] = (merged, [])
    return out


def summary(comparison: dict, mode: str) -> dict:
    """Counts of one mode: compared, differing (of which langdetect's draw), and the
    prompt-level accuracy (%) by the reference and by us."""
    merged = comparison[mode][0]
    both = merged[merged["_merge"] == "both"]
    bad = both[both[mode].astype(bool) != both["passed"].astype(bool)]
    return {
        "compared": len(both),
        "differ": len(bad),
        "differ_random": int(bad["random"].sum()),
        "random": int(both["random"].sum()),
        "prompt_reference": 100 * both[mode].astype(bool).groupby(both["key"]).all().mean(),
        "prompt_ours": 100 * both["passed"].astype(bool).groupby(both["key"]).all().mean(),
    }


def _summary_rows(label: str, comparison: dict) -> list[str]:
    rows = []
    for mode in MODES:
        s = summary(comparison, mode)
        rows.append(
            f"| {label} | {mode} | {s['compared']} | {s['random']} | {s['differ']} | "
            f"{s['differ'] - s['differ_random']} | {s['prompt_reference']:.2f} % | {s['prompt_ours']:.2f} % |"
        )
    return rows


def _detail_rows(label: str, comparison: dict) -> list[str]:
    rows = []
    for mode in MODES:
        merged = comparison[mode][0]
        both = merged[merged["_merge"] == "both"]
        for row in both[both[mode].astype(bool) != both["passed"].astype(bool)].itertuples():
            reason = RANDOM_REASON if row.random else "unexplained"
            rows.append(
                f"| {label} | {mode} | {row.key} | `{row.instruction_id}` | `{row.kwargs_json}` | "
                f"{getattr(row, mode)} | {int(row.passed)} | {row.evidence} | {reason} |"
            )
    return rows


def report_text(comparisons: dict[str, dict], *, data_label: str = "tests/data/ifeval/") -> str:
    """The Markdown report: per data set and mode a summary row; one row per differing verdict."""
    lines = [
        "# IFEval: our checker vs the reference checker",
        "",
        f"Generated by `python bench/ifeval_report.py` on {date.today().isoformat()}.",
        f"Data: `{data_label}` (541 prompts; verdicts of the reference checker, google-research",
        "`instruction_following_eval`, written by `bench/ifeval_reference.py`). *drawn*: verdicts",
        "that change with langdetect's random draw in the reference itself.",
        "",
        "| responses | mode | instructions compared | drawn | differing verdicts | differing, not drawn "
        "| prompt-level (reference) | prompt-level (ours) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for label, comparison in comparisons.items():
        lines += _summary_rows(label, comparison)
        details += _detail_rows(label, comparison)
    missing = comparisons["GPT-4"]["strict"][1] if "GPT-4" in comparisons else []
    lines += [
        "",
        f"GPT-4 prompts without a response (not evaluated): {', '.join(map(str, missing)) or 'none'}.",
        "",
        "## Differing verdicts",
        "",
    ]
    if details:
        lines += [
            "| responses | mode | key | instruction | kwargs | reference | ours | our evidence | reason |",
            "|---|---|---|---|---|---|---|---|---|",
            *details,
        ]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def all_comparisons(data: Path = DATA) -> dict[str, dict]:
    """``{label: comparison}`` for GPT-4's responses and the stress cases."""
    return {"GPT-4": compare(data), "stress cases (from GPT-4's)": compare_stress(data)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=REPORT)
    args = ap.parse_args()
    label = str(args.data.relative_to(ROOT)) + "/" if args.data.resolve().is_relative_to(ROOT) else str(args.data)
    text = report_text(all_comparisons(args.data), data_label=label)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

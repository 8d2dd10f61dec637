"""The reference checker's IFEval verdicts, as a CSV that our tests compare with.

    python bench/ifeval_reference.py --reference DIR [--data DIR] [--responses FILE]
                                     [--stress] --out FILE.csv

``DIR`` holds the reference checker's package ``instruction_following_eval`` (a checkout of
the google-research repository; not shipped with ReForm), whose own ``evaluation_lib``
functions ``test_instruction_following_strict`` / ``_loose`` decide every verdict. Its
requirements (``absl-py``, ``immutabledict``, ``langdetect``, ``nltk``) must be installed;
NLTK's English Punkt model is taken from ReForm's copy (``reform_core/verifiers/data/
nltk_data``), so nothing is downloaded. Prompts without a response are skipped.

Without ``--stress``: the verdicts on ``--responses`` (default: GPT-4's responses in
``--data``, default ``tests/data/ifeval``). With ``--stress``: the verdicts on the stress
cases of ``bench/ifeval_stress.py`` built from those responses.

Output columns: ``key, instruction_id, kwargs_json, strict, loose`` (1 = followed), one row
per instruction in input order (the format of ``tests/data/ifeval/official_verdicts_gpt4.csv``).
A verdict that depends on langdetect's random draw (the reference leaves ``langdetect``
unseeded; such a verdict changed between ``DRAWS`` seeded runs of the same check) is
printed. Stress cases add ``random`` (1 for such a verdict, else 0), ``prompt_key, source,
transform`` and ``family`` (``instructions`` or ``counts``), and use the case number as
``key``; the responses that are their prompt's own (transforms in ``BOUNDARY_TRANSFORMS``)
also get the count instructions at the reference's own counts (``at least C`` and ``less than C + 1`` sentences, words and all-capital words),
which pass only when a checker counts exactly as the reference does.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ifeval_stress import stress_cases, stress_inputs  # noqa: E402
from reform_core.verifiers.ifeval_text import NLTK_DATA  # noqa: E402

DATA = ROOT / "tests" / "data" / "ifeval"
DRAWS = 20
LANGDETECT_IDS = {"language:response_language", "change_case:english_capital", "change_case:english_lowercase"}
BOUNDARY_TRANSFORMS = ("same", "upper", "first_third")
RESPONSES = "input_response_data_gpt4_20231107_145030.jsonl"


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_reference(directory: Path):
    """The reference's ``evaluation_lib``, importable from ``directory``, reading Punkt
    from ReForm's NLTK data folder."""
    sys.path.insert(0, str(directory))
    import nltk

    nltk.data.path.insert(0, str(NLTK_DATA))
    from instruction_following_eval import evaluation_lib

    return evaluation_lib


def _verdicts(lib, inp, prompt_to_response) -> list[tuple[bool, bool]]:
    strict = lib.test_instruction_following_strict(inp, prompt_to_response).follow_instruction_list
    loose = lib.test_instruction_following_loose(inp, prompt_to_response).follow_instruction_list
    return list(zip(strict, loose))


def _random_draws(lib, inp, prompt_to_response) -> list[bool]:
    """Per instruction: did its verdicts change over ``DRAWS`` seeded langdetect runs?"""
    from langdetect import DetectorFactory

    if not LANGDETECT_IDS & set(inp.instruction_id_list):
        return [False] * len(inp.instruction_id_list)
    seen = []
    for seed in range(DRAWS):
        DetectorFactory.seed = seed
        seen.append(_verdicts(lib, inp, prompt_to_response))
    DetectorFactory.seed = None  # unseeded again, as the reference runs
    return [len({draw[i] for draw in seen}) > 1 for i in range(len(inp.instruction_id_list))]


def reference_rows(lib, inputs: list[dict], prompt_to_response: dict[str, str]) -> list[dict]:
    """One row per instruction of every input that has a response, strict and loose."""
    rows = []
    for line in inputs:
        if line["prompt"] not in prompt_to_response:
            continue
        inp = lib.InputExample(
            key=line["key"],
            instruction_id_list=line["instruction_id_list"],
            prompt=line["prompt"],
            kwargs=line["kwargs"],
        )
        verdicts = _verdicts(lib, inp, prompt_to_response)
        randoms = _random_draws(lib, inp, prompt_to_response)
        for iid, kw, (s, lo), rnd in zip(line["instruction_id_list"], line["kwargs"], verdicts, randoms):
            rows.append(
                {
                    "key": line["key"],
                    "instruction_id": iid,
                    "kwargs_json": json.dumps(kw, sort_keys=True),
                    "strict": int(s),
                    "loose": int(lo),
                    "random": int(rnd),
                }
            )
    return rows


def boundary_line(key: int, prompt: str, text: str) -> dict:
    """The count instructions at the reference's own counts of ``text``."""
    from instruction_following_eval import instructions_util as util

    counts = {
        ("length_constraints:number_sentences", "num_sentences", "relation"): util.count_sentences(text),
        ("length_constraints:number_words", "num_words", "relation"): util.count_words(text),
        ("change_case:capital_word_frequency", "capital_frequency", "capital_relation"): sum(
            1 for w in util.nltk.word_tokenize(text) if w.isupper()
        ),
    }
    ids, kwargs = [], []
    for (iid, n_name, rel_name), n in counts.items():
        ids += [iid, iid]
        kwargs += [{n_name: n, rel_name: "at least"}, {n_name: n + 1, rel_name: "less than"}]
    return {"key": key, "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs}


def stress_rows(lib, inputs: list[dict], prompt_to_response: dict[str, str]) -> list[dict]:
    """:func:`reference_rows` on the stress cases, with their origin columns."""
    by_prompt = {line["prompt"]: line["key"] for line in inputs}
    responses = {by_prompt[p]: r for p, r in prompt_to_response.items() if p in by_prompt}
    lines, texts = stress_inputs(inputs, responses)
    origin = {c.case: c for c in stress_cases([p["key"] for p in inputs], sorted(responses))}
    for c in list(origin.values()):
        if c.key == c.source and c.transform in BOUNDARY_TRANSFORMS:
            extra = replace(c, case=len(origin))
            lines.append(boundary_line(extra.case, extra.prompt + "/counts", texts[c.prompt]))
            texts[lines[-1]["prompt"]] = texts[c.prompt]
            origin[extra.case] = extra
    rows = reference_rows(lib, lines, texts)
    counts = {line["key"] for line in lines if line["prompt"].endswith("/counts")}
    for row in rows:
        c = origin[row["key"]]
        family = "counts" if c.case in counts else "instructions"
        row.update(prompt_key=c.key, source=c.source, transform=c.transform, family=family)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="folder holding instruction_following_eval/")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--responses", type=Path, default=None)
    ap.add_argument("--stress", action="store_true")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    lib = load_reference(args.reference)
    inputs = _jsonl(args.data / "input_data.jsonl")
    prompt_to_response = {r["prompt"]: r["response"] for r in _jsonl(args.responses or args.data / RESPONSES)}
    rows = (stress_rows if args.stress else reference_rows)(lib, inputs, prompt_to_response)
    drawn = [f"{r['key']} {r['instruction_id']}" for r in rows if r["random"]]
    print(f"{len(drawn)} verdicts depend on langdetect's random draw" + (": " + ", ".join(drawn) if drawn else ""))
    if not args.stress:
        rows = [{k: v for k, v in r.items() if k != "random"} for r in rows]
    with args.out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} verdicts to {args.out}")


if __name__ == "__main__":
    main()

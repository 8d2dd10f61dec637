"""A small hand-made bundle for the scoring tests of issue 14 (judge pair, missing data).

Two questions (q1: task ``explain``, q2: task ``howto``), three variants each with the same
three-constraint patterns, two evaluated models. Targets of a question (feature:mode, V):

    section_headings:require   {v1, v2, v3}
    bullet_list:forbid         {v1, v3}
    typographic_emphasis:require {v1}
    numbered_enumeration:forbid  {v2}
    code_block:require         {v2, v3}

Baseline annotations are given per (model, question); a (model, question) left out has no
annotation at all. Labels come from ``label(judge, model, instruction, position)`` returning
0 / 1, ``None`` (no judgment row) or ``"error"`` (an error row, as a failed API call writes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

PATTERNS = {
    "v1": [("section_headings", "require"), ("bullet_list", "forbid"), ("typographic_emphasis", "require")],
    "v2": [("section_headings", "require"), ("numbered_enumeration", "forbid"), ("code_block", "require")],
    "v3": [("section_headings", "require"), ("bullet_list", "forbid"), ("code_block", "require")],
}
QUESTIONS = {"q1": "explain", "q2": "howto"}
MODELS = ("m1", "m2")
INSTRUCTIONS = [f"{q}-{v}" for q in QUESTIONS for v in PATTERNS]


def _w(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_bundle(
    root: Path,
    *,
    judges: tuple[str, ...] = ("ja", "jb"),
    label: Optional[Callable] = None,
    baseline: Optional[dict] = None,
    adjudications: tuple[dict, ...] = (),
) -> Path:
    """Write the bundle into ``root``; ``judges`` in creation order. Default labels: every
    judge passes everything; default baseline: both models annotated for both questions
    with ``bullet_list`` present."""
    label = label or (lambda j, m, i, p: 1)
    baseline = baseline if baseline is not None else {(m, q): ["bullet_list"] for m in MODELS for q in QUESTIONS}
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(
        json.dumps({"format": "reform-bundle", "version": 1, "name": "pair-tests", "catalog": "reformbench"})
    )
    _w(
        root / "questions.jsonl",
        [
            {"key": q, "text": f"Question {q}.", "task_type": t, "domain": "d", "language": "en"}
            for q, t in QUESTIONS.items()
        ],
    )
    _w(
        root / "instructions.jsonl",
        [
            {
                "key": f"{q}-{v}",
                "question": q,
                "text": f"Question {q}, variant {v}.",
                "constraints": [
                    {"position": n, "feature": f, "mode": mode, "text": f"{mode} {f}", "acceptance": f"{f} {mode}d"}
                    for n, (f, mode) in enumerate(PATTERNS[v], 1)
                ],
            }
            for q in QUESTIONS
            for v in PATTERNS
        ],
    )
    _w(root / "models.jsonl", [{"name": m} for m in MODELS])
    resp = [{"model": m, "question": q, "text": f"baseline {m} {q}"} for m in MODELS for q in QUESTIONS]
    resp += [
        {"model": m, "question": i.split("-")[0], "instruction": i, "text": f"answer {m} {i}"}
        for m in MODELS
        for i in INSTRUCTIONS
    ]
    _w(root / "responses.jsonl", resp)
    _w(
        root / "baseline_features.jsonl",
        [{"model": m, "question": q, "feature": f} for (m, q), feats in baseline.items() for f in feats],
    )
    _w(root / "judges.jsonl", [{"name": j, "provider": "replay", "model": j, "prompt_version": "v1"} for j in judges])
    rows = []
    for j in judges:
        for m in MODELS:
            for i in INSTRUCTIONS:
                for p in (1, 2, 3):
                    lab = label(j, m, i, p)
                    if lab is None:
                        continue
                    if lab == "error":
                        rows.append(
                            {
                                "judge": j,
                                "model": m,
                                "instruction": i,
                                "position": p,
                                "label": None,
                                "status": "error",
                                "error": "404 Not Found",
                                "prompt_version": "v1",
                            }
                        )
                    else:
                        rows.append(
                            {
                                "judge": j,
                                "model": m,
                                "instruction": i,
                                "position": p,
                                "label": lab,
                                "rationale": f"{j}: {lab}",
                                "prompt_version": "v1",
                            }
                        )
    _w(root / "judgments.jsonl", rows)
    if adjudications:
        _w(root / "adjudications.jsonl", list(adjudications))
    return root

"""Benchmarks of any shape, for the property test of ``test_any_shape.py``.

A :class:`Shape` is drawn by :func:`shapes` (hypothesis): 1–5 models, 1–200 questions, 1–3
variants per question, 1–6 constraints per prompt (counts may vary between prompts),
require/forbid or require only, with or without baseline annotations, some judgments missing,
some models whose judges never disagree. :func:`benchmark` turns it into long rows with a
hidden truth and both judges' labels; :func:`write_bundle` and :func:`write_table` write those
rows in the two import formats.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import strategies as st

# features of the bundled catalog (reformbench): a table or bundle naming them needs no catalog of its own
FEATURES = (
    "bullet_list",
    "checklist",
    "nested_list",
    "section_headings",
    "code_block",
    "table_or_grid",
    "numbered_enumeration",
    "typographic_emphasis",
    "key_value_fields",
    "document_title",
)


@dataclass(frozen=True)
class Shape:
    models: int
    questions: int
    variants: int
    min_constraints: int
    max_constraints: int
    forbid: bool
    baseline: bool
    missing: float  # share of judgments left out
    calm_models: int  # models whose two judges never disagree
    seed: int

    def describe(self) -> str:
        return (
            f"{self.models} model(s) × {self.questions} question(s) × {self.variants} variant(s), "
            f"{self.min_constraints}–{self.max_constraints} constraints, forbid={self.forbid}, "
            f"baseline={self.baseline}, missing={self.missing}, calm={self.calm_models}, seed={self.seed}"
        )


@st.composite
def shapes(draw) -> Shape:
    models = draw(st.integers(1, 5))
    lo = draw(st.integers(1, 6))
    return Shape(
        models=models,
        questions=draw(st.one_of(st.just(1), st.integers(1, 12), st.integers(1, 200))),
        variants=draw(st.integers(1, 3)),
        min_constraints=lo,
        max_constraints=draw(st.integers(lo, 6)),
        forbid=draw(st.booleans()),
        baseline=draw(st.booleans()),
        missing=draw(st.sampled_from((0.0, 0.0, 0.03, 0.2))),
        calm_models=draw(st.integers(0, models)),
        seed=draw(st.integers(0, 2**16)),
    )


def benchmark(shape: Shape) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Long rows ``model, question, instruction, position, feature, mode, truth, label_a, label_b``
    (a label NaN where the judgment is missing) and the baseline rows ``model, question, feature``."""
    rng = np.random.default_rng(shape.seed)
    rows, base = [], []
    for qi in range(shape.questions):
        q = f"q{qi:03d}"
        for vi in range(shape.variants):
            k = int(rng.integers(shape.min_constraints, shape.max_constraints + 1))
            picked = rng.choice(len(FEATURES), size=k, replace=False)
            for pos, f in enumerate(picked, 1):
                mode = "forbid" if shape.forbid and rng.random() < 0.4 else "require"
                rows.append(
                    {
                        "question": q,
                        "instruction": f"{q}-v{vi + 1}",
                        "position": pos,
                        "feature": FEATURES[f],
                        "mode": mode,
                    }
                )
    cons = pd.DataFrame(rows)
    out = []
    for mi in range(shape.models):
        m = f"model-{mi + 1}"
        skill = rng.uniform(0.3, 0.97)
        truth = (rng.random(len(cons)) < skill).astype(int)
        calm = mi < shape.calm_models
        err_a, err_b = (0.0, 0.0) if calm else (rng.uniform(0.02, 0.15), rng.uniform(0.02, 0.2))
        la = np.where(rng.random(len(cons)) < err_a, 1 - truth, truth).astype(float)
        lb = np.where(rng.random(len(cons)) < err_b, 1 - truth, truth).astype(float)
        la[rng.random(len(cons)) < shape.missing] = np.nan
        lb[rng.random(len(cons)) < shape.missing] = np.nan
        out.append(cons.assign(model=m, truth=truth, label_a=la, label_b=lb))
        if shape.baseline:
            for q in cons["question"].unique():
                for f in FEATURES:
                    if rng.random() < 0.3:
                        base.append({"model": m, "question": q, "feature": f})
    return pd.concat(out, ignore_index=True), pd.DataFrame(base, columns=["model", "question", "feature"])


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_bundle(rows: pd.DataFrame, baseline: pd.DataFrame, root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(
        json.dumps({"format": "reform-bundle", "version": 1, "name": "any shape", "catalog": "reformbench"}),
        encoding="utf-8",
    )
    cons = rows.drop_duplicates(["instruction", "position"])
    _jsonl(root / "questions.jsonl", [{"key": q, "text": f"Question {q}."} for q in cons["question"].unique()])
    _jsonl(
        root / "instructions.jsonl",
        [
            {
                "key": i,
                "question": g["question"].iloc[0],
                "text": f"Prompt {i}.",
                "constraints": [
                    {"position": int(r.position), "feature": r.feature, "mode": r.mode} for r in g.itertuples()
                ],
            }
            for i, g in cons.groupby("instruction", sort=True)
        ],
    )
    models = sorted(rows["model"].unique())
    _jsonl(root / "models.jsonl", [{"name": m} for m in models])
    resp = [
        {"model": m, "question": q, "instruction": i, "text": f"answer of {m} to {i}"}
        for (m, q, i) in rows[["model", "question", "instruction"]].drop_duplicates().itertuples(index=False)
    ]
    if len(baseline):
        resp += [
            {"model": m, "question": q, "text": f"baseline of {m} to {q}"}
            for m in models
            for q in cons["question"].unique()
        ]
        _jsonl(root / "baseline_features.jsonl", baseline.to_dict("records"))
    _jsonl(root / "responses.jsonl", resp)
    _jsonl(root / "judges.jsonl", [{"name": j, "provider": "replay"} for j in ("ja", "jb")])
    _jsonl(
        root / "judgments.jsonl",
        [
            {"judge": j, "model": r.model, "instruction": r.instruction, "position": int(r.position), "label": int(lab)}
            for j, col in (("ja", "label_a"), ("jb", "label_b"))
            for r, lab in zip(rows.itertuples(), rows[col])
            if not np.isnan(lab)
        ],
    )
    return root


def write_table(rows: pd.DataFrame, path: Path) -> Path:
    """One row per (model, prompt, constraint); an empty label cell: not judged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "model",
                "question",
                "instruction",
                "prompt",
                "instruction_text",
                "position",
                "feature",
                "mode",
                "response",
                "label:ja",
                "label:jb",
            ]
        )
        for r in rows.itertuples():
            w.writerow(
                [
                    r.model,
                    r.question,
                    r.instruction,
                    f"Question {r.question}.",
                    f"Prompt {r.instruction}.",
                    int(r.position),
                    r.feature,
                    r.mode,
                    f"answer of {r.model} to {r.instruction}",
                    "" if np.isnan(r.label_a) else int(r.label_a),
                    "" if np.isnan(r.label_b) else int(r.label_b),
                ]
            )
    return path


def literal_scores(rows: pd.DataFrame) -> dict[str, dict[str, float]]:
    """TCPR and the constraint-level rate of the true labels by a literal loop, over the
    instructions whose every constraint both judges labelled (the product's missing-data rule)."""
    out: dict[str, dict[str, float]] = {}
    for m, mdf in rows.groupby("model", sort=True):
        allpass, cons = [], []
        for _, g in mdf.groupby("instruction", sort=True):
            if g["label_a"].isna().any() or g["label_b"].isna().any():
                continue
            allpass.append(all(int(t) == 1 for t in g["truth"]))
            cons.extend(int(t) for t in g["truth"])
        out[m] = {
            "tcpr": 100 * sum(allpass) / len(allpass) if allpass else float("nan"),
            "constraint_level": 100 * sum(cons) / len(cons) if cons else float("nan"),
        }
    return out

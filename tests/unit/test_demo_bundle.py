"""The bundled demo project (reform_core/demo): contract, structure and the worked example
(docs/metrics.md#worked-example)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from functools import lru_cache
from itertools import combinations

import emoji
import pandas as pd
import pytest

from reform_core.catalog import load_catalog
from reform_core.demo import bundle_dir
from reform_core.records import BUNDLE_FILES, RECORD_TYPES, BundleManifest

A, B = "gpt-judge", "gemini-judge"
PAIR = ("pixel-mini", "q05")  # the worked example
TARGETS = {"a": ("bullet_list", "forbid"), "b": ("section_headings", "require"), "c": ("call_to_action", "forbid")}


@lru_cache(maxsize=None)
def bundle() -> dict:
    """Every bundle file parsed with its record class (a failure names file and line)."""
    out = {}
    for name in BUNDLE_FILES:
        records = []
        for n, line in enumerate((bundle_dir() / name).read_text(encoding="utf-8").splitlines(), start=1):
            try:
                records.append(RECORD_TYPES[name].model_validate(json.loads(line)))
            except Exception as exc:  # pragma: no cover - the message is the point
                raise AssertionError(f"{name}:{n}: {exc}") from exc
        out[name] = records
    return out


@lru_cache(maxsize=None)
def labels() -> dict:
    """(model, instruction, position) -> {judge: label}."""
    out = defaultdict(dict)
    for j in bundle()["judgments.jsonl"]:
        out[(j.model, j.instruction, j.position)][j.judge] = j.label
    return out


def instructions(condition: str | None = None) -> dict:
    return {i.key: i for i in bundle()["instructions.jsonl"] if condition is None or i.condition == condition}


def present() -> set:
    return {(b.model, b.question, b.feature) for b in bundle()["baseline_features.jsonl"] if b.present}


def eligible_units(V: dict) -> list:
    """docs/metrics.md#eligible-units: S ⊆ T_q with |S| = K, non-empty common variant and ≥ 2 covered variants."""
    units = []
    for k in (1, 2, 3):
        for S in combinations(sorted(V), k):
            sets = [V[t] for t in S]
            if set.intersection(*sets) and len(set.union(*sets)) >= 2:
                units.append((k, S))
    return units


def pair_structure(model: str, question: str) -> tuple[dict, dict]:
    """V(q, t) over baseline-opposed targets, and y[(instruction, target)] = both judges pass."""
    P = {f for m, q, f in present() if (m, q) == (model, question)}
    V, y = defaultdict(set), {}
    for inst in instructions("main").values():
        if inst.question != question:
            continue
        for c in inst.constraints:
            opposed = (c.feature in P) if c.mode == "forbid" else (c.feature not in P)
            if opposed:
                t = (c.feature, c.mode)
                V[t].add(inst.key)
                y[(inst.key, t)] = int(set(labels()[(model, inst.key, c.position)].values()) == {1})
    return dict(V), y


# ----------------------------------------------------------------------------- contract


def test_every_file_validates_and_is_non_empty():
    manifest = BundleManifest.model_validate_json((bundle_dir() / "bundle.json").read_text(encoding="utf-8"))
    assert manifest.catalog == "reformbench" and "q05" in manifest.description and "27.78" in manifest.description
    for name in BUNDLE_FILES:
        assert bundle()[name], f"{name} is empty"


def test_keys_referenced_exist():
    b = bundle()
    questions = {q.key for q in b["questions.jsonl"]}
    models = {m.name for m in b["models.jsonl"]}
    judges = {j.name for j in b["judges.jsonl"]}
    insts = instructions()
    assert len(questions) == len(b["questions.jsonl"]) and len(insts) == len(b["instructions.jsonl"])
    assert all(i.question in questions for i in insts.values())
    responded = set()
    for r in b["responses.jsonl"]:
        assert r.model in models and r.question in questions
        if r.instruction is not None:
            assert insts[r.instruction].question == r.question
        responded.add((r.model, r.question, r.instruction))
    assert len(responded) == len(b["responses.jsonl"]), "duplicate responses"
    for j in b["judgments.jsonl"]:
        assert j.judge in judges and (j.model, insts[j.instruction].question, j.instruction) in responded
        assert j.position in {c.position for c in insts[j.instruction].constraints}
    catalog = load_catalog("reformbench")
    for f in b["baseline_features.jsonl"]:
        assert f.model in models and f.question in questions and f.feature in catalog
    assert {(j.name, j.provider) for j in b["judges.jsonl"]} == {(A, "openai"), (B, "gemini")}


def test_build_reproduces_the_committed_bundle(tmp_path):
    from reform_core.demo.build import write

    write(tmp_path)
    for name in ("bundle.json", *BUNDLE_FILES):
        assert (tmp_path / name).read_bytes() == (bundle_dir() / name).read_bytes(), f"{name} is stale: rerun build"


# ----------------------------------------------------------------------------- structure


def test_questions_cover_several_task_types_and_domains():
    qs = bundle()["questions.jsonl"]
    assert len(qs) >= 12
    assert len({q.task_type for q in qs}) >= 6 and len({q.domain for q in qs}) >= 6
    assert all(len(q.text.split()) >= 8 for q in qs)


def test_main_instructions_have_three_constraints_from_distinct_categories():
    catalog = load_catalog("reformbench")
    mains = instructions("main")
    assert len(mains) == 135  # 51 hand-written + up to 7 recombinations per question (issue 34: informative intervals)
    per_question = Counter(i.question for i in mains.values())
    assert per_question["q05"] == 3, "the worked example's question keeps its three variants"
    assert set(per_question.values()) <= set(range(3, 13)) and len(per_question) == len(bundle()["questions.jsonl"])
    distinct = {
        q: {
            frozenset((c.feature, c.mode, json.dumps(c.params)) for c in i.constraints)
            for i in mains.values()
            if i.question == q
        }
        for q in per_question
    }
    assert all(len(sets) == per_question[q] for q, sets in distinct.items()), "no variant repeats another's targets"
    for i in mains.values():
        assert sorted(c.position for c in i.constraints) == [1, 2, 3], i.key
        assert all(c.feature in catalog for c in i.constraints), i.key
        assert all(c.category == catalog[c.feature].category for c in i.constraints), i.key
        assert len({c.category for c in i.constraints}) == 3, i.key
        assert all(c.text and c.acceptance and c.text in i.text for c in i.constraints), i.key
        assert i.pair_group == i.key


def test_single_constraint_versions_pair_with_their_main_instruction():
    mains, singles = instructions("main"), instructions("single")
    assert len(singles) >= 6
    groups = defaultdict(list)
    for s in singles.values():
        assert len(s.constraints) == 1
        groups[s.pair_group].append(s.constraints[0])
    for group, cs in groups.items():
        main = {(c.position, c.feature, c.mode, json.dumps(c.params)) for c in mains[group].constraints}
        assert {(c.position, c.feature, c.mode, json.dumps(c.params)) for c in cs} == main
    single_models = {r.model for r in bundle()["responses.jsonl"] if r.instruction in singles}
    assert len(single_models) == 1


def test_every_model_has_a_baseline_per_question_and_a_response_per_main_instruction():
    b = bundle()
    have = {(r.model, r.question, r.instruction) for r in b["responses.jsonl"]}
    models = {m.name for m in b["models.jsonl"]}
    assert len(models) == 3
    for m in models:
        for q in b["questions.jsonl"]:
            assert (m, q.key, None) in have
        for i in instructions("main").values():
            assert (m, i.question, i.key) in have
            assert all(set(labels()[(m, i.key, c.position)]) == {A, B} for c in i.constraints)


def test_responses_have_realistic_length():
    words = [len(r.text.split()) for r in bundle()["responses.jsonl"]]
    assert min(words) >= 50 and max(words) <= 230


def test_model_styles_really_differ():
    base = {(r.model, r.question): r.text for r in bundle()["responses.jsonl"] if r.instruction is None}
    helix = [t for (m, _), t in base.items() if m == "helix-pro"]
    quill = [t for (m, _), t in base.items() if m == "quill-2"]
    pixel = [t for (m, _), t in base.items() if m == "pixel-mini"]
    assert all(re.search(r"^## ", t, re.M) and "**" in t for t in helix)
    assert not any(re.search(r"^(#|- |\d+\. |\|)", t, re.M) or "**" in t or emoji.emoji_count(t) for t in quill)
    assert all(emoji.emoji_count(t) >= 2 for t in pixel)
    assert sum(bool(re.search(r"^\|", t, re.M)) for t in pixel) >= 3


def test_baseline_annotations_match_the_text():
    detect = {
        "bullet_list": lambda t: re.search(r"^[-*+•] ", t, re.M),
        "numbered_enumeration": lambda t: re.search(r"^\d+[.)] ", t, re.M),
        "section_headings": lambda t: re.search(r"^#{2,6} ", t, re.M),
        "table_or_grid": lambda t: re.search(r"^\|.*\|\n\|\s*-{3}", t, re.M),
        "typographic_emphasis": lambda t: re.search(r"\*\*\S", t),
        "emoji_and_symbols": lambda t: emoji.emoji_count(t),
        "code_block": lambda t: "```" in t,
        "callout_or_note_block": lambda t: re.search(r"^> ", t, re.M),
        "direct_address": lambda t: re.search(r"\byou(r|rs|rself)?\b", t, re.I),
    }
    P = present()
    for r in bundle()["responses.jsonl"]:
        if r.instruction is None:
            for feature, fn in detect.items():
                assert bool(fn(r.text)) == ((r.model, r.question, feature) in P), (r.model, r.question, feature)


# ----------------------------------------------------------------------------- judges and adjudication


def test_judges_disagree_at_a_realistic_rate_in_both_directions():
    insts = instructions()
    lab = labels()
    dis = {k: v for k, v in lab.items() if v[A] != v[B]}
    assert 0.05 <= len(dis) / len(lab) <= 0.20
    directions = Counter("A1B0" if v[A] else "A0B1" for v in dis.values())
    assert directions["A1B0"] >= 5 and directions["A0B1"] >= 5
    cats = {(c.category, c.mode) for (m, i, p) in dis for c in insts[i].constraints if c.position == p}
    assert len({c for c, _ in cats}) >= 4 and {m for _, m in cats} == {"require", "forbid"}


def test_rationales_are_specific_one_sentence_texts():
    for j in bundle()["judgments.jsonl"]:
        assert j.rationale.endswith((".", "'", '"')) and len(j.rationale.split()) >= 6
    by_unit = defaultdict(set)
    for j in bundle()["judgments.jsonl"]:
        by_unit[(j.model, j.instruction, j.position)].add(j.rationale)
    assert all(len(r) == 2 for r in by_unit.values()), "the two judges word their rationales differently"


def test_adjudications_cover_part_of_the_disagreements():
    lab = labels()
    adj = bundle()["adjudications.jsonl"]
    dis = [k for k, v in lab.items() if v[A] != v[B]]
    keys = [(a.model, a.instruction, a.position) for a in adj]
    assert len(set(keys)) == len(keys) and all(k in dis for k in keys)
    assert all((a.judge_a, a.judge_b) == (A, B) for a in adj)
    assert 0.25 <= len(adj) / len(dis) <= 0.55
    choices = Counter(a.choice for a in adj)
    assert choices["A"] and choices["B"] and 1 <= choices["neither"] <= 2
    assert {a.annotator for a in adj} == {"alice", "bob"}
    # reviewed and unreviewed strata both exist (stratum = model × direction × category × mode)
    insts = instructions()

    def stratum(k):
        c = next(c for c in insts[k[1]].constraints if c.position == k[2])
        return (k[0], "A1B0" if lab[k][A] else "A0B1", c.category, c.mode)

    reviewed = {stratum(k) for k in keys}
    assert reviewed and {stratum(k) for k in dis} - reviewed


def test_every_model_has_eligible_emcr_units_at_each_k():
    for model in ("helix-pro", "quill-2", "pixel-mini"):
        ks = Counter()
        for q in bundle()["questions.jsonl"]:
            V, _ = pair_structure(model, q.key)
            ks.update(k for k, _ in eligible_units(V))
        assert all(ks[k] >= 3 for k in (1, 2, 3)), (model, ks)


# ----------------------------------------------------------------------------- the worked example


def test_worked_example_structure_and_scores():
    model, question = PAIR
    V, y = pair_structure(model, question)
    a, b, c = (TARGETS[x] for x in "abc")
    assert V == {a: {"q05-v1", "q05-v2", "q05-v3"}, b: {"q05-v1", "q05-v2"}, c: {"q05-v1"}}
    assert {k for k, v in y.items() if not v} == {("q05-v2", b)}
    # both judges agree on every label of the pair, and nobody adjudicated it
    units_of_pair = [k for k in labels() if k[0] == model and k[1].startswith("q05-")]
    assert len(units_of_pair) == 9 and all(len(set(labels()[k].values())) == 1 for k in units_of_pair)
    assert not [x for x in bundle()["adjudications.jsonl"] if (x.model, x.instruction[:3]) == PAIR]
    # the independent computation of docs/metrics.md#worked-example
    units = eligible_units(V)
    assert {frozenset(S) for _, S in units} == {frozenset(S) for S in [(a,), (b,), (a, b), (a, c), (b, c), (a, b, c)]}
    J = {S: all(y[(i, t)] for t in S for i in V[t]) for _, S in units}
    R = [sum(J[S] for k, S in units if k == K) / sum(1 for k, _ in units if k == K) for K in (1, 2, 3)]
    assert R == [1 / 2, 1 / 3, 0]
    assert round(100 * sum(R) / 3, 2) == 27.78
    variants = [i for i in instructions("main").values() if i.question == question]
    allpass = [all(set(labels()[(model, i.key, c.position)].values()) == {1} for c in i.constraints) for i in variants]
    assert round(100 * sum(allpass) / len(allpass), 2) == 66.67


def test_worked_example_through_the_scoring_engine():
    reform = pytest.importorskip("reform_core.metrics.reform")
    model, question = PAIR
    qmeta = {q.key: q for q in bundle()["questions.jsonl"]}
    rows = []
    for i in instructions("main").values():
        if i.question != question:
            continue
        for c in i.constraints:
            lab = labels()[(model, i.key, c.position)]
            rows.append(
                {
                    "model": model,
                    "question": question,
                    "instruction": i.key,
                    "condition": i.condition,
                    "task_type": qmeta[question].task_type,
                    "feature": c.feature,
                    "mode": c.mode,
                    "p": float(lab[A] == lab[B] == 1),
                }
            )
    baseline = pd.DataFrame(
        [(m, q, f) for m, q, f in present() if (m, q) == PAIR], columns=["model", "question", "feature"]
    )
    inst = reform.mark_baseline_opposed(pd.DataFrame(rows), baseline)
    assert inst["baseline_opposed"].sum() == 6  # a ×3, b ×2, c ×1
    assert reform.emcr(inst, p="p")[model] == pytest.approx(100 * (1 / 2 + 1 / 3) / 3)
    assert reform.tcpr(inst, p="p")[model] == pytest.approx(200 / 3)

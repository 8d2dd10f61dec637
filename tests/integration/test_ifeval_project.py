"""IFEval as a first-class benchmark (issue 14, point 3): the catalog's texts and verifiers.

Defects pinned (each test fails on the code before issue 14):
* ``import-ifeval`` stored the bare instruction id as the constraint text with empty
  acceptance criteria, so LLM judges and annotators never saw "at least 300 words" or the
  forbidden words; ``(forbid) punctuation:no_comma`` read as a double negative;
* the rules judge abstained on every IFEval pair ("no rule verifier for feature
  'punctuation:no_comma'") although the ``ifeval:*`` verifiers exist; no strict/loose.

Data: the vendored IFEval copy in ``tests/data/ifeval`` (Apache-2.0, see its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from reform_core import ifeval_eval
from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.data.reading import ImportFailed
from reform_core.services.judging.judging import prompt_for_display, run_judge
from reform_core.services.platform.uow import get_engine

DATA = Path(__file__).resolve().parents[1] / "data" / "ifeval"
INPUT = DATA / "input_data.jsonl"
RESPONSES = DATA / "input_response_data_gpt4_20231107_145030.jsonl"


@pytest.fixture(scope="module")
def ifeval_db(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('ifeval') / 'ifeval.db'}"
    eng = get_engine(url)
    import_ifeval(eng, input_path=INPUT, responses={"gpt4": RESPONSES})
    return eng


def _constraints(eng, key: str) -> list[tuple]:
    with eng.connect() as conn:
        return conn.execute(
            text(
                "SELECT c.feature, c.mode, c.text, c.acceptance FROM constraint_item c JOIN instruction i "
                "ON i.id = c.instruction_id WHERE i.key = :k ORDER BY c.position"
            ),
            {"k": f"ifeval-{key}"},
        ).all()


def test_constraint_texts_name_their_parameters(ifeval_db):
    # key 1000: no comma, 3 highlighted sections, at least 300 words
    rows = _constraints(ifeval_db, "1000")
    assert [r[0] for r in rows] == [
        "punctuation:no_comma",
        "detectable_format:number_highlighted_sections",
        "length_constraints:number_words",
    ]
    assert rows[2][2] == "Answer with at least 300 words." and rows[2][3] == "The word count is at least 300."
    assert "Highlight at least 3 sections" in rows[1][2]
    # a natural mode: every IFEval instruction is a requirement ("require: refrain from commas")
    assert {r[1] for r in rows} == {"require"}
    assert rows[0][2] == "In your entire response, refrain from the use of any commas."
    # no constraint anywhere is a bare instruction id or lacks acceptance criteria
    with ifeval_db.connect() as conn:
        bad = conn.execute(
            text("SELECT COUNT(*) FROM constraint_item WHERE text = feature OR acceptance = ''")
        ).scalar()
        forbidden = conn.execute(
            text("SELECT c.text, c.params FROM constraint_item c WHERE c.feature = 'keywords:forbidden_words'")
        ).all()
    assert bad == 0
    for t, params in forbidden:
        words = (json.loads(params) if isinstance(params, str) else params)["forbidden_words"]
        assert all(w in t for w in words), (t, words)


def test_the_judge_prompt_shows_the_numbers(ifeval_db):
    """What an LLM judge receives for key 1000 (docs/metrics.md#what-a-judge-sees: constraints with
    acceptance criteria)."""
    with ifeval_db.connect() as conn:
        rid = conn.execute(
            text(
                "SELECT r.id FROM response r JOIN instruction i ON i.id = r.instruction_id WHERE i.key = 'ifeval-1000'"
            )
        ).scalar()
    prompt = prompt_for_display(ifeval_db, response_id=rid)["text"]
    assert "(require) Answer with at least 300 words." in prompt
    assert "Acceptance criteria: The word count is at least 300." in prompt
    assert "punctuation:no_comma" not in prompt and "(forbid)" not in prompt


def test_kwargs_are_checked_with_located_errors(tmp_path, sqlite_url):
    bad = {
        "key": 7,
        "prompt": "Write.",
        "instruction_id_list": ["length_constraints:number_words", "keywords:existence"],
        "kwargs": [{"num_words": "300", "relation": "at least"}, {"keyword": ["x"]}],
    }
    inp, resp = tmp_path / "in.jsonl", tmp_path / "r.jsonl"
    inp.write_text(json.dumps(bad) + "\n")
    resp.write_text(json.dumps({"prompt": "Write.", "response": "ok"}) + "\n")
    eng = get_engine(sqlite_url)
    with pytest.raises(ImportFailed) as exc:
        import_ifeval(eng, input_path=inp, responses={"m": resp})
    errors = exc.value.errors
    assert any(
        e.startswith("in.jsonl:1: kwargs: length_constraints:number_words: num_words must be of type int")
        for e in errors
    ), errors
    assert any(e.startswith("in.jsonl:1: kwargs: keywords:existence: unexpected kwargs ['keyword']") for e in errors), (
        errors
    )
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM question")).scalar() == 0


@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_rules_judge_runs_the_ifeval_verifiers(ifeval_db, mode):
    """Every IFEval pair gets a label, equal to ``verify-ifeval``'s verdict in that mode."""
    out = run_judge(ifeval_db, provider="rules", mode=mode, name=f"rules-{mode}")
    assert out["abstentions"] == 0 and out["errors"] == 0 and out["labels"] == 832
    run = ifeval_eval.evaluate(ifeval_eval.read_inputs(INPUT), ifeval_eval.read_responses(RESPONSES), mode=mode)
    expected = run.verdicts.assign(position=run.verdicts.groupby("key").cumcount() + 1)
    expected = {
        (f"ifeval-{k}", int(p)): int(v) for k, p, v in zip(expected["key"], expected["position"], expected["passed"])
    }
    with ifeval_db.connect() as conn:
        got = {
            (r[0], int(r[1])): r[2]
            for r in conn.execute(
                text(
                    "SELECT i.key, c.position, g.label FROM judgment g JOIN judge j ON j.id = g.judge_id "
                    "JOIN constraint_item c ON c.id = g.constraint_id JOIN instruction i ON i.id = c.instruction_id "
                    "WHERE j.name = :n"
                ),
                {"n": f"rules-{mode}"},
            )
        }
        config = json.loads(
            conn.execute(text("SELECT config FROM judge WHERE name = :n"), {"n": f"rules-{mode}"}).scalar()
        )
    assert got == expected
    assert config["mode"] == mode
    with pytest.raises(ValueError, match="exists with provider='rules', model='verifiers"):
        run_judge(ifeval_db, provider="rules", mode="loose" if mode == "strict" else "strict", name=f"rules-{mode}")

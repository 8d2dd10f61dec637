"""From a handful of questions to a scored, adjudicated, exported project — on loopback
fake OpenAI / Gemini servers, no network: collect baselines → extract features → build
variants (LLM integration) → collect main / single / prompted responses → two LLM judges →
plan → adjudicate → score → export."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from reform_core.cli import app
from reform_core.services.accounts.users import local_principal
from reform_core.services.adjudication import adjudication
from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.judging import collection, judging
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project import export
from reform_core.services.project import setup as data
from reform_core.services.scoring import scoring
from reform_core.services.studies import construction
from tests.integration.fake_servers import FakeServer, _find_ids, _prompt_text

KEY = "sk-test-construction"


class ChatServer(FakeServer):
    """Answers judge requests as the base fake does, everything else as a chat model."""

    def _verdicts(self, body, fault=""):
        if _find_ids(body):
            return super()._verdicts(body, fault)
        prompt = _prompt_text(body)
        if "You write benchmark instructions" in prompt:
            question = prompt.split("Question:\n", 1)[1].split("\n\nFormatting requirements", 1)[0]
            return json.dumps({"instruction": f"{question} (integrated, three formatting requirements)"})
        if "You annotate the formatting" in prompt:
            return json.dumps(
                {
                    "features": [
                        {
                            "name": "Bullet list",
                            "description": "dash items",
                            "mapping": "exact",
                            "catalog_features": [],
                        },
                        {
                            "name": "Inline code spans",
                            "description": "`x`",
                            "mapping": "uncovered",
                            "catalog_features": [],
                        },
                        {"name": "Upbeat tone", "description": "tone", "mapping": "not_format", "catalog_features": []},
                    ]
                }
            )
        if "contents" in body:  # the Gemini-served model writes prose
            return "Tides rise and fall twice a day because the Moon pulls on the oceans."
        return "## Answer\n\n- The Moon pulls the water.\n- The Earth turns under the bulge."


@pytest.fixture()
def servers():
    a = ChatServer().start()
    b = ChatServer(labeler=lambda ids, prompt: {i: int(i != "c2") for i in ids}).start()
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture()
def engine(tmp_path):
    eng = get_engine(f"sqlite:///{tmp_path / 'e2e.db'}")
    yield eng
    dispose_engines()


def test_questions_to_exported_scores(engine, servers, tmp_path):
    a, b = servers
    data.init_project(engine)
    qs = pd.DataFrame(
        {
            "key": ["q1", "q2", "q3"],
            "task_type": "explain",
            "text": ["Why are there tides?", "How do vaccines work?", "What causes seasons?"],
        }
    )
    import_bundle_obj(engine, frames_bundle({"questions": qs}))

    settings = collection.GenerationSettings(temperature=0.0, max_tokens=256)
    for model, provider in (("alpha", "openai"), ("beta", "gemini")):
        out = collection.collect(
            engine,
            model=model,
            provider=provider,
            conditions=["baseline"],
            settings=settings,
            base_url=f"{a.url}/v1" if provider == "openai" else a.url,
            api_key=KEY,
        )
        assert out["written"] == 3 and out["errors"] == 0

    ext = construction.extract_features(
        engine, provider="openai", model="extractor", base_url=f"{a.url}/v1", api_key=KEY, open_ended=True
    )
    assert ext["annotation"]["rule"] > 0
    pooled = {r["model"]: r for r in ext["coverage"]}["Pooled"]
    assert pooled["valid"] == 12 and pooled["coverage"] == pytest.approx(50.0)  # bullets covered, code spans not
    # the extractions stay in the project: analyses (and the Scores page) show the same Table A4 (issue 17)
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.scoring.analyses import analyses as run_analyses

    assert ext["stored"] == ext["extracted"]
    a4 = run_analyses(engine, cli_principal(engine), n_boot=5).tables["table_a4_coverage"].set_index("model")
    assert a4.loc["Pooled", "valid"] == 12 and a4.loc["Pooled", "coverage"] == pytest.approx(50.0)

    built = construction.build_variants(
        engine,
        per_question=4,
        seed=1,
        single=True,
        prompted=True,
        integrate={"provider": "openai", "model": "writer", "base_url": f"{a.url}/v1", "api_key": KEY},
    )
    assert built["integrated"] == 12 and built["integration_errors"] == 0
    assert built["instructions"] == 12 + 36 + 12

    est = collection.estimate(engine, model="alpha", conditions=["main", "single", "prompted"], settings=settings)
    assert est["calls"] == 60 and est["max_output_tokens"] == 60 * 256
    for model, provider in (("alpha", "openai"), ("beta", "gemini")):
        out = collection.collect(
            engine,
            model=model,
            provider=provider,
            conditions=["main", "single", "prompted"],
            settings=settings,
            base_url=f"{a.url}/v1" if provider == "openai" else a.url,
            api_key=KEY,
            concurrency=4,
        )
        assert out["written"] == 60 and out["truncated"] == 0
    # resume: nothing left to ask
    assert collection.pending_items(engine, model="alpha", conditions=["baseline", "main", "single", "prompted"]) == []
    prompted = [c for c in a.calls if "Before answering, follow these steps" in _prompt_text(c["body"])]
    assert len(prompted) == 24  # 12 prompted instructions x 2 models
    assert all(c["body"].get("temperature", 0) == 0 for c in a.calls if c["path"] == "/v1/chat/completions")

    for name, srv in (("judge-a", a), ("judge-b", b)):
        res = judging.run_judge(
            engine, provider="openai", model="gpt-fake", name=name, base_url=f"{srv.url}/v1", api_key=KEY
        )
        assert res["errors"] == 0 and res["written"] == 2 * (12 * 3 + 36 + 12 * 3)

    lead = local_principal(engine)
    plan = adjudication.create_plan(engine, lead, judge_a="judge-a", judge_b="judge-b", seed=3)
    assert plan.tasks > 0
    decided = 0
    while (item := adjudication.claim_next(engine, lead, plan.plan_id)) is not None:
        shown = "A" if item.judge_a.label == 1 else "B"  # the better-supported judgment: pass
        adjudication.decide(engine, lead, item.task_id, shown, seconds=1.0)
        decided += 1
    assert decided == plan.tasks

    ranking = construction.screen_variants(engine, keep=5, judges=("judge-a", "judge-b"))
    assert len(ranking) == 12 and ranking["kept"].sum() == 5 and ranking["n_models"].eq(2).all()
    assert ranking["score"].is_monotonic_increasing

    result = scoring.score(engine, lead, judges=("judge-a", "judge-b"))
    js = scoring.score_json(result)
    assert set(js["models"]) == {"alpha", "beta"} and not js["provisional"]
    for m in js["models"].values():
        assert 0 <= m["tcpr"] <= 100
        assert m["emcr"] is None or 0 <= m["emcr"] <= 100

    manifest = export.export(engine, tmp_path / "export", principal=lead, n_boot=20)
    inst = pd.read_csv(tmp_path / "export" / "instances.csv")
    assert {"label_judge-a", "label_judge-b", "baseline_opposed", "p"} <= set(inst.columns)
    assert set(inst["condition"]) == {"main", "single", "prompted"}
    assert manifest


class TruncatingServer(ChatServer):
    @staticmethod
    def _openai_body(model, text):
        body = FakeServer._openai_body(model, text)
        body["choices"][0]["finish_reason"] = "length"
        return body


def test_collection_records_settings_truncation_retries_and_resumes(engine):
    srv = TruncatingServer().start()
    try:
        data.init_project(engine)
        qs = pd.DataFrame({"key": ["q1", "q2", "q3"], "text": ["A?", "B?", "C?"]})
        import_bundle_obj(engine, frames_bundle({"questions": qs}))
        srv.push("429", "400")  # first call retried, second fails for good (4xx)
        settings = collection.GenerationSettings(temperature=0.3, max_tokens=64, reasoning_effort="low")
        retry = collection.RetryPolicy(max_attempts=3, base_delay=0.0)
        out = collection.collect(
            engine,
            model="m",
            provider="openai",
            base_url=f"{srv.url}/v1",
            api_key=KEY,
            settings=settings,
            retry=retry,
            concurrency=1,
        )
        assert (out["written"], out["errors"], out["truncated"]) == (2, 1, 2)
        assert "HTTP 400" in out["first_error"] and KEY not in out["first_error"]
        out = collection.collect(
            engine, model="m", provider="openai", base_url=f"{srv.url}/v1", api_key=KEY, settings=settings, retry=retry
        )
        assert (out["pending"], out["written"]) == (1, 1)
        body = srv.calls[-1]["body"]
        assert body["temperature"] == 0.3 and body["max_tokens"] == 64 and body["reasoning_effort"] == "low"
        with engine.connect() as conn:
            from db.repo.data import read_frame

            meta = read_frame(conn, "response", ["meta"])["meta"]
        meta = [m if isinstance(m, dict) else json.loads(m) for m in meta]
        assert all(m["truncated"] and m["finish_reason"] == "length" for m in meta)
        assert meta[0]["settings"] == {"temperature": 0.3, "max_tokens": 64, "reasoning_effort": "low"}
    finally:
        srv.stop()


def test_cli_generators_and_estimate(tmp_path):
    runner = CliRunner()
    out = tmp_path / "mosaic.jsonl"
    r = runner.invoke(app, ["mosaic-generate", "--out", str(out), "--n", "420", "--seed", "2", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["prompts"] == 420 and len(out.read_text().splitlines()) == 420
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("Name the largest planet.\nSay what a cell is.\n", encoding="utf-8")
    r = runner.invoke(
        app,
        [
            "wise-generate",
            "--tasks",
            str(tasks),
            "--out",
            str(tmp_path / "wise"),
            "--panel",
            "constructional_control",
            "--repetitions",
            "2",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["items"] == 2 * 4 * 2
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    r = runner.invoke(app, ["collect", "--db", db, "--model", "m", "--condition", "nope", "--estimate"])
    assert r.exit_code != 0 and "conditions" in r.output
    dispose_engines()

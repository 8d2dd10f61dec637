"""The real OpenAI and Gemini SDKs against loopback fake servers, through the service:
success, 429 + Retry-After, 500, timeout, malformed JSON (repair), wrong constraint ids,
4xx, and batch mode with failed lines."""

import json
import time

import pytest
from fake_servers import seed_project
from sqlalchemy import text

from reform_core.judges.prompt import PROMPT_VERSION
from reform_core.judges.retry import RetryPolicy
from reform_core.services.judging import judging as svc
from reform_core.services.platform.uow import get_engine

FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)
MODELS = {"openai": "gpt-4o-mini", "gemini": "gemini-2.5-flash"}


@pytest.fixture
def engine(tmp_path):
    e = get_engine(f"sqlite:///{tmp_path}/t.db")
    yield e
    e.dispose()


def _base(server, provider):
    return server.url + "/v1" if provider == "openai" else server.url


def _run(engine, server, provider, **kw):
    kw.setdefault("retry", FAST)
    return svc.run_judge(
        engine,
        provider=provider,
        model=MODELS[provider],
        name=provider,
        base_url=_base(server, provider),
        api_key="sk-test-key",
        **kw,
    )


def _rows(engine):
    with engine.connect() as c:
        return [
            dict(r._mapping)
            for r in c.execute(
                text(
                    "select response_id, constraint_id, label, status, error, rationale, input_tokens, output_tokens,"
                    " cost_usd, prompt_version from judgment order by response_id, constraint_id"
                )
            )
        ]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_success_request_shape_and_accounting(engine, server, provider):
    seed_project(engine, responses=3)
    out = _run(engine, server, provider, concurrency=2)
    assert (out["calls"], out["written"], out["errors"], out["requests"]) == (3, 9, 0, 3)
    rows = _rows(engine)
    assert len(rows) == 9 and all(r["status"] == "ok" and r["label"] == 1 for r in rows)
    assert all(r["prompt_version"] == PROMPT_VERSION for r in rows)
    # 100 prompt + 20 output tokens per call (fake server usage), split over 3 rows
    assert sum(r["input_tokens"] for r in rows) == 300 and sum(r["output_tokens"] for r in rows) == 60
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(out["cost_usd"]) and out["cost_usd"] > 0
    body = server.calls[0]["body"]
    headers = {k.lower(): v for k, v in server.calls[0]["headers"].items()}
    dumped = json.dumps(body)
    assert "secret-model-name-XYZ" not in dumped and "acme" not in dumped  # never the evaluated model
    assert "Constraint 1." in dumped and "criteria 2" in dumped
    if provider == "openai":
        assert server.calls[0]["path"] == "/v1/chat/completions"
        assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
        assert headers["authorization"] == "Bearer sk-test-key"
    else:
        assert server.calls[0]["path"] == f"/v1beta/models/{MODELS[provider]}:generateContent"
        gc = body["generationConfig"]
        assert gc["temperature"] == 0 and gc["responseMimeType"] == "application/json"
        assert gc["responseJsonSchema"]["properties"]["verdicts"]
        assert headers["x-goog-api-key"] == "sk-test-key"
    # a rerun finds nothing to do
    assert _run(engine, server, provider)["calls"] == 0 and len(server.calls) == 3


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_429_honours_retry_after(engine, server, provider):
    seed_project(engine, responses=1)
    server.push("429:1")
    t0 = time.monotonic()
    out = _run(engine, server, provider)
    assert time.monotonic() - t0 >= 1.0  # waited for Retry-After, not the 10 ms backoff
    assert out["errors"] == 0 and out["requests"] == 2 and len(server.calls) == 2


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_500_and_timeout_are_retried(engine, server, provider):
    seed_project(engine, responses=1)
    server.push("500", "sleep:2")
    out = _run(engine, server, provider, timeout=0.5)
    assert out["errors"] == 0 and out["requests"] == 3
    assert all(r["status"] == "ok" for r in _rows(engine))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_retries_exhausted_and_4xx_become_error_judgments(engine, server, provider):
    seed_project(engine, responses=2)
    server.push("503", "503", "503", "503", "400")
    out = _run(engine, server, provider, concurrency=1)
    assert out["errors"] == 6 and out["written"] == 6 and out["requests"] == 5  # 4 tries + one 400
    rows = _rows(engine)
    assert all(r["status"] == "error" and r["label"] is None for r in rows)
    assert any("HTTP 503" in r["error"] for r in rows) and any("HTTP 400" in r["error"] for r in rows)
    # errors are pending again: the rerun judges them and overwrites the error rows
    out = _run(engine, server, provider)
    assert out["calls"] == 2 and out["errors"] == 0
    assert [r["status"] for r in _rows(engine)] == ["ok"] * 6


@pytest.mark.parametrize("provider", ["openai", "gemini"])
@pytest.mark.parametrize("fault", ["malformed", "wrong_ids", "nonbinary"])
def test_bad_answer_gets_one_repair(engine, server, provider, fault):
    seed_project(engine, responses=1)
    server.push(fault)  # first answer bad, the repair answer good
    out = _run(engine, server, provider)
    assert out["errors"] == 0 and out["requests"] == 2
    repair = server.calls[1]["body"]
    assert "could not be used" in json.dumps(repair)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
@pytest.mark.parametrize(
    "fault, message",
    [("malformed", "malformed JSON"), ("wrong_ids", "unknown id 'c99'"), ("nonbinary", "integer 0 or 1")],
)
def test_bad_answer_twice_is_an_error_not_a_fail(engine, server, provider, fault, message):
    seed_project(engine, responses=1)
    server.push(fault, fault)
    out = _run(engine, server, provider)
    assert out["errors"] == 3 and out["requests"] == 2
    rows = _rows(engine)
    assert all(r["status"] == "error" and r["label"] is None and message in r["error"] for r in rows)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_batch_with_failed_lines(engine, server, provider):
    seed_project(engine, responses=9)
    server.batch_fail_every = 4  # lines 4 and 8 fail
    kw = dict(base_url=_base(server, provider), api_key="sk-test-key")
    sub = svc.submit_batch(engine, provider=provider, model=MODELS[provider], name="b", **kw)
    assert sub["items"] == 9 and sub["batch_id"]
    # a second submit does not resend items of the open batch
    assert svc.submit_batch(engine, provider=provider, model=MODELS[provider], name="b", **kw)["items"] == 0
    first = svc.poll_batches(engine, name="b", ingest=True, **kw)
    assert first["batches"][0]["done"] is False and first["written"] == 0
    done = svc.poll_batches(engine, name="b", ingest=True, **kw)
    assert done["batches"][0]["done"] and done["written"] == 27 and done["errors"] == 6
    rows = _rows(engine)
    assert sum(r["status"] == "ok" for r in rows) == 21 and sum(r["status"] == "error" for r in rows) == 6
    assert all(r["label"] is None for r in rows if r["status"] == "error")
    assert sum(r["input_tokens"] for r in rows if r["status"] == "ok") == 700
    # ingest is idempotent: the batch is not read again
    assert svc.poll_batches(engine, name="b", ingest=True, **kw)["batches"] == []
    # failed lines are pending again; the next batch contains exactly them
    assert svc.submit_batch(engine, provider=provider, model=MODELS[provider], name="b", **kw)["items"] == 2
    server.batch_fail_every = 0
    svc.poll_batches(engine, name="b", ingest=True, **kw)
    svc.poll_batches(engine, name="b", ingest=True, **kw)
    assert [r["status"] for r in _rows(engine)] == ["ok"] * 27 and len(_rows(engine)) == 27

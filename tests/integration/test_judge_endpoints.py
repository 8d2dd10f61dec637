"""Configured judge endpoints (issue 15 item 1): a lead names the allowed provider
endpoints in ``REFORM_JUDGE_ENDPOINTS``; runs refer to them by name, each with the key
it is meant to receive; malformed configuration is refused."""

import json

import pytest
import typer
from fake_servers import seed_project
from pydantic import ValidationError
from typer.testing import CliRunner

from reform_core.commands import judging as judging_commands
from reform_core.config import Settings, get_settings, judge_endpoint, secret_values
from reform_core.services.judging import judging as svc
from reform_core.services.platform.uow import get_engine


@pytest.fixture
def endpoints(monkeypatch, server):
    monkeypatch.setenv(
        "REFORM_JUDGE_ENDPOINTS",
        json.dumps({"lab": {"provider": "openai", "base_url": server.url + "/v1", "key_env": "LAB_VLLM_KEY"}}),
    )
    monkeypatch.setenv("LAB_VLLM_KEY", "lab-key-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-go-to-the-lab")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_endpoint_runs_send_the_endpoints_own_key(tmp_path, server, endpoints):
    url = f"sqlite:///{tmp_path}/t.db"
    seed_project(get_engine(url), responses=2)
    app = typer.Typer()
    judging_commands.register(app)
    res = CliRunner().invoke(
        app,
        ["judge", "--db", url, "--provider", "openai", "--model", "m", "--name", "lab", "--endpoint", "lab", "--json"],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["labels"] == 6
    auth = {v for c in server.requests for k, v in c["headers"].items() if k.lower() == "authorization"}
    assert auth == {"Bearer lab-key-123"}
    assert "lab-key-123" in secret_values()  # redacted from every stored or printed message too
    res = CliRunner().invoke(app, ["judge", "--db", url, "--provider", "gemini", "--model", "m", "--endpoint", "lab"])
    assert res.exit_code == 1 and res.stderr.strip() == "error: endpoint: 'lab' is a openai endpoint, not gemini"
    res = CliRunner().invoke(app, ["judge", "--db", url, "--provider", "openai", "--model", "m", "--endpoint", "nope"])
    assert res.stderr.strip() == "error: endpoint: unknown judge endpoint 'nope' (known: lab)"
    res = CliRunner().invoke(
        app,
        ["judge", "--db", url, "--provider", "openai", "--model", "m", "--endpoint", "lab", "--base-url", server.url],
    )
    assert res.exit_code == 1 and "not both" in res.stderr
    assert svc.endpoint_choices("openai") == [svc.OFFICIAL, "lab"] and svc.endpoint_choices("gemini") == [svc.OFFICIAL]
    assert svc.endpoint_choices("rules") == []


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"x": {"provider": "openai", "base_url": "ftp://h/v1"}}, "base_url"),
        ({"x": {"provider": "openai", "base_url": "http://user:pw@h/v1"}}, "without credentials"),
        ({"x": {"provider": "openai", "base_url": "http://h/v1?key=1"}}, "base_url"),
        ({"x": {"provider": "claude", "base_url": "http://h/v1"}}, "provider"),
        ({"x": {"provider": "openai", "base_url": "http://h/v1", "key_env": "REFORM_DATABASE_URL"}}, "key_env"),
        ({"x y": {"provider": "openai", "base_url": "http://h/v1"}}, "endpoint names"),
        ({"x": {"provider": "openai", "base_url": "http://h/v1", "headers": {}}}, "headers"),
    ],
)
def test_malformed_endpoint_configuration_is_refused(monkeypatch, bad, message):
    monkeypatch.setenv("REFORM_JUDGE_ENDPOINTS", json.dumps(bad))
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_unknown_endpoint_without_configuration(monkeypatch):
    monkeypatch.delenv("REFORM_JUDGE_ENDPOINTS", raising=False)
    get_settings.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"none configured \(REFORM_JUDGE_ENDPOINTS\)"):
            judge_endpoint("lab")
    finally:
        get_settings.cache_clear()

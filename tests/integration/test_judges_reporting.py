"""Honest judge-run reports (issue 14 point 1, issue 15 item 16): labels, abstentions and
errors apart; a run whose every call failed exits non-zero with one ``error:`` line; a
judge holding only errors is marked as such."""

import json

import pytest
import typer
from fake_servers import seed_project
from sqlalchemy import text
from typer.testing import CliRunner

from reform_core.commands import judging as judging_commands
from reform_core.services.judging import judging as svc
from reform_core.services.platform.uow import get_engine
from reform_core.verifiers import base as verifiers
from reform_core.verifiers.base import CheckResult


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    e = get_engine(url)
    yield url, e
    e.dispose()


def _cli(*args, env=None):
    app = typer.Typer()
    judging_commands.register(app)
    return CliRunner().invoke(app, list(args), env=env)


@pytest.fixture
def feat1_rule(monkeypatch):
    """A rule verifier for the seed's feature ``feat1`` only (feat2/feat3 stay abstentions)."""
    verifiers._load_all()  # the product's verifiers first, so the restore leaves them alone
    monkeypatch.setitem(
        verifiers._REGISTRY, "feature:feat1", lambda text_: CheckResult("- item" in text_, evidence="dash list")
    )


def test_base_url_without_v1_exits_nonzero_with_one_error_line(db, server):
    """Pins issue 14: a base URL without ``/v1`` gave 404s that the CLI reported as
    "judgments written" with exit 0; now it exits 1 with one line naming the first error."""
    url, engine = db
    seed_project(engine, responses=3)
    res = _cli(
        "judge",
        "--db",
        url,
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--name",
        "nov1",
        "--base-url",
        server.url,
        "--json",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert res.exit_code == 1, res.output
    assert json.loads(res.stdout) == {"calls": 3, "written": 9, "errors": 9, "labels": 0, "abstentions": 0}
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: all 3 calls failed; first error: ")
    assert "404" in lines[0] and "sk-test" not in lines[0]
    # the text form says the same, without --json
    res = _cli(
        "judge",
        "--db",
        url,
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--name",
        "nov1",
        "--base-url",
        server.url,
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert res.exit_code == 1 and res.stdout.startswith("3 calls: 0 labels, 0 abstentions, 9 errors")
    # a partly failing run is not "all failed"
    server.push("400")
    res = _cli(
        "judge",
        "--db",
        url,
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--name",
        "nov1",
        "--base-url",
        server.url + "/v1",
        "--concurrency",
        "1",
        "--json",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"calls": 3, "written": 9, "errors": 3, "labels": 6, "abstentions": 0}


def test_report_separates_labels_abstentions_and_errors(db, feat1_rule):
    """Pins issue 15 item 16: "471 judgments written, 0 errors" when 278 were abstentions."""
    url, engine = db
    seed_project(engine, responses=4)
    res = _cli("judge", "--db", url, "--provider", "rules", "--name", "r", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # 4 responses x 3 constraints: feat1 has a rule verifier, feat2/feat3 do not
    assert out == {"calls": 4, "written": 12, "errors": 0, "labels": 4, "abstentions": 8}
    with engine.connect() as c:
        by_status = dict(c.execute(text("select status, count(*) from judgment group by status")).all())
    assert by_status == {"ok": 4, "abstain": 8}
    assert svc.judge_health(engine)["r"] == svc.JudgeHealth("r", 4, 8, 0)
    # an abstention-only run is not a failure, but it is not called "written" labels either
    with engine.begin() as c:
        c.execute(text("delete from judgment"))
    res = _cli("judge", "--db", url, "--provider", "rules", "--name", "r")
    assert res.exit_code == 0 and res.stdout.startswith("4 calls: 4 labels, 8 abstentions, 0 errors (12 judgment rows")


def test_judge_health_marks_a_judge_of_only_errors(any_db_url, server, feat1_rule):
    """Pins issue 14: a failed first run left a judge of 404 rows that became part of the
    default pair; ``judge_health`` says it is not scoreable. Counts use the newest row of
    each pair (as scoring does): an old ok row under another prompt version does not count."""
    engine = get_engine(any_db_url)
    seed_project(engine, responses=2)
    out = svc.run_judge(engine, provider="openai", model="m", name="broken", base_url=server.url, api_key="k")
    assert out["all_failed"] and "404" in out["first_error"] and out["labels"] == 0
    svc.run_judge(engine, provider="openai", model="m", name="good", base_url=server.url + "/v1", api_key="k")
    svc.run_judge(engine, provider="rules", name="rules")
    health = svc.judge_health(engine)
    assert list(health) == ["broken", "good", "rules"]
    assert (health["broken"].state, health["broken"].scoreable) == ("errors only", False)
    assert (health["good"].state, health["good"].scoreable, health["good"].labels) == ("ok", True, 6)
    assert health["rules"].abstentions == 6 - health["rules"].labels
    # an older prompt version's ok labels are superseded by the newer error rows
    with engine.begin() as c:
        c.execute(
            text(
                "update judgment set prompt_version = 'old', status = 'ok', label = 1, error = '' "
                "where judge_id = (select id from judge where name = 'good')"
            )
        )
        c.execute(
            text(
                "insert into judgment (judge_id, response_id, constraint_id, prompt_version, label, rationale,"
                " status, error, raw, input_tokens, output_tokens, cost_usd, created_at) "
                "select judge_id, response_id, constraint_id, 'new', null, '', 'error', 'HTTP 500', '', 0, 0, 0,"
                " created_at from judgment where judge_id = (select id from judge where name = 'good')"
            )
        )
    good = svc.judge_health(engine)["good"]
    assert (good.labels, good.errors, good.state) == (0, 6, "errors only")
    table = svc.judges_summary(engine)
    assert list(table.columns) == svc.SUMMARY_COLUMNS
    row = table.set_index("judge").loc["good"]
    assert (row["labels"], row["errors"], row["state"]) == (0, 6, "errors only")

"""Lazy CLI start-up (issue 16): `plan-size` and `--help` import neither numpy, pandas, scipy
nor SQLAlchemy; `status` on a current SQLite file reads it with the standard library's sqlite3
alone (on PostgreSQL, or a file that needs a schema upgrade, SQLAlchemy without pandas, scipy,
the ORM or the settings machinery) and prints the same counts, pair and plans as the engine
path. Timing is measured by bench/bench_cli.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[2]
# pydantic is not listed: typer 0.29 itself coerces parameters with it
HEAVY = ("numpy", "pandas", "scipy", "sqlalchemy", "sqlmodel", "pydantic_settings", "alembic", "rich")

PROBE = """
import json, sys, runpy
sys.argv = ["reform_core"] + {argv!r}
try:
    runpy.run_module("reform_core", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("\\n@@" + json.dumps({{"code": code, "mods": sorted(m.split(".")[0] for m in sys.modules)}}))
"""


def _probe(argv: list[str], env: dict | None = None) -> tuple[str, int, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    body, _, tail = out.stdout.rpartition("\n@@")
    info = json.loads(tail)
    return body, info["code"], set(info["mods"])


def test_plan_size_imports_nothing_heavy():
    body, code, mods = _probe(["plan-size", "--population", "1308"])
    assert (code, body.strip()) == (0, "588")
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


def test_help_imports_nothing_heavy():
    body, code, mods = _probe(["--help"])
    assert code == 0 and "plan-size" in body and "status" in body
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


def test_status_reads_a_current_sqlite_file_with_sqlite3_alone(tmp_path):
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import dispose_engines, get_engine
    from reform_core.services.scoring.scoring import set_pair

    url = f"sqlite:///{tmp_path / 'p.db'}"
    eng = get_engine(url)
    simulate_into(eng, seed=3, scale="small", adjudicate=5)
    lead = cli_principal(eng)
    set_pair(eng, lead, "judge_b", "judge_a")
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=1, name="p1")
    dispose_engines()
    body, code, mods = _probe(["status", "--json"], env={"REFORM_DATABASE_URL": url})
    assert code == 0
    out = json.loads(body)
    assert out["pair"] == ["judge_b", "judge_a"]
    assert out["plans"] == [
        {"name": "simulated-oracle", "judge_a": "judge_a", "judge_b": "judge_b", "tasks": 15, "done": 15},
        {"name": "p1", "judge_a": "judge_a", "judge_b": "judge_b", "tasks": plan.tasks, "done": 0},
    ]
    assert out["questions"] == 30 and out["instructions"] == 120 and out["models"] == 3
    assert out["adjudications"] == 15 and out["disagreements"] > 0
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    from reform_core.services.data.status import status

    assert out == status(get_engine(url)), "the sqlite3 reading equals the engine's"
    dispose_engines()
    import sqlite3

    from db.repo.status import DISAGREEMENTS_SQL

    with sqlite3.connect(tmp_path / "p.db") as conn:  # the count reads the covering index, not the rows
        assert "COVERING INDEX ix_judgment_response_constraint_label" in str(
            conn.execute("EXPLAIN QUERY PLAN " + DISAGREEMENTS_SQL).fetchall()
        )

    # a file whose schema is older than the code's: status upgrades it through the engine
    from db.engine import SCHEMA_HEAD, make_engine, upgrade

    old = tmp_path / "old.db"
    e = make_engine(f"sqlite:///{old}")
    upgrade(e, "0006_auth_sessions")
    e.dispose()
    body, code, mods = _probe(["status", "--json", "--db", f"sqlite:///{old}"])
    assert code == 0 and json.loads(body)["questions"] == 0 and json.loads(body)["plans"] == []
    assert "sqlalchemy" in mods and "alembic" in mods  # the upgrade ran
    assert not mods & {"numpy", "pandas", "scipy", "pydantic_settings"}, mods
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == SCHEMA_HEAD


def test_status_of_a_postgresql_project_uses_sqlalchemy_only(postgres_url):
    pg_url = postgres_url
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import dispose_engines, get_engine

    simulate_into(get_engine(pg_url), seed=3, scale="small", adjudicate=5)
    dispose_engines()
    body, code, mods = _probe(["status", "--json", "--db", pg_url])
    assert code == 0 and json.loads(body)["questions"] == 30
    assert "sqlalchemy" in mods
    assert not mods & {"numpy", "pandas", "scipy", "sqlmodel", "pydantic_settings"}, mods


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "default"),
        ({"REFORM_DATABASE_URL": "sqlite:///x.db"}, "sqlite:///x.db"),
        ({"reform_database_url": "sqlite:///lower.db"}, "sqlite:///lower.db"),  # the settings match without case
    ],
)
def test_cli_default_database_is_the_settings_one(monkeypatch, env, expected):
    from reform_core.commands.common import db_url
    from reform_core.config import Settings

    for k in list(os.environ):
        if k.upper() == "REFORM_DATABASE_URL":
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert db_url(None) == Settings().database_url
    if expected != "default":
        assert db_url(None) == expected
    assert db_url("sqlite:///given.db") == "sqlite:///given.db"


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99, 0.999])
def test_normal_quantile_matches_scipy(confidence):
    from statistics import NormalDist

    from reform_core.sample_size import cochran_size

    q = (1 + confidence) / 2
    assert NormalDist().inv_cdf(q) == pytest.approx(float(norm.ppf(q)), abs=1e-12)
    for n in (1, 50, 1308, 10**6):
        z = float(norm.ppf(q))
        n0 = z * z * 0.25 / 0.03**2
        import math

        assert cochran_size(n, confidence=confidence) == min(max(math.ceil(n0 / (1 + (n0 - 1) / n) - 1e-9), 1), n)

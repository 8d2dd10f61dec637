"""Shared fixtures: temporary SQLite and PostgreSQL databases.

PostgreSQL tests read the server URL from ``REFORM_TEST_POSTGRES_URL`` (``.ci/run`` sets
it to the CI machine's server). Locally without it they skip; in CI (``CI=true``) a
missing URL is a failure, so the PostgreSQL path can never be silently skipped there.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.tracked_files import pytest_sessionfinish, pytest_sessionstart  # noqa: F401 (hooks)

PG_ENV = "REFORM_TEST_POSTGRES_URL"
# a page's unexpected error fails its test as an exception (the app shows a short message with an
# error id instead: pages/components/errors.py; tests/app/test_page_errors.py turns this off)
os.environ.setdefault("REFORM_RAISE_PAGE_ERRORS", "true")


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'reform.db'}"


def _pg_admin_url() -> str | None:
    url = os.environ.get(PG_ENV)
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{PG_ENV} is not set in CI: the PostgreSQL tests must run there")
        pytest.skip(f"{PG_ENV} not set (PostgreSQL tests skipped locally)")
    return url


@pytest.fixture
def postgres_url():
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    admin = _pg_admin_url()
    u = make_url(admin.replace("postgresql+psycopg://", "postgresql://"))
    name = f"reform_t_{uuid.uuid4().hex[:12]}"
    conninfo = u.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = u.set(drivername="postgresql+psycopg", database=name).render_as_string(hide_password=False)
    yield url
    from reform_core.services.platform.uow import dispose_engines

    dispose_engines()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def any_db_url(request, tmp_path):
    """Run a test on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'reform.db'}"
    return request.getfixturevalue("postgres_url")

"""Issue 37 item 1: with ``REFORM_AUTH_MODE=oidc`` the app checks its ``[auth]`` section and
the provider's metadata first, and refuses every page with one line (no traceback, no
"Log in" button that would fail) until both are usable."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import _reset_caches

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def oidc_app(tmp_path, monkeypatch):
    monkeypatch.setenv("REFORM_DATABASE_URL", f"sqlite:///{tmp_path / 'sso.db'}")
    monkeypatch.setenv("REFORM_LOAD_DEMO", "false")
    monkeypatch.setenv("REFORM_AUTH_MODE", "oidc")
    _reset_caches()
    yield
    _reset_caches()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing answers there


AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "s" * 40,
    "client_id": "reform",
    "client_secret": "client-secret-never-shown",
    "expose_tokens": ["access"],
}


@pytest.mark.parametrize(
    "auth, expected",
    [
        ({k: v for k, v in AUTH.items() if k != "client_secret"}, "lacks client_secret, server_metadata_url"),
        (
            {**AUTH, "server_metadata_url": "http://127.0.0.1:{port}/.well-known/openid-configuration"},
            "cannot read the provider's metadata at http://127.0.0.1:{port}/",
        ),
    ],
)
def test_an_unusable_configuration_refuses_every_page_with_one_line(oidc_app, auth, expected):
    port = _closed_port()
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = {k: v.replace("{port}", str(port)) if isinstance(v, str) else v for k, v in auth.items()}
    at.run()
    assert not at.exception
    assert [e.value.startswith("Single sign-on cannot start: ") for e in at.error] == [True]
    shown = at.error[0].value.replace("\\", "").replace("\u2060", "")  # md(): escapes, no autolinks
    assert expected.replace("{port}", str(port)) in shown and "client-secret-never-shown" not in shown
    assert not at.button and not at.title and not at.sidebar.button  # nothing else: no "Log in", no page
    at.switch_page("pages/users.py").run()
    assert not at.exception and len(at.error) == 1 and not at.title

"""A real OpenID Connect provider on loopback for the single sign-on browser tests, and
``streamlit run app.py`` in ``REFORM_AUTH_MODE=oidc`` signing in through it.

The provider is the certified ``oidc-provider`` npm package (pinned by
``tests/e2e/oidc/package-lock.json``), run by ``tests/e2e/oidc/provider.mjs``. It is installed
outside the repository, in ``$REFORM_TEST_OIDC_DIR`` (default
``~/.cache/reform-test/oidc-provider``): by ``.ci/run``, or here on first use when ``npm`` is on
PATH. Locally a provider that cannot be installed skips the tests; in CI (``CI=true``) it
fails them, and a provider that is installed but does not start always fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.harness import free_port, streamlit_app

PACKAGE_DIR = Path(__file__).resolve().parent / "oidc"
CLIENT_ID = "reform-e2e"
CLIENT_SECRET = "e2e-client-secret-not-a-real-one"
COOKIE_SECRET = "e2e-cookie-secret-0123456789abcdefghijkl"


def oidc_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reform-test" / "oidc-provider"
    return Path(os.environ.get("REFORM_TEST_OIDC_DIR") or default)


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"single sign-on browser tests cannot run in CI: {why}")
    pytest.skip(why)


def _installed(target: Path) -> bool:
    """Whether ``target`` holds the locked install (its lock file equals the repository's)."""
    lock = target / "package-lock.json"
    return (
        (target / "node_modules" / "oidc-provider" / "package.json").exists()
        and lock.exists()
        and lock.read_bytes() == (PACKAGE_DIR / "package-lock.json").read_bytes()
    )


def require_oidc_provider() -> Path:
    """The directory holding the installed provider (installing it with ``npm ci`` if needed)."""
    if shutil.which("node") is None:
        _unavailable("node is not installed (apt-get install -y nodejs npm)")
    target = oidc_dir()
    if not _installed(target):
        if shutil.which("npm") is None:
            _unavailable(f"the OIDC test provider is not installed in {target} and npm is missing")
        target.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(PACKAGE_DIR / name, target / name)
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=target,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not _installed(target):
            _unavailable(f"npm ci of the OIDC test provider failed in {target}: {done.stderr.strip()[-500:]}")
    shutil.copyfile(PACKAGE_DIR / "provider.mjs", target / "provider.mjs")  # resolves oidc-provider from there
    return target


class Provider:
    """A running provider: its issuer, and the identities it signs in (login name = subject)."""

    def __init__(self, issuer: str, accounts_file: Path):
        self.issuer, self.accounts_file = issuer, accounts_file

    def set_accounts(self, accounts: dict[str, dict]) -> None:
        tmp = self.accounts_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(accounts), encoding="utf-8")
        tmp.replace(self.accounts_file)  # read at every claims request: never half-written


@contextmanager
def oidc_provider(tmp: Path, redirect_uri: str, *, claims_in_id_token: bool = False) -> Iterator[Provider]:
    """Start the provider on a free loopback port; fail (never skip) when it does not start."""
    target = require_oidc_provider()
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    provider = Provider(issuer, tmp / f"accounts-{port}.json")
    provider.set_accounts({})
    cfg = {
        "port": port,
        "issuer": issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uri": redirect_uri,
        "accounts_file": str(provider.accounts_file),
        "claims_in_id_token": claims_in_id_token,
    }
    log = tmp / f"provider-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["node", str(target / "provider.mjs"), json.dumps(cfg)], cwd=target, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        while "ready " not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the OIDC test provider did not start: {log.read_text()[-1500:]}")
            time.sleep(0.1)
        yield provider
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def secrets_toml(redirect_uri: str, issuer: str) -> str:
    """The ``[auth]`` section the tests use: docs/operations.md's generic snippet, pointed here."""
    from tests.sso_docs import filled

    return filled(
        "generic",
        **{
            "https://REFORM_HOST/oauth2callback": redirect_uri,
            "https://IDP_HOST": issuer,
            "AT-LEAST-32-RANDOM-CHARACTERS-SAME-ON-EVERY-PROCESS": COOKIE_SECRET,
            "CLIENT_ID": CLIENT_ID,
            "CLIENT_SECRET": CLIENT_SECRET,
        },
    )


@contextmanager
def sso_app(
    tmp: Path, db_url: str, *, claims_in_id_token: bool = False, load_demo: bool = False
) -> Iterator[tuple[str, Provider]]:
    """A provider and ``streamlit run app.py`` signing in through it; yields (app URL, provider)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with oidc_provider(tmp, f"{base}/oauth2callback", claims_in_id_token=claims_in_id_token) as provider:
        secrets = tmp / f"secrets-{port}.toml"
        secrets.write_text(secrets_toml(f"{base}/oauth2callback", provider.issuer), encoding="utf-8")
        env = {
            "REFORM_AUTH_MODE": "oidc",
            "REFORM_DATABASE_URL": db_url,
            "REFORM_LOAD_DEMO": "true" if load_demo else "false",
        }
        with streamlit_app(env, "--secrets.files", str(secrets), port=port) as url:
            yield url, provider


def sign_in_at_provider(page, login: str, *, base: str) -> None:
    """On the app's sign-in page: press the button, sign in as ``login`` at the provider's
    development form (any password), consent, and wait to be back in the app."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Sign in with your identity provider").click()
    page.wait_for_url("**/interaction/**")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.get_by_role("button", name="Sign-in").click()
    consent = page.get_by_role("button", name="Continue")
    page.wait_for_url(lambda url: url.startswith(base) or "/interaction/" in url)
    if "/interaction/" in page.url:
        expect(consent).to_be_visible()
        consent.click()
    page.wait_for_url(f"{base}/**")

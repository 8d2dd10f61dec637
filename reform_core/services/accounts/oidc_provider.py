"""Single sign-on: the ``[auth]`` configuration of Streamlit's ``st.login``, the identity
provider's metadata, and its userinfo endpoint.

``REFORM_AUTH_MODE=oidc`` signs people in through ``st.login`` (Authlib), configured by the
``[auth]`` section of ``.streamlit/secrets.toml``. :func:`check_auth_config` checks that
section and the provider's published metadata once, before anybody can press "Log in", and
refuses with one line (:class:`OidcConfigError`) naming what to change, instead of the
traceback or the silent bounce a visitor would otherwise get. No message contains the client
secret, the cookie secret or a token.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

REQUIRED_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")
MIN_COOKIE_SECRET = 32
DEFAULT_PROMPT = "select_account"  # what st.login sends when client_kwargs has no prompt
TIMEOUT_S = 5.0
GUIDE = 'docs/operations.md, "Single sign-on (OIDC)"'


class OidcConfigError(Exception):
    """The ``[auth]`` configuration or the provider's metadata is unusable (one line, safe to show)."""


class UserinfoError(Exception):
    """The userinfo endpoint gave no usable answer (message safe to show; never holds the token)."""


@dataclass(frozen=True)
class ProviderInfo:
    """What ReForm needs from the provider's metadata."""

    issuer: str
    userinfo_endpoint: str


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _check_url(name: str, url, *, suffix: str = "") -> str:
    """``url`` if absolute https (http only on this machine's loopback), else OidcConfigError."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise OidcConfigError(f"[auth] {name}: expected an absolute https:// URL, got {url!r} ({GUIDE})")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise OidcConfigError(
            f"[auth] {name}: use https:// (plain http only for a provider on this machine), got {url!r}"
        )
    if suffix and not parts.path.endswith(suffix):
        raise OidcConfigError(f"[auth] {name}: must end with {suffix}, got {url!r} ({GUIDE})")
    return url


def _authlib_installed() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        parts = tuple(int(p) for p in version("authlib").split(".")[:3] if p.isdigit())
    except PackageNotFoundError:
        return False
    return parts >= (1, 3, 2)


def _check_keys(auth: Mapping) -> None:
    if not auth:
        raise OidcConfigError(f"REFORM_AUTH_MODE=oidc needs an [auth] section in .streamlit/secrets.toml ({GUIDE})")
    missing = [k for k in REQUIRED_KEYS if not auth.get(k)]
    if missing:
        raise OidcConfigError(
            f"[auth] in .streamlit/secrets.toml lacks {', '.join(missing)} (ReForm signs in with "
            f"the [auth] section's own keys, one provider; {GUIDE})"
        )
    if not isinstance(auth["cookie_secret"], str) or len(auth["cookie_secret"]) < MIN_COOKIE_SECRET:
        raise OidcConfigError(
            f"[auth] cookie_secret: use a random string of at least {MIN_COOKIE_SECRET} characters, "
            'e.g. from: python -c "import secrets; print(secrets.token_urlsafe(32))"'
        )
    _check_url("redirect_uri", str(auth["redirect_uri"]).replace("{port}", "8501"), suffix="/oauth2callback")
    _check_url("server_metadata_url", auth["server_metadata_url"])
    tokens = auth.get("expose_tokens")
    tokens = [tokens] if isinstance(tokens, str) else list(tokens or [])
    if "access" not in tokens:
        raise OidcConfigError(
            '[auth] expose_tokens: must include "access" (ReForm asks the provider\'s userinfo '
            "endpoint for the e-mail address when the ID token lacks it), e.g. "
            'expose_tokens = ["access"]'
        )


def effective_client_kwargs(auth: Mapping) -> tuple[str, str]:
    """The ``scope`` and ``prompt`` that ``st.login`` sends (its defaults where ``client_kwargs``
    sets none)."""
    kwargs = auth.get("client_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise OidcConfigError('[auth] client_kwargs: expected a table, e.g. client_kwargs = { prompt = "login" }')
    return str(kwargs.get("scope", "openid email profile")), str(kwargs.get("prompt", DEFAULT_PROMPT))


def _check_client_kwargs(auth: Mapping, metadata: Mapping) -> None:
    scope, prompt = effective_client_kwargs(auth)
    if not {"openid", "email"} <= set(scope.split()):
        raise OidcConfigError(f"[auth] client_kwargs.scope: must include openid and email, got {scope!r}")
    supported = metadata.get("prompt_values_supported")
    unsupported = [p for p in prompt.split() if isinstance(supported, list) and p not in supported]
    if unsupported:
        raise OidcConfigError(
            f"[auth] client_kwargs.prompt: the provider does not support prompt={prompt!r} "
            f"(it supports {', '.join(map(str, supported))}); set e.g. "
            f'client_kwargs = {{ prompt = "login" }} or {{ prompt = "" }} ({GUIDE})'
        )


def fetch_json(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = TIMEOUT_S) -> dict:
    """GET ``url`` and parse its JSON object; OSError / ValueError with the reason otherwise."""
    req = urllib.request.Request(url, headers={"Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only, checked by the callers
        if "jwt" in resp.headers.get("Content-Type", ""):
            raise ValueError("the answer is a signed JWT, which ReForm does not read; ask for plain JSON")
        body = json.loads(resp.read(1_000_001).decode("utf-8"))
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    return body


def _metadata(url: str, fetch: Callable[[str], dict]) -> dict:
    try:
        meta = fetch(url)
    except (OSError, ValueError) as exc:
        raise OidcConfigError(
            f"[auth] server_metadata_url: cannot read the provider's metadata at {url} ({exc})"
        ) from None
    missing = [
        k
        for k in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")
        if not isinstance(meta.get(k), str) or not meta.get(k)
    ]
    if missing:
        raise OidcConfigError(
            f"[auth] server_metadata_url: the provider's metadata at {url} lacks "
            f"{', '.join(missing)} (is it an OpenID Connect discovery document?)"
        )
    issuer = meta["issuer"]
    if "{" in issuer:
        raise OidcConfigError(
            f"[auth] server_metadata_url: the issuer {issuer!r} is a template (a multi-tenant "
            "endpoint such as Entra ID's common or organizations); use your tenant's own "
            f"metadata URL ({GUIDE})"
        )
    if url.rstrip("/") != issuer.rstrip("/") + "/.well-known/openid-configuration":
        raise OidcConfigError(
            f"[auth] server_metadata_url: the metadata names the issuer {issuer!r}, which does not "
            f"publish it at {url} (expected {issuer.rstrip('/')}/.well-known/openid-configuration)"
        )
    for k in ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"):
        _check_url(f"the provider's {k}", meta[k])
    return meta


def check_auth_config(auth: Mapping, *, fetch: Callable[[str], dict] = fetch_json) -> ProviderInfo:
    """Check the ``[auth]`` section (given as a plain mapping) and the provider's metadata.

    Raises :class:`OidcConfigError` with one line naming the setting to change: Authlib
    missing, a required key missing, a short cookie secret, a redirect URI that is not the
    app's ``/oauth2callback``, plain http to another machine, ``expose_tokens`` without
    ``"access"``, a scope without ``openid`` and ``email``, metadata that cannot be read or
    lacks an endpoint, an issuer that does not match its discovery URL, or a ``prompt`` the
    provider says it does not support."""
    if not _authlib_installed():
        raise OidcConfigError(
            "REFORM_AUTH_MODE=oidc needs Authlib >= 1.3.2: pip install -r requirements.lock (it holds streamlit[auth])"
        )
    _check_keys(auth)
    meta = _metadata(auth["server_metadata_url"], fetch)
    _check_client_kwargs(auth, meta)
    return ProviderInfo(issuer=meta["issuer"], userinfo_endpoint=meta["userinfo_endpoint"])


def fetch_userinfo(endpoint: str, access_token: str | None, *, fetch: Callable[..., dict] = fetch_json) -> dict:
    """The claims the provider's userinfo endpoint returns for ``access_token``."""
    if not access_token:
        raise UserinfoError('no access token to ask the provider with ([auth] expose_tokens must include "access")')
    try:
        return fetch(endpoint, headers={"Authorization": f"Bearer {access_token}"})
    except urllib.error.HTTPError as exc:
        raise UserinfoError(f"the provider's userinfo endpoint answered HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise UserinfoError(f"the provider's userinfo endpoint gave no usable answer ({type(exc).__name__})") from None

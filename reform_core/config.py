"""Settings from the environment (and, in the app, ``st.secrets``); no import-time I/O.

Secrets (API keys) are read here and handed to judge adapters in memory only; they
are never written to the database, logs or exports.

Judge provider endpoints other than the providers' official APIs are configuration a lead
sets, never input a page accepts: ``REFORM_JUDGE_ENDPOINTS`` is a JSON object naming each
allowed endpoint, e.g. ``{"lab-vllm": {"provider": "openai", "base_url":
"http://gpu1:8000/v1", "key_env": "VLLM_API_KEY"}}`` (``key_env``: the environment variable
holding the key to send there; default the provider's own, ``OPENAI_API_KEY`` /
``GOOGLE_API_KEY``). In the app it may also sit at the root of ``.streamlit/secrets.toml``
as a string (Streamlit exports root-level string secrets to the environment). The
Judges page offers these names only; the CLI's ``--base-url`` stays (whoever runs the CLI
owns the keys in its environment).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Literal, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from reform_core.database_url import DEFAULT_DB_PATH, default_url  # noqa: E402,F401 - DEFAULT_DB_PATH re-exported

ENDPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,49}$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


class JudgeEndpoint(BaseModel):
    """A provider endpoint a lead allows: where requests go and which key they carry."""

    model_config = {"frozen": True, "extra": "forbid"}

    provider: Literal["openai", "gemini"]
    base_url: str
    key_env: Optional[str] = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        u = urlsplit(v)
        if u.scheme not in ("http", "https") or not u.hostname or u.username or u.password or u.query or u.fragment:
            raise ValueError(f"base_url: expected http(s)://host[:port][/path] without credentials, got {v!r}")
        return v

    @field_validator("key_env")
    @classmethod
    def _env_name(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (not ENV_NAME.match(v) or v.startswith("REFORM_")):
            raise ValueError(f"key_env: expected an environment variable name such as VLLM_API_KEY, got {v!r}")
        return v


class Settings(BaseSettings):
    """Application settings; environment variables are prefixed ``REFORM_``.

    API keys keep their providers' usual names (``OPENAI_API_KEY``, ``GOOGLE_API_KEY``).
    """

    model_config = SettingsConfigDict(env_prefix="REFORM_", extra="ignore")

    database_url: str = Field(default_factory=default_url)
    load_demo: bool = True  # load the demo project into an empty database on app start
    auth_mode: str = "local"  # "local" single-user demo mode, "password" or "oidc"
    lease_seconds: int = 600  # adjudication claim lease
    job_heartbeat_seconds: float = 5.0  # a running background job records its progress this often
    job_stale_seconds: float = 60.0  # a running job without a heartbeat this long belongs to a dead process
    openai_api_key: Optional[SecretStr] = Field(default=None, validation_alias="OPENAI_API_KEY")
    google_api_key: Optional[SecretStr] = Field(default=None, validation_alias="GOOGLE_API_KEY")
    judge_endpoints: dict[str, JudgeEndpoint] = Field(default_factory=dict)  # REFORM_JUDGE_ENDPOINTS (JSON)
    # Signs the session tokens of password mode (REFORM_SESSION_SECRET); unset, each process
    # signs with a random key of its own (sessions then end with the process).
    session_secret: Optional[SecretStr] = None
    # Tests only: a page's unexpected error is raised (an AppTest exception) instead of being shown
    # as a short message with an error id (pages/components/errors.py).
    raise_page_errors: bool = False

    @field_validator("judge_endpoints")
    @classmethod
    def _endpoint_names(cls, v: dict) -> dict:
        bad = [n for n in v if not ENDPOINT_NAME.match(n)]
        if bad:
            raise ValueError(f"judge endpoint names: letters, digits, '_', '.', '-' (at most 50), got {bad}")
        return v


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()


def secret_values(settings: Optional[Settings] = None) -> list[str]:
    """Every configured secret, for redaction of error messages and logs."""
    s = settings or get_settings()
    out = []
    for v in (s.openai_api_key, s.google_api_key, s.session_secret):
        if v is not None and v.get_secret_value():
            out.append(v.get_secret_value())
    key_envs = [e.key_env for e in s.judge_endpoints.values() if e.key_env]
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", *key_envs):
        val = os.environ.get(name)
        if val:
            out.append(val)
    return sorted(set(out), key=len, reverse=True)


def redact(text: str, secrets: Optional[list[str]] = None) -> str:
    """Replace every known secret in ``text`` by ``***``."""
    for s in secrets if secrets is not None else secret_values():
        if s:
            text = text.replace(s, "***")
    return text


def judge_endpoint(name: str, provider: Optional[str] = None) -> JudgeEndpoint:
    """The configured endpoint ``name`` (for ``provider``, if given); ValueError otherwise."""
    eps = get_settings().judge_endpoints
    ep = eps.get(name)
    if ep is None:
        known = ", ".join(sorted(eps)) or "none configured (REFORM_JUDGE_ENDPOINTS)"
        raise ValueError(f"endpoint: unknown judge endpoint {name!r} (known: {known})")
    if provider is not None and ep.provider != provider:
        raise ValueError(f"endpoint: {name!r} is a {ep.provider} endpoint, not {provider}")
    return ep

"""Settings from the environment (and, in the app, ``st.secrets``); no import-time I/O.

Secrets (API keys) are read here and handed to judge adapters in memory only; they
are never written to the database, logs or exports.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DB_PATH = Path(os.environ.get("REFORM_DATA_DIR", "data")) / "reform.db"


class Settings(BaseSettings):
    """Application settings; environment variables are prefixed ``REFORM_``.

    API keys keep their providers' usual names (``OPENAI_API_KEY``, ``GOOGLE_API_KEY``).
    """

    model_config = SettingsConfigDict(env_prefix="REFORM_", extra="ignore")

    database_url: str = Field(default_factory=lambda: f"sqlite:///{DEFAULT_DB_PATH}")
    load_demo: bool = True  # load the demo project into an empty database on app start
    auth_mode: str = "local"  # "local" single-user demo mode, "password" or "oidc"
    lease_seconds: int = 600  # adjudication claim lease
    job_heartbeat_seconds: float = 5.0  # a running background job records its progress this often
    job_stale_seconds: float = 60.0  # a running job without a heartbeat this long belongs to a dead process
    openai_api_key: Optional[SecretStr] = Field(default=None, validation_alias="OPENAI_API_KEY")
    google_api_key: Optional[SecretStr] = Field(default=None, validation_alias="GOOGLE_API_KEY")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()


def secret_values(settings: Optional[Settings] = None) -> list[str]:
    """Every configured secret, for redaction of error messages and logs."""
    s = settings or get_settings()
    out = []
    for v in (s.openai_api_key, s.google_api_key):
        if v is not None and v.get_secret_value():
            out.append(v.get_secret_value())
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
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

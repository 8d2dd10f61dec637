"""Where the project database is, from the environment alone (no pydantic import).

``REFORM_DATABASE_URL`` (matched without regard to case, as the settings do), else the app's
SQLite file ``$REFORM_DATA_DIR/reform.db`` (default ``data/reform.db``). The settings
(:mod:`reform_core.config`) and the CLI's ``--db`` default both use it, so a command that
only needs the database does not pay for importing the settings machinery (issue 16).
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB_PATH = Path(os.environ.get("REFORM_DATA_DIR", "data")) / "reform.db"
ENV = "REFORM_DATABASE_URL"


def default_url() -> str:
    return f"sqlite:///{DEFAULT_DB_PATH}"


def from_environment() -> str:
    """``REFORM_DATABASE_URL`` if set (any case), else :func:`default_url`."""
    if ENV in os.environ:
        return os.environ[ENV]
    for key, value in os.environ.items():
        if key.upper() == ENV:
            return value
    return default_url()

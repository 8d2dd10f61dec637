"""Helpers shared by the CLI command modules: options, JSON printing, error exits."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import typer

DbOption = typer.Option(
    None,
    "--db",
    help="Database URL (default: $REFORM_DATABASE_URL, else the app's SQLite file).",
)


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (the stable machine-readable output)."""
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def fail(message: str, code: int = 1) -> "typer.Exit":
    """Print ``message`` on stderr and exit non-zero."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def db_url(value: Optional[str]) -> str:
    """Resolve the --db option against the settings."""
    from reform_core.config import get_settings

    return value or get_settings().database_url


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()

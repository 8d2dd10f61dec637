"""CLI commands of the judging area (registered into ``reform_core.cli.app``)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

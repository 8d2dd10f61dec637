"""``python -m reform_core …``: the scriptable face of the product (SPEC §8).

Each area registers its commands from ``reform_core.commands.<area>``; the command
functions only parse arguments, call ``reform_core.services`` and print.
"""

from __future__ import annotations

import typer

from reform_core.commands import (
    adjudication,
    analyses,
    construction,
    data,
    judging,
    ops,
    scoring,
    studies,
    verify,
    wording,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="ReForm: calibrated format-following scores from two LLM judges and human adjudication.",
)

for _area in (data, scoring, analyses, judging, adjudication, verify, wording, ops, construction, studies):
    _area.register(app)


def main() -> None:  # pragma: no cover - thin entry point
    """Run the CLI; unexpected errors print one clear line (REFORM_DEBUG=1 for a traceback)."""
    import os
    import sys

    from reform_core.config import redact

    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        if os.environ.get("REFORM_DEBUG"):
            raise
        typer.echo(f"error: {type(exc).__name__}: {redact(str(exc))[:2000]}", err=True)
        sys.exit(1)

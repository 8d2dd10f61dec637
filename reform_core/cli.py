"""``python -m reform_core …``: the scriptable face of the product (reference: docs/cli.md;
stable ``--json`` shapes: docs/formats.md).

Each area registers its commands from ``reform_core.commands.<area>``; the command
functions only parse arguments, call ``reform_core.services`` and print. Start-up stays
light (issue 16, ``bench/bench_cli.py``): the command modules import only typer at module
level; pandas, scipy, SQLAlchemy and the settings are imported inside the commands that use
them (``plan-size`` needs none of them, ``status`` only SQLAlchemy).
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
    rich_markup_mode=None,  # plain click help: loading rich's formatter costs more than the rest of --help
    help="ReForm: calibrated format-following scores from two LLM judges and human adjudication.",
)

for _area in (data, scoring, analyses, judging, adjudication, verify, wording, ops, construction, studies):
    _area.register(app)


def main() -> None:  # pragma: no cover - thin entry point
    """Run the CLI; unexpected errors print one clear line (REFORM_DEBUG=1 for a traceback)."""
    import os
    import sys

    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        if os.environ.get("REFORM_DEBUG"):
            raise
        typer.echo(f"error: {one_line_error(exc)}", err=True)  # settings (redact) imported only on this path
        sys.exit(1)


def one_line_error(exc: BaseException) -> str:
    """One line for an unexpected error: the database driver's own first line for a database
    error (not SQLAlchemy's statement and parameters), the first line of anything else."""
    from reform_core.config import redact

    orig = getattr(exc, "orig", None)  # sqlalchemy.exc.DBAPIError
    shown = orig if isinstance(orig, BaseException) else exc
    lines = redact(str(shown)).strip().splitlines() or [""]
    if "database is locked" in lines[0]:
        return "the database is busy: another process holds its write lock (an import?); try again"
    hint = " (set REFORM_DEBUG=1 for the traceback)"
    return f"{type(shown).__name__}: {lines[0][:500]}{hint}"

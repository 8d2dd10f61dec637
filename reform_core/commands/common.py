"""Helpers shared by the CLI command modules: options, JSON printing, error exits."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

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
    """Resolve the --db option: else ``REFORM_DATABASE_URL``, else the app's SQLite file (the
    settings' rule, without importing the settings)."""
    from reform_core.database_url import from_environment

    return value or from_environment()


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def open_engine(db: Optional[str]):
    """The engine for the --db option (schema upgraded); a clear error if it cannot be opened."""
    from reform_core.services.platform.uow import get_engine

    try:
        return get_engine(db_url(db))
    except Exception as exc:  # noqa: BLE001 - connection / migration problems
        fail(f"cannot open database: {exc}")


@contextlib.contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Optional[Callable[[int, int], None]]]:
    """A rich progress bar on stderr (only when stderr is a terminal)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def run_or_fail(fn: Callable[[], dict]) -> dict:
    """Run a service call; any error exits non-zero with one redacted line."""
    from reform_core.config import redact

    try:
        return fn()
    except (ValueError, KeyError) as exc:
        fail(redact(str(exc)))
    except Exception as exc:  # noqa: BLE001 - provider/network errors: short, redacted
        fail(redact(f"{type(exc).__name__}: {exc}"))
    raise AssertionError("unreachable")  # pragma: no cover


def engine_and_principal(db: Optional[str]):
    """The engine of ``--db`` and the CLI's own principal (a lead)."""
    from reform_core.services.accounts.users import cli_principal

    engine = open_engine(db)
    return engine, cli_principal(engine)


def read_bytes(path: Path) -> bytes:
    """A file's bytes, or a one-line failure naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")


def judge_pair(judges: Optional[str]) -> Optional[tuple[str, str]]:
    """``--judges A,B`` as the pair ``(A, B)``; None when not given."""
    if not judges:
        return None
    parts = [p.strip() for p in judges.split(",")]
    if len(parts) != 2 or not all(parts):
        fail(f"--judges: expected A,B, got {judges!r}")
    return parts[0], parts[1]

"""CLI commands of the scoring area: score, export."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, db_url, fail, print_json


def _pair(judges: Optional[str]):
    if not judges:
        return None
    parts = [p.strip() for p in judges.split(",")]
    if len(parts) != 2 or not all(parts):
        fail(f"--judges: expected A,B, got {judges!r}")
    return parts[0], parts[1]


def register(app: typer.Typer) -> None:
    @app.command("score")
    def score_cmd(db: Optional[str] = DbOption,
                  judge: Optional[str] = typer.Option(None, "--judge", help="Score one judge's raw labels."),
                  calibration: str = typer.Option("stratified", "--calibration", help="stratified | pooled"),
                  judges: Optional[str] = typer.Option(None, "--judges", help="Judge pair A,B for calibration (default: the first two)."),
                  json_out: bool = typer.Option(False, "--json")):
        """TCPR, EMCR and R1–R3 per model (percentages)."""
        from reform_core.services.scoring import ScoringError, score, score_json
        from reform_core.services.uow import get_engine
        from reform_core.services.users import cli_principal

        eng = get_engine(db_url(db))
        try:
            out = score_json(score(eng, cli_principal(eng), judge=judge, calibration=calibration, judges=_pair(judges)))
        except ScoringError as exc:
            fail(str(exc))
        if json_out:
            print_json(out)
            return
        typer.echo(f"method: {out['method']}{' (provisional: some strata have no review yet)' if out['provisional'] else ''}")
        typer.echo(f"{'model':<24}{'TCPR':>8}{'EMCR':>8}{'R1':>8}{'R2':>8}{'R3':>8}  units")
        for m, r in out["models"].items():
            f = lambda v: f"{v:8.2f}" if v is not None else "     n/a"  # noqa: E731
            typer.echo(f"{m:<24}{f(r['tcpr'])}{f(r['emcr'])}{f(r['r1'])}{f(r['r2'])}{f(r['r3'])}  {r['units']}")

    @app.command("export")
    def export_cmd(out: Path = typer.Option(..., "--out"), db: Optional[str] = DbOption,
                   calibration: str = typer.Option("stratified", "--calibration", help="stratified | pooled"),
                   seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap intervals."),
                   json_out: bool = typer.Option(False, "--json")):
        """Write every export file (CSV, Parquet, JSON) and the manifest."""
        from reform_core.services.export import export
        from reform_core.services.scoring import ScoringError
        from reform_core.services.uow import get_engine
        from reform_core.services.users import cli_principal

        eng = get_engine(db_url(db))
        try:
            manifest = export(eng, out, principal=cli_principal(eng), calibration=calibration, seed=seed)
        except ScoringError as exc:
            fail(str(exc))
        files = sorted(manifest["files"]) + ["manifest.json"]
        if json_out:
            print_json({"out": str(out), "files": files})
        else:
            for f in files:
                typer.echo(str(out / f))

    @app.command("score-export")
    def score_export_cmd(directory: Path = typer.Argument(..., help="An export directory."),
                         json_out: bool = typer.Option(False, "--json")):
        """Recompute Table 2 from an export's own instances.csv (check an export)."""
        from reform_core.services.export import recompute

        try:
            print_json(recompute(directory))
        except (FileNotFoundError, ValueError, KeyError) as exc:
            fail(str(exc))

"""CLI commands of the scoring area: pair, score, export, score-export."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, db_url, fail, judge_pair, print_json
from reform_core.score_text import estimate_lines, score_text  # noqa: F401 - the score table, re-exported

CALIBRATION_HELP = (
    "cluster (default: question-cluster difference estimator of the pair's newest question-cluster "
    "plan) | stratified | pooled (the paper's rules)"
)


def _provisional_text(out: dict) -> str:
    """Why a ``score`` result is provisional: the plan's counts (default estimator) or the strata."""
    if not out["provisional"]:
        return ""
    prog = [r["progress"] for r in out["models"].values() if "progress" in r]
    if not prog:
        return " (provisional: some strata have no review yet)"
    done, planned = sum(p["tasks_decided"] for p in prog), sum(p["tasks_planned"] for p in prog)
    return (
        f" (in progress: {done} of {planned} planned tasks decided, "
        f"{sum(p['awaiting_opinion'] for p in prog)} item(s) awaiting another opinion)"
    )


def register(app: typer.Typer) -> None:
    @app.command("pair")
    def pair_cmd(
        judge_a: Optional[str] = typer.Argument(None, help="Judge A of the scoring pair."),
        judge_b: Optional[str] = typer.Argument(None, help="Judge B of the scoring pair."),
        db: Optional[str] = DbOption,
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Set the project's scoring pair (used by score, export and every page); without
        arguments, print it.

        Lead only (also on the Judges page); both judges must have labels; `status --json` shows
        the pair. With no pair set, exactly two judges with labels are used (the output says
        so); with more, calibrated scoring refuses and lists them. A judge whose judgments are
        all errors or abstentions is never a candidate. A plan's decisions count only for its
        own pair; the Scores page says how many decisions belong to other pairs."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.platform.uow import get_engine
        from reform_core.services.scoring.scoring import ScoringError, project_pair, resolve_pair, set_pair

        eng = get_engine(db_url(db))
        if (judge_a is None) != (judge_b is None):
            fail("pair: name two judges (A B), or none to print the current pair")
        if judge_a is None:
            pair = project_pair(eng)
            if json_out:
                print_json({"pair": list(pair) if pair else None})
            else:
                typer.echo(
                    f"pair: {pair[0]} (A), {pair[1]} (B)" if pair else f"no pair set; {resolve_pair(eng).describe()}"
                )
            return
        try:
            pair = set_pair(eng, cli_principal(eng), judge_a, judge_b)
        except ScoringError as exc:
            fail(str(exc))
        print_json({"pair": list(pair)}) if json_out else typer.echo(f"pair: {pair[0]} (A), {pair[1]} (B)")

    @app.command("score")
    def score_cmd(
        db: Optional[str] = DbOption,
        judge: Optional[str] = typer.Option(None, "--judge", help="Score one judge's raw labels."),
        calibration: str = typer.Option("cluster", "--calibration", help=CALIBRATION_HELP),
        judges: Optional[str] = typer.Option(
            None, "--judges", help="Judge pair A,B for calibration (default: the project's pair, see `pair`)."
        ),
        with_intervals: bool = typer.Option(
            False, "--intervals", help="Add measurement and population 95 % intervals per model."
        ),
        reps: int = typer.Option(2000, "--reps", help="Bootstrap replicates of the intervals."),
        seed: int = typer.Option(0, "--seed", help="Seed of the intervals."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """TCPR, EMCR, R1–R3 and the catalog's other scores per model (percentages)."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.platform.uow import get_engine
        from reform_core.services.scoring.scoring import ScoringError, score, score_json

        if reps < 1:
            fail(f"--reps must be >= 1, got {reps}")
        eng = get_engine(db_url(db))
        try:
            out = score_json(
                score(
                    eng,
                    cli_principal(eng),
                    judge=judge,
                    calibration=calibration,
                    judges=judge_pair(judges),
                    with_intervals=with_intervals,
                    reps=reps,
                    seed=seed,
                )
            )
        except ScoringError as exc:
            fail(str(exc))
        if json_out:
            print_json(out)
            return
        for line in out["notes"]:
            typer.echo(f"note: {line}")
        typer.echo(f"estimator: {out['estimator']}{_provisional_text(out)}")
        typer.echo(score_text(out))
        for line in estimate_lines(out):
            typer.echo(line)

    @app.command("export")
    def export_cmd(
        out: Path = typer.Option(..., "--out"),
        db: Optional[str] = DbOption,
        calibration: str = typer.Option("cluster", "--calibration", help=CALIBRATION_HELP),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap intervals."),
        reps: int = typer.Option(2000, "--reps", help="Bootstrap replicates of the intervals."),
        judges: Optional[str] = typer.Option(
            None, "--judges", help="Judge pair A,B (default: the project's pair, see `pair`)."
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Write every export file (CSV, Parquet, JSON) and the manifest."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.platform.uow import get_engine
        from reform_core.services.project.export import export
        from reform_core.services.scoring.scoring import ScoringError

        eng = get_engine(db_url(db))
        try:
            manifest = export(
                eng,
                out,
                principal=cli_principal(eng),
                calibration=calibration,
                seed=seed,
                n_boot=reps,
                judges=judge_pair(judges),
            )
        except ScoringError as exc:
            fail(str(exc))
        files = sorted(manifest["files"]) + ["manifest.json"]
        if json_out:
            print_json({"out": str(out), "files": files})
        else:
            for f in files:
                typer.echo(str(out / f))

    @app.command("score-export")
    def score_export_cmd(
        directory: Path = typer.Argument(..., help="An export directory."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Recompute Table 2 from an export's own files (check an export).

        From estimator_clusters.csv under the default estimator, else from instances.csv, which
        also gives Table 3 (from p_auxiliary) when the export has single-constraint rows."""
        from reform_core.services.project.export import recompute

        try:
            print_json(recompute(directory))
        except (FileNotFoundError, ValueError, KeyError) as exc:
            fail(str(exc))

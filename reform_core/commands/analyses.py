"""CLI command ``analyses``: Table 3 (composition), prompting, coverage (Table A4) and Table 4."""

from __future__ import annotations

from typing import Optional

import typer

from reform_core.commands.common import DbOption, db_url, fail, judge_pair, print_json


def analyses_text(out: dict) -> str:
    """The ``analyses`` JSON as text: rule, interval methods, each analysis as a readable table
    (points rounded to their intervals; the JSON keeps full precision), what was left out."""
    import pandas as pd

    from reform_core import analyses_display

    lines = [
        f"rule: {out['rule_text']}",
        f"intervals: population — {out['intervals']['population']}; measurement — {out['intervals']['measurement']}",
    ]
    for name, rows in out["tables"].items():
        lines.append(f"{name}: {len(rows)} row(s)")
        if name in analyses_display.TABLES and rows:  # rounded to what each interval supports (docs/display.md)
            lines.append(analyses_display.readable(name, pd.DataFrame(rows)).text().to_string(index=False))
    for analysis, counts in out["excluded"].items():
        left = {k: v for k, v in counts.items() if v}
        if left:
            lines.append(f"{analysis}: left out " + ", ".join(f"{v} ({k})" for k, v in left.items()))
    for analysis, notes in out["notes"].items():
        lines += [f"{analysis}: {n}" for n in notes]
    for analysis, err in out["errors"].items():
        lines.append(f"{analysis}: not available: {err}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("analyses")
    def analyses_cmd(
        db: Optional[str] = DbOption,
        rule: str = typer.Option("pooled", "--rule", help="pooled (the paper's, default) | stratified (per condition)"),
        judge: Optional[str] = typer.Option(None, "--judge", help="One judge's raw labels instead."),
        judges: Optional[str] = typer.Option(None, "--judges", help="Judge pair A,B (default: the project's)."),
        reference: Optional[str] = typer.Option(
            None, "--reference", help="Table 4 reference models, comma-separated (default: the construction models)."
        ),
        n_boot: Optional[int] = typer.Option(
            None,
            "--n-boot",
            help="Bootstrap replicates of each interval (default 500: the Scores page's and export's).",
        ),
        seed: int = typer.Option(0, "--seed"),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Composition (Table 3, per-target rates), prompting, coverage (Table A4) and Table 4, with
        population and measurement intervals and what was left out.

        Each value has a population interval (*_pop_low / *_pop_high) and a measurement interval
        (*_meas_low / *_meas_high), defined in docs/metrics.md. Only complete, consistent pairs
        are compared; the rest is counted per reason and listed. Without --json each table is
        printed with its points rounded to their intervals (docs/display.md)."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.platform.uow import get_engine
        from reform_core.services.scoring.analyses import N_BOOT, AnalysisError, analyses, analyses_json

        eng = get_engine(db_url(db))
        ref = [r.strip() for r in reference.split(",") if r.strip()] if reference else None
        try:
            out = analyses_json(
                analyses(
                    eng,
                    cli_principal(eng),
                    rule=rule,
                    judge=judge,
                    judges=judge_pair(judges),
                    n_boot=N_BOOT if n_boot is None else n_boot,
                    seed=seed,
                    reference=ref,
                )
            )
        except AnalysisError as exc:
            fail(str(exc))
        print_json(out) if json_out else typer.echo(analyses_text(out))

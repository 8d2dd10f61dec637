"""CLI commands of the data area: init, import, import-ifeval, import-table, catalog-init, demo, status,
simulate, export-bundle."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from reform_core.commands.common import DbOption, fail, print_json
from reform_core.commands.common import open_engine as _engine


def _progress(enabled: bool):
    if not enabled:
        return None
    return lambda step: typer.echo(f"… {step}", err=True)


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_cmd(
        db: Optional[str] = DbOption,
        catalog: str = typer.Option(
            "reformbench",
            help="Catalog: a bundled name, a catalog file (stored with "
            "the project; docs/catalog.md) or a stored one's name.",
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Create or upgrade the database schema and load the catalog."""
        from reform_core.services.data.reading import ImportFailed
        from reform_core.services.project.setup import init_project

        try:
            out = init_project(_engine(db), catalog=catalog)
        except (ImportFailed, ValueError) as exc:
            fail(str(exc))
        print_json(out) if json_out else typer.echo(
            f"database ready; catalog {out['catalog']} ({out['features_loaded']} features loaded)"
        )

    @app.command("status")
    def status_cmd(db: Optional[str] = DbOption, json_out: bool = typer.Option(False, "--json")):
        """Counts of questions, instructions, constraints, models, responses, judgments, disagreements,
        adjudications; the scoring pair and the sample plans."""
        from reform_core.commands.common import db_url
        from reform_core.services.data.status import sqlite_status, status

        # a current SQLite file is read with sqlite3 alone (no SQLAlchemy import); else the engine
        out = sqlite_status(db_url(db)) or status(_engine(db))
        if json_out:
            print_json(out)
            return
        for k, v in out.items():
            if k == "pair":
                typer.echo(f"{k:>14}: {', '.join(v) if v else 'not set (see `pair A B`)'}")
            elif k == "plans":
                for plan in v:
                    typer.echo(
                        f"{'plan':>14}: {plan['name']} ({plan['judge_a']} vs {plan['judge_b']}): "
                        f"{plan['done']}/{plan['tasks']} tasks done"
                    )
            else:
                typer.echo(f"{k:>14}: {v}")

    @app.command("demo")
    def demo_cmd(db: Optional[str] = DbOption, json_out: bool = typer.Option(False, "--json")):
        """Load the bundled demo project."""
        from reform_core.services.data.reading import ImportFailed
        from reform_core.services.project.setup import load_demo

        try:
            out = load_demo(_engine(db), progress=_progress(not json_out))
        except ImportFailed as exc:
            fail(str(exc))
        print_json(out)

    @app.command("import")
    def import_cmd(
        directory: Path = typer.Argument(..., help="Bundle directory (format: docs/formats.md)."),
        db: Optional[str] = DbOption,
        replace: bool = typer.Option(False, "--replace", help="Overwrite rows that conflict with existing ids."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Import a bundle; nothing is written unless every record is valid."""
        from reform_core.services.data.importer import import_bundle
        from reform_core.services.data.reading import ImportFailed

        try:
            out = import_bundle(_engine(db), directory, replace=replace, progress=_progress(not json_out))
        except ImportFailed as exc:
            fail(f"{directory}: {exc}")
        print_json(out)

    @app.command("import-ifeval")
    def import_ifeval_cmd(
        db: Optional[str] = DbOption,
        input: Path = typer.Option(..., "--input", help="IFEval input_data.jsonl"),
        responses: List[str] = typer.Option(..., "--responses", help="NAME=FILE, a {prompt, response} JSONL per model"),
        replace: bool = typer.Option(False, "--replace"),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Import IFEval-format prompts and model responses."""
        from reform_core.services.data.ifeval_import import import_ifeval
        from reform_core.services.data.reading import ImportFailed

        pairs = {}
        for spec in responses:
            name, sep, path = spec.partition("=")
            if not sep or not name or not path:
                fail(f"--responses {spec!r}: expected NAME=FILE")
            pairs[name] = path
        try:
            out = import_ifeval(_engine(db), input_path=input, responses=pairs, replace=replace)
        except ImportFailed as exc:
            fail(str(exc))
        except OSError as exc:
            fail(str(exc))
        for model, keys in out["missing_responses"].items():
            if keys:
                typer.echo(f"note: model {model}: no response for prompt key(s) {', '.join(keys)}", err=True)
        for line in out["unmatched_responses"]:
            typer.echo(f"note: {line}", err=True)
        print_json(out)

    @app.command("import-table")
    def import_table_cmd(
        file: Path = typer.Argument(..., help="A .csv (UTF-8, header row) or .parquet table."),
        db: Optional[str] = DbOption,
        mapping: List[str] = typer.Option(
            [],
            "--map",
            help="COLUMN=FIELD (repeatable). Fields: "
            "model, question, prompt, instruction, instruction_text, "
            "condition, pair_group, position, feature, mode, "
            "constraint_text, acceptance, params, response, "
            "label:JUDGE, rationale:JUDGE; a column named like a "
            "field maps to it.",
        ),
        catalog: Optional[str] = typer.Option(
            None,
            "--catalog",
            help="Catalog: a bundled name "
            "(reformbench, ifeval), a catalog file (stored with the "
            "project; docs/catalog.md) or the name of one stored "
            "(default: the bundled or stored catalog that knows "
            "most of the features).",
        ),
        replace: bool = typer.Option(False, "--replace", help="Overwrite rows that conflict with existing ones."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Import a plain table: one row per (model, prompt, constraint), with optional response
        text, judge labels and rationales; nothing is written unless every row is valid."""
        from reform_core.services.data.table_import import ImportFailed, import_table_file, parse_mapping

        try:
            columns = parse_mapping(mapping)
            out = import_table_file(
                _engine(db), file, columns, catalog=catalog, replace=replace, progress=_progress(not json_out)
            )
        except ValueError as exc:
            fail(str(exc))
        except ImportFailed as exc:
            fail(str(exc))
        if out["ignored_columns"]:
            typer.echo(f"note: column(s) not imported: {', '.join(out['ignored_columns'])}", err=True)
        print_json(out)

    @app.command("catalog-init")
    def catalog_init_cmd(
        table: Path = typer.Argument(..., help="A .csv or .parquet table, as for import-table."),
        out: Path = typer.Option(..., "--out", help="The catalog file to write (YAML)."),
        mapping: List[str] = typer.Option([], "--map", help="COLUMN=FIELD (repeatable), as for import-table."),
        name: Optional[str] = typer.Option(None, "--name", help="The catalog's name (default: the table's file name)."),
        force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Write a starter catalog from a table's distinct features (edit its texts, then
        import-table TABLE --catalog FILE); format: docs/catalog.md."""
        from reform_core.services.data.catalog_init import catalog_init
        from reform_core.services.data.table_import import ImportFailed, parse_mapping

        try:
            result = catalog_init(table, out, parse_mapping(mapping), name=name, force=force)
        except (ImportFailed, ValueError) as exc:
            fail(str(exc))
        if json_out:
            print_json(result)
        else:
            typer.echo(
                f"wrote {result['out']}: {result['features']} feature(s); edit its texts, then "
                f"`python -m reform_core import-table {table} --catalog {result['out']}`"
            )

    @app.command("simulate")
    def simulate_cmd(
        db: Optional[str] = DbOption,
        seed: int = typer.Option(0, "--seed"),
        scale: str = typer.Option("paper", "--scale", help="paper | small"),
        truth: Optional[Path] = typer.Option(None, "--truth", help="Write the hidden true labels as CSV."),
        adjudicate: int = typer.Option(0, "--adjudicate", help="Oracle adjudications per model and condition."),
        conditions: str = typer.Option(
            "main", "--conditions", help="main plus any of single, prompted (comma-separated)."
        ),
        extractions: bool = typer.Option(
            False, "--extractions", help="Also open-ended feature extractions (Table A4)."
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Write a synthetic project with known ground truth.

        --conditions adds single-constraint versions (one model) and prompted versions (another
        model); --extractions adds open-ended feature extractions of the baseline responses;
        --adjudicate N adds N oracle decisions per model and condition. With all of them,
        `export` writes every table of the paper offline."""
        from reform_core.services.data.reading import ImportFailed
        from reform_core.services.data.simulated import simulate_into

        if scale not in ("paper", "small"):
            fail(f"--scale: expected paper or small, got {scale!r}")
        conds = tuple(c.strip() for c in conditions.split(",") if c.strip())
        try:
            out = simulate_into(
                _engine(db),
                seed=seed,
                scale=scale,
                truth=truth,
                adjudicate=adjudicate,
                progress=_progress(not json_out),
                conditions=conds,
                extractions=extractions,
            )
        except ImportFailed as exc:
            fail(str(exc))
        except ValueError as exc:
            fail(f"--conditions: {exc}")
        print_json(out)

    @app.command("export-bundle")
    def export_bundle_cmd(out: Path = typer.Option(..., "--out"), db: Optional[str] = DbOption):
        """Write the project as an importable bundle directory."""
        from reform_core.services.data.bundle_export import export_bundle

        print_json(export_bundle(_engine(db), out))

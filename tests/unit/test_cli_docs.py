"""docs/cli.md is generated from the Typer app (``python -m reform_core.cli_docs``) and must
match it: a command, option or help text changed without regenerating the page fails here."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from reform_core import cli_docs
from reform_core.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"


def _sections(text: str) -> dict[str, str]:
    """The page's command sections by command path."""
    parts = re.split(r"^## `([^`]+)`\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_md_is_current():
    assert DOC.read_text(encoding="utf-8") == cli_docs.render(), (
        "docs/cli.md is stale: run python -m reform_core.cli_docs"
    )


def test_every_command_option_and_argument_is_on_the_page():
    """Checked against click's own tree, not the generator's walk: nothing is left out."""
    root = typer.main.get_command(app)
    sections = _sections(DOC.read_text(encoding="utf-8"))
    assert set(sections) == {name for name, c in root.commands.items() if not c.hidden}
    for name, command in root.commands.items():
        for param in command.params:
            if param.param_type_name == "option":
                assert any(f"`{opt}" in sections[name] for opt in param.opts), (name, param.opts)
            else:
                assert f"`{param.name}" in sections[name], (name, param.name)
        first_line = (command.help or "").strip().splitlines()[0]
        assert first_line.replace("<", "\\<") in sections[name], name


def test_page_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("REFORM_DATABASE_URL", "sqlite:////elsewhere/other.db")
    assert cli_docs.render() == DOC.read_text(encoding="utf-8")


def test_check_mode_reports_a_stale_page(tmp_path, capsys):
    page = tmp_path / "cli.md"
    page.write_text(cli_docs.render(), encoding="utf-8")
    assert cli_docs.main(["--check", "--out", str(page)]) == 0
    page.write_text(cli_docs.render().replace("## `score`", "## `scores`"), encoding="utf-8")
    assert cli_docs.main(["--check", "--out", str(page)]) == 1
    assert "is stale" in capsys.readouterr().err


def test_page_cites_papers_not_private_files():
    text = DOC.read_text(encoding="utf-8")
    for word in ("SP" + "EC", "README", "/work/"):
        assert word not in text, word
    assert not re.search(r"seed 00\d", text, flags=re.IGNORECASE)

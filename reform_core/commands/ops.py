"""CLI commands of the operations area: backup, restore, doctor, user management."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, db_url, fail, print_json


def _new_password(env: str, username: str) -> str:
    """The new password from ``$env``, else prompted twice (never an argument: it would show in ``ps``)."""
    password = os.environ.get(env)
    if password:
        return password
    password = getpass.getpass(f"New password for {username}: ")
    if getpass.getpass("Repeat it: ") != password:
        fail("password: the two entries differ")
    return password


def list_accounts(eng) -> list[dict]:
    from reform_core.services.accounts.users import cli_principal, list_users

    return list_users(eng, cli_principal(eng))


def register(app: typer.Typer) -> None:
    _register_operations(app)
    _register_account_creation(app)
    _register_account_changes(app)


def _register_operations(app: typer.Typer) -> None:
    @app.command("backup")
    def backup_cmd(out: Path = typer.Option(..., "--out", help="Backup file to write."), db: Optional[str] = DbOption):
        """Write a consistent snapshot (SQLite backup API; pg_dump custom format on PostgreSQL)."""
        from reform_core.services.project.operations import OperationFailed, backup

        try:
            print_json(backup(db_url(db), out))
        except OperationFailed as exc:
            fail(str(exc))

    @app.command("restore")
    def restore_cmd(
        source: Path = typer.Option(..., "--from", help="Backup file written by `backup`."),
        db: Optional[str] = DbOption,
    ):
        """Replace the database with a backup (stop the app first)."""
        from reform_core.services.project.operations import OperationFailed, restore

        try:
            print_json(restore(db_url(db), source))
        except OperationFailed as exc:
            fail(str(exc))

    @app.command("doctor")
    def doctor_cmd(db: Optional[str] = DbOption, json_out: bool = typer.Option(False, "--json")):
        """Check schema version, orphan rows, lease state and integrity (exit 1 on a problem); warn
        about baseline coverage and unlabelled instances."""
        from reform_core.services.platform.uow import get_engine
        from reform_core.services.project.operations import doctor

        report = doctor(get_engine(db_url(db), migrate=False))
        if json_out:
            print_json(report)
        else:
            for c in report["checks"]:
                typer.echo(
                    f"{'BAD ' if not c['ok'] else 'WARN' if c.get('warn') else 'ok  '}  {c['check']}: {c['detail']}"
                )
        if not report["ok"]:
            raise typer.Exit(1)


def _register_account_creation(app: typer.Typer) -> None:
    @app.command("user-add")
    def user_add_cmd(
        username: str = typer.Argument(...),
        role: str = typer.Option("annotator", "--role"),
        sso: bool = typer.Option(False, "--sso", help="Single sign-on only: no password."),
        email: Optional[str] = typer.Option(
            None,
            "--email",
            help="The e-mail address that finds the account at its first SSO sign-in (default: NAME if it is one).",
        ),
        db: Optional[str] = DbOption,
        password_env: str = typer.Option(
            "REFORM_NEW_PASSWORD", "--password-env", help="Environment variable holding the password (else prompted)."
        ),
    ):
        """Create an account (annotator, analyst or lead): with a password, or with --sso for single sign-on."""
        from reform_core.services.accounts.users import cli_principal, create_user
        from reform_core.services.platform.uow import get_engine

        password = None if sso else _new_password(password_env, username)
        eng = get_engine(db_url(db))
        try:
            p = create_user(eng, cli_principal(eng), username=username, password=password, role=role, email=email)
        except ValueError as exc:
            fail(str(exc))
        user = next(u for u in list_accounts(eng) if u["username"] == p.username)
        print_json(
            {"username": p.username, "role": p.role, "id": p.user_id, "email": user["email"], "password": not sso}
        )

    @app.command("user-bind")
    def user_bind_cmd(
        username: str = typer.Argument(...),
        issuer: Optional[str] = typer.Option(None, "--issuer", help="The provider's issuer (iss)."),
        subject: Optional[str] = typer.Option(None, "--subject", help="The person's subject (sub)."),
        clear: bool = typer.Option(False, "--clear", help="Unbind: the next SSO sign-in binds anew."),
        db: Optional[str] = DbOption,
    ):
        """Bind an account to a single sign-on identity (issuer and subject, as the sign-in page shows
        them), or --clear it; ends the account's open sessions."""
        from reform_core.services.accounts.sso import bind_identity
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.platform.uow import get_engine

        if (issuer is not None or subject is not None) if clear else (issuer is None or subject is None):
            fail("give --issuer and --subject (to bind) or --clear (to unbind)")
        eng = get_engine(db_url(db))
        try:
            print_json(bind_identity(eng, cli_principal(eng), username=username, issuer=issuer, subject=subject))
        except ValueError as exc:
            fail(str(exc))

    @app.command("user-list")
    def user_list_cmd(db: Optional[str] = DbOption):
        """List accounts (no password hashes): role, active, locked, e-mail, bound to an SSO identity."""
        from reform_core.services.platform.uow import get_engine

        print_json(list_accounts(get_engine(db_url(db))))


def _register_account_changes(app: typer.Typer) -> None:
    @app.command("user-set")
    def user_set_cmd(
        username: str = typer.Argument(...),
        role: Optional[str] = typer.Option(None, "--role", help="annotator, analyst or lead"),
        deactivate: bool = typer.Option(False, "--deactivate", help="Refuse sign-in and end open sessions."),
        activate: bool = typer.Option(False, "--activate"),
        unlock: bool = typer.Option(False, "--unlock", help="Lift the sign-in throttle."),
        email: Optional[str] = typer.Option(None, "--email", help="The account's e-mail address (SSO)."),
        db: Optional[str] = DbOption,
    ):
        """Change an account: role, deactivate / activate, unlock, e-mail (a role change or a
        deactivation ends the account's open sessions at once)."""
        from reform_core.services.accounts.users import cli_principal, update_user
        from reform_core.services.platform.uow import get_engine

        if deactivate and activate:
            fail("--deactivate and --activate: choose one")
        if role is None and email is None and not (deactivate or activate or unlock):
            fail("nothing to change: give --role, --deactivate, --activate, --unlock or --email")
        eng = get_engine(db_url(db))
        try:
            out = update_user(
                eng,
                cli_principal(eng),
                username=username,
                role=role,
                active=False if deactivate else True if activate else None,
                unlock=unlock,
                email=email,
            )
        except ValueError as exc:
            fail(str(exc))
        print_json(out)

    @app.command("user-reset-password")
    def user_reset_password_cmd(
        username: str = typer.Argument(...),
        db: Optional[str] = DbOption,
        password_env: str = typer.Option(
            "REFORM_NEW_PASSWORD",
            "--password-env",
            help="Environment variable holding the new password (else prompted).",
        ),
    ):
        """Set a new password (ends the account's open sessions and lifts its throttle)."""
        from reform_core.services.accounts.users import cli_principal, set_password
        from reform_core.services.platform.uow import get_engine

        eng = get_engine(db_url(db))
        try:
            set_password(eng, cli_principal(eng), username=username, password=_new_password(password_env, username))
        except ValueError as exc:
            fail(str(exc))
        print_json({"username": username, "password": "reset"})

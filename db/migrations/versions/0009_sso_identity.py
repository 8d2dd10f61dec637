"""app_user: e-mail (lower-case, unique) and the single sign-on identity (issuer, subject) an
account is bound to at its first SSO sign-in (issue 37). Accounts named by an e-mail address
get it as their e-mail, unless two such names differ only in case (a lead sets those).

Revision ID: 0009_sso_identity
Revises: 0008_judgment_label_index
Create Date: 2026-12-03 09:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009_sso_identity"
down_revision = "0008_judgment_label_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("app_user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email", sqlmodel.sql.sqltypes.AutoString(length=254), nullable=True))
        batch_op.add_column(sa.Column("sso_issuer", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
        batch_op.add_column(sa.Column("sso_subject", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
    op.execute(
        "UPDATE app_user SET email = lower(username) WHERE username LIKE '%@%' AND "
        "(SELECT count(*) FROM app_user AS u WHERE lower(u.username) = lower(app_user.username)) = 1"
    )
    with op.batch_alter_table("app_user", schema=None) as batch_op:
        batch_op.create_index("ux_app_user_email", ["email"], unique=True)
        batch_op.create_index("ux_app_user_sso", ["sso_issuer", "sso_subject"], unique=True)


def downgrade() -> None:
    # a plain ALTER TABLE … DROP COLUMN (SQLite ≥ 3.35, PostgreSQL): a batch rebuild of app_user would
    # drop the table that tasks and decisions reference, which foreign keys refuse
    op.drop_index("ux_app_user_sso", table_name="app_user")
    op.drop_index("ux_app_user_email", table_name="app_user")
    for column in ("sso_subject", "sso_issuer", "email"):
        op.execute(f"ALTER TABLE app_user DROP COLUMN {column}")

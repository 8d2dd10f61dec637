"""signin_throttle (failed sign-ins per username, shared by all processes) and auth_session
(revocable sessions behind the signed session token)

Revision ID: 0006_auth_sessions
Revises: 0005_jobs
Create Date: 2026-12-01 20:10:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006_auth_sessions"
down_revision = "0005_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signin_throttle",
        sa.Column("username", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("window_start", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("username"),
    )
    with op.batch_alter_table("signin_throttle", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_signin_throttle_window_start"), ["window_start"], unique=False)
    op.create_table(
        "auth_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("secret_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["app_user.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("auth_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_auth_session_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("auth_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_session_user_id"))
    op.drop_table("auth_session")
    with op.batch_alter_table("signin_throttle", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_signin_throttle_window_start"))
    op.drop_table("signin_throttle")

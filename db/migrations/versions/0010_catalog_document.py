"""catalog_document table: a team's own catalog file stored with the project (issue 32)

Revision ID: 0010_catalog_document
Revises: 0009_sso_identity
Create Date: 2026-12-05 10:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010_catalog_document"
down_revision = "0009_sso_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "catalog_document",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("version", sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
        sa.Column("filename", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("catalog_document")

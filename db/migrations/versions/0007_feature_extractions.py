"""feature_extraction table: open-ended feature extractions of baseline responses (Table A4)

Revision ID: 0007_feature_extractions
Revises: 0006_auth_sessions
Create Date: 2026-12-01 20:40:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007_feature_extractions"
down_revision = "0006_auth_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feature_extraction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("label", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("feature", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("mapping", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
        sa.ForeignKeyConstraint(
            ["response_id"],
            ["response.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("response_id", "label", name="uq_feature_extraction"),
    )
    with op.batch_alter_table("feature_extraction", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_feature_extraction_response_id"), ["response_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("feature_extraction", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feature_extraction_response_id"))
    op.drop_table("feature_extraction")

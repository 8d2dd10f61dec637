"""MOSAIC studies (prompts, constraints, outputs, checks) and WISE studies (study name and
collection metadata on wise_generation; the natural key now includes the study)

Revision ID: 0003_studies
Revises: 0002
Create Date: 2026-12-01 15:34:38.614781
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003_studies"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mosaic_study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "wise_study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "mosaic_prompt",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("task", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("product", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("system_prompt", sa.Text(), server_default="", nullable=False),
        sa.Column("user_prompt", sa.Text(), server_default="", nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["mosaic_study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "key", name="uq_mosaic_prompt"),
    )
    with op.batch_alter_table("mosaic_prompt", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mosaic_prompt_study_id"), ["study_id"], unique=False)

    op.create_table(
        "mosaic_constraint",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("prompt_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("category", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("text", sa.Text(), server_default="", nullable=False),
        sa.Column("verifier", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("rubric", sa.Text(), server_default="", nullable=False),
        sa.ForeignKeyConstraint(
            ["prompt_id"],
            ["mosaic_prompt.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("prompt_id", "position", name="uq_mosaic_constraint"),
    )
    with op.batch_alter_table("mosaic_constraint", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mosaic_constraint_prompt_id"), ["prompt_id"], unique=False)

    op.create_table(
        "mosaic_output",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("prompt_id", sa.Integer(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("output", sa.Text(), server_default="", nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["prompt_id"],
            ["mosaic_prompt.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("prompt_id", "model", name="uq_mosaic_output"),
    )
    with op.batch_alter_table("mosaic_output", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mosaic_output_prompt_id"), ["prompt_id"], unique=False)

    op.create_table(
        "mosaic_check",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("output_id", sa.Integer(), nullable=False),
        sa.Column("constraint_id", sa.Integer(), nullable=False),
        sa.Column("checker", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("followed", sa.Boolean(), nullable=False),
        sa.Column("evidence", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["constraint_id"],
            ["mosaic_constraint.id"],
        ),
        sa.ForeignKeyConstraint(
            ["output_id"],
            ["mosaic_output.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("output_id", "constraint_id", name="uq_mosaic_check"),
    )
    with op.batch_alter_table("mosaic_check", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mosaic_check_constraint_id"), ["constraint_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_mosaic_check_output_id"), ["output_id"], unique=False)

    with op.batch_alter_table("wise_generation", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("study", sqlmodel.sql.sqltypes.AutoString(length=200), server_default="", nullable=False)
        )
        batch_op.add_column(sa.Column("meta", sa.JSON(), server_default="{}", nullable=False))
        batch_op.drop_constraint(batch_op.f("uq_wise_gen"), type_="unique")
        batch_op.create_unique_constraint("uq_wise_gen", ["study", "item", "model", "form", "target", "repetition"])


def downgrade() -> None:
    # Generations of WISE studies go with the studies (their keys may repeat across studies).
    op.execute("DELETE FROM wise_generation WHERE study <> ''")
    with op.batch_alter_table("wise_generation", schema=None) as batch_op:
        batch_op.drop_constraint("uq_wise_gen", type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_wise_gen"), ["item", "model", "form", "target", "repetition"])
        batch_op.drop_column("meta")
        batch_op.drop_column("study")

    with op.batch_alter_table("mosaic_check", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mosaic_check_output_id"))
        batch_op.drop_index(batch_op.f("ix_mosaic_check_constraint_id"))

    op.drop_table("mosaic_check")
    with op.batch_alter_table("mosaic_output", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mosaic_output_prompt_id"))

    op.drop_table("mosaic_output")
    with op.batch_alter_table("mosaic_constraint", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mosaic_constraint_prompt_id"))

    op.drop_table("mosaic_constraint")
    with op.batch_alter_table("mosaic_prompt", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mosaic_prompt_study_id"))

    op.drop_table("mosaic_prompt")
    op.drop_table("wise_study")
    op.drop_table("mosaic_study")

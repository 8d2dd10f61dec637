"""queue progress: counters per plan and stratum, and per plan, annotator and stratum (backfilled)

Revision ID: 0004_queue_progress
Revises: 0003_queue_decisions
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0004_queue_progress"
down_revision = "0003_queue_decisions"
branch_labels = None
depends_on = None

_CURRENT = "NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id)"


def upgrade() -> None:
    op.create_table(
        "plan_stratum_count",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("stratum", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("tasks", sa.Integer(), nullable=False),
        sa.Column("needed", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("filled", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["sample_plan.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("plan_id", "stratum", name="uq_plan_stratum_count"),
    )
    op.create_table(
        "plan_annotator_count",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("annotator", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("stratum", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("decided", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["sample_plan.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("plan_id", "user_id", "annotator", "stratum", name="uq_plan_annotator_count"),
    )
    # backfill from the plans already stored
    op.execute(
        "INSERT INTO plan_stratum_count (plan_id, stratum, tasks, needed, done, filled) "
        "SELECT plan_id, stratum, COUNT(*), SUM(required), SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN decided < required THEN decided ELSE required END) FROM adjudication_task "
        "GROUP BY plan_id, stratum"
    )
    op.execute(
        "INSERT INTO plan_annotator_count (plan_id, user_id, annotator, stratum, decided, seconds) "
        "SELECT t.plan_id, COALESCE(d.user_id, 0), CASE WHEN d.user_id IS NULL THEN d.annotator ELSE '' END, "
        "t.stratum, COUNT(*), SUM(d.seconds) FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
        f"WHERE d.choice <> 'retracted' AND {_CURRENT} "
        "GROUP BY t.plan_id, COALESCE(d.user_id, 0), CASE WHEN d.user_id IS NULL THEN d.annotator ELSE '' END, "
        "t.stratum"
    )


def downgrade() -> None:
    op.drop_table("plan_annotator_count")
    op.drop_table("plan_stratum_count")

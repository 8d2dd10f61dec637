"""queue decisions: the judgments shown and outside annotators' names on adjudication rows

Revision ID: 0003_queue_decisions
Revises: 0003_studies
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003_queue_decisions"
down_revision = "0003_studies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("adjudication", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("annotator", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("judgment_a_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("judgment_b_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key("fk_adjudication_judgment_a", "judgment", ["judgment_a_id"], ["id"])
        batch_op.create_foreign_key("fk_adjudication_judgment_b", "judgment", ["judgment_b_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("adjudication", schema=None) as batch_op:
        batch_op.drop_constraint("fk_adjudication_judgment_b", type_="foreignkey")
        batch_op.drop_constraint("fk_adjudication_judgment_a", type_="foreignkey")
        batch_op.drop_column("judgment_b_id")
        batch_op.drop_column("judgment_a_id")
        batch_op.drop_column("annotator")

"""judgment: the (response, constraint) index also holds the label, so counting disagreements
(``status``, Overview) reads the index alone instead of every judgment row (issue 16)

Revision ID: 0008_judgment_label_index
Revises: 0007_feature_extractions
Create Date: 2026-12-02 00:30:00
"""

from alembic import op

revision = "0008_judgment_label_index"
down_revision = "0007_feature_extractions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.create_index(
            "ix_judgment_response_constraint_label", ["response_id", "constraint_id", "label"], unique=False
        )
        batch_op.drop_index("ix_judgment_response_constraint")


def downgrade() -> None:
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.create_index("ix_judgment_response_constraint", ["response_id", "constraint_id"], unique=False)
        batch_op.drop_index("ix_judgment_response_constraint_label")

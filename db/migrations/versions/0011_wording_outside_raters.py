"""wording_rating.annotator: ratings of outside raters, imported by ``wording-import-ratings``
with ``user_id`` NULL and the rater's name as text (never an account) (issue 33)

Revision ID: 0011_wording_outside_raters
Revises: 0010_catalog_document
Create Date: 2026-12-05 10:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0011_wording_outside_raters"
down_revision = "0010_catalog_document"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("wording_rating", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("annotator", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("wording_rating", schema=None) as batch_op:
        batch_op.drop_column("annotator")

"""default policy: the write permissions per scope and actor as Casbin rows (editable at run time)

Revision ID: 0002_default_policy
Revises: 0001_initial_schema
Create Date: 2026-11-21
"""

from __future__ import annotations

import csv
from importlib import resources

import sqlalchemy as sa
from alembic import op

revision = "0002_default_policy"
down_revision = "0001_initial_schema"
branch_labels = None
depends_on = None


def _rows() -> list[list[str]]:
    text = resources.files("policy").joinpath("loregate_policy.csv").read_text()
    return [[cell.strip() for cell in row] for row in csv.reader(text.splitlines()) if row]


def upgrade() -> None:
    table = sa.table("casbin_rule", *[sa.column(c) for c in ("ptype", "v0", "v1", "v2", "v3")])
    op.bulk_insert(
        table,
        [
            dict(zip(("ptype", "v0", "v1", "v2", "v3"), row + [None] * (5 - len(row)), strict=True))
            for row in _rows()
        ],
    )


def downgrade() -> None:
    # only the seeded rows: grants of principals (g rows naming them) stay with their principals
    for row in _rows():
        padded = row + [""] * (5 - len(row))
        op.execute(
            sa.text(
                "DELETE FROM casbin_rule WHERE ptype = :p AND v0 = :v0 AND v1 = :v1 "
                "AND coalesce(v2, '') = :v2 AND coalesce(v3, '') = :v3"
            ).bindparams(p=padded[0], v0=padded[1], v1=padded[2], v2=padded[3], v3=padded[4])
        )

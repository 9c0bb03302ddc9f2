"""erasure: the `erase` permission for humans and system (task, worktree, project and org scope)

A data migration, as 0002_default_policy is: it adds the `erase` rows of policy/loregate_policy.csv to
`casbin_rule`. 0002 reads the CSV as it is today, so on a fresh database the rows are there already; each
row is inserted only where absent, so the migration is the same on fresh and existing databases.

Revision ID: 0008_erasure
Revises: 0007_derivation_and_expiry
Create Date: 2026-12-12
"""

from __future__ import annotations

import csv
from importlib import resources

import sqlalchemy as sa
from alembic import op

revision = "0008_erasure"
down_revision = "0007_derivation_and_expiry"
branch_labels = None
depends_on = None


def _erase_rows() -> list[list[str]]:
    text = resources.files("policy").joinpath("loregate_policy.csv").read_text()
    rows = [[cell.strip() for cell in row] for row in csv.reader(text.splitlines()) if row]
    return [row for row in rows if row[0] == "p" and len(row) == 5 and row[3] == "erase"]


def upgrade() -> None:
    for _, sub, scope, act, eft in _erase_rows():
        op.execute(
            sa.text(
                "INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) SELECT 'p', :v0, :v1, :v2, :v3 "
                "WHERE NOT EXISTS (SELECT 1 FROM casbin_rule WHERE ptype = 'p' AND v0 = :v0 AND v1 = :v1 "
                "AND v2 = :v2 AND v3 = :v3)"
            ).bindparams(v0=sub, v1=scope, v2=act, v3=eft)
        )


def downgrade() -> None:
    for _, sub, scope, act, eft in _erase_rows():
        op.execute(
            sa.text(
                "DELETE FROM casbin_rule WHERE ptype = 'p' AND v0 = :v0 AND v1 = :v1 "
                "AND v2 = :v2 AND v3 = :v3"
            ).bindparams(v0=sub, v1=scope, v2=act, v3=eft)
        )

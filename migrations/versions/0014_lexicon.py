"""lexicon: how many live memories of each scope hold each full-text lexeme

- `memory_lexemes` counts, per scope key and lexeme of the `tsv` column, the live (not deprecated) memories
  that hold it; the lexeme `''` (never one of Postgres' lexemes) counts the scope's live memories. The
  full-text retriever reads its document frequencies here instead of counting its whole match set at each
  query (governance/storage/retrieval.py).
- Statement-level triggers on `memories` keep it true whoever writes: one grouped upsert per statement
  (COPY and bulk inserts included), from the statement's transition tables, in (scope, lexeme) order, so
  concurrent statements lock the rows they share in one order (each scope's `''` row first). An UPDATE
  changes counts only for rows whose liveness, text or scope changed, so retrieval counters cost nothing
  here. A lexeme no live memory of its scope holds any more is deleted in the same statement, so an
  erased or pruned memory's words do not outlive it here. TRUNCATE empties it.

Revision ID: 0014_lexicon
Revises: 0013_reflection
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0014_lexicon"
down_revision = "0013_reflection"
branch_labels = None
depends_on = None

# a memory's lexemes, and '' for the memory itself
_LEXEMES = "unnest(array_append(tsvector_to_array({row}.tsv), ''))"

_FUNCTION = f"""
CREATE FUNCTION memory_lexemes_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    touched bigint;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM memory_lexemes;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_lexemes (scope_key, lexeme, memories)
        SELECT n.scope_key, lexeme, count(*)
        FROM new_rows AS n, {_LEXEMES.format(row="n")} AS lexeme
        WHERE n.deprecated_at IS NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (scope_key, lexeme) DO UPDATE SET memories = memory_lexemes.memories + EXCLUDED.memories;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO memory_lexemes (scope_key, lexeme, memories)
        SELECT o.scope_key, lexeme, -count(*)
        FROM old_rows AS o, {_LEXEMES.format(row="o")} AS lexeme
        WHERE o.deprecated_at IS NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (scope_key, lexeme) DO UPDATE SET memories = memory_lexemes.memories + EXCLUDED.memories;
        DELETE FROM memory_lexemes
        WHERE memories <= 0 AND scope_key IN (SELECT DISTINCT o.scope_key FROM old_rows AS o);
    ELSE
        WITH changed AS (
            SELECT o.scope_key AS old_scope, o.tsv AS old_tsv, o.deprecated_at IS NULL AS old_live,
                   n.scope_key AS new_scope, n.tsv AS new_tsv, n.deprecated_at IS NULL AS new_live
            FROM old_rows AS o JOIN new_rows AS n USING (id)
            WHERE (o.deprecated_at IS NULL) <> (n.deprecated_at IS NULL)
               OR o.tsv IS DISTINCT FROM n.tsv OR o.scope_key <> n.scope_key
        ), delta AS (
            SELECT new_scope AS scope_key, lexeme, 1 AS d
            FROM changed, unnest(array_append(tsvector_to_array(new_tsv), '')) AS lexeme WHERE new_live
            UNION ALL
            SELECT old_scope, lexeme, -1
            FROM changed, unnest(array_append(tsvector_to_array(old_tsv), '')) AS lexeme WHERE old_live
        )
        INSERT INTO memory_lexemes (scope_key, lexeme, memories)
        SELECT scope_key, lexeme, sum(d) FROM delta
        GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (scope_key, lexeme) DO UPDATE SET memories = memory_lexemes.memories + EXCLUDED.memories;
        GET DIAGNOSTICS touched = ROW_COUNT;
        IF touched > 0 THEN
            DELETE FROM memory_lexemes
            WHERE memories <= 0 AND scope_key IN (SELECT DISTINCT o.scope_key FROM old_rows AS o);
        END IF;
    END IF;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.execute(
        """CREATE TABLE memory_lexemes (
            scope_key text NOT NULL,
            lexeme text NOT NULL,
            memories integer NOT NULL,
            PRIMARY KEY (scope_key, lexeme)
        )"""
    )
    # a word no live memory holds any more is deleted at once: erased text must not survive as a lexeme
    op.execute("CREATE INDEX memory_lexemes_unheld ON memory_lexemes (scope_key) WHERE memories <= 0")
    op.execute(_FUNCTION)
    for event, tables in (
        ("INSERT", "REFERENCING NEW TABLE AS new_rows"),
        ("UPDATE", "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("DELETE", "REFERENCING OLD TABLE AS old_rows"),
    ):
        op.execute(
            f"""CREATE TRIGGER memory_lexemes_{event.lower()} AFTER {event} ON memories {tables}
            FOR EACH STATEMENT EXECUTE FUNCTION memory_lexemes_track()"""
        )
    op.execute(
        """CREATE TRIGGER memory_lexemes_truncate AFTER TRUNCATE ON memories
        FOR EACH STATEMENT EXECUTE FUNCTION memory_lexemes_track()"""
    )
    op.execute(
        f"""INSERT INTO memory_lexemes (scope_key, lexeme, memories)
        SELECT m.scope_key, lexeme, count(*) FROM memories AS m, {_LEXEMES.format(row="m")} AS lexeme
        WHERE m.deprecated_at IS NULL GROUP BY 1, 2"""
    )


def downgrade() -> None:
    for event in ("insert", "update", "delete", "truncate"):
        op.execute(f"DROP TRIGGER IF EXISTS memory_lexemes_{event} ON memories")
    op.execute("DROP FUNCTION IF EXISTS memory_lexemes_track()")
    op.execute("DROP TABLE IF EXISTS memory_lexemes")

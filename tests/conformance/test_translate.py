"""Placeholder translation for PostgreSQL, and the migration lists staying in step."""

from __future__ import annotations

import pytest

from layersearch.store import migrations

postgres = pytest.importorskip("layersearch.store.postgres", reason="needs psycopg")


def test_both_backends_have_every_schema_version() -> None:
    assert len(migrations.POSTGRES) == len(migrations.DUCKDB) == migrations.LATEST


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ? , ?", "SELECT %s , %s"),
        ("SELECT '?' , ?", "SELECT '?' , %s"),
        ("SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , %s"),
        ("SELECT E'\\' ?' , ?", "SELECT E'\\' ?' , %s"),
        ('SELECT "a?b" FROM t WHERE x = ?', 'SELECT "a?b" FROM t WHERE x = %s'),
        ("SELECT 1 -- why?\n, ?", "SELECT 1 -- why?\n, %s"),
        ("SELECT /* ? */ ?", "SELECT /* ? */ %s"),
        ("SELECT $$ ? $$, $tag$ ?' $tag$, ?", "SELECT $$ ? $$, $tag$ ?' $tag$, %s"),
        ("SELECT x % 2, '50%' WHERE y LIKE ?", "SELECT x %% 2, '50%%' WHERE y LIKE %s"),
        ("SELECT $1", "SELECT $1"),
    ],
)
def test_translate(sql: str, expected: str) -> None:
    assert postgres.translate(sql) == expected


def test_redact_hides_the_password() -> None:
    out = postgres.redact("postgresql://alice:s3cret@db.example:5432/ls")
    assert "s3cret" not in out and "alice" in out and "db.example" in out

"""The stored answers of the idempotency keys compressed with lz4 instead of pglz.

An answer (the coup and the whole game state, ~5 KB of JSON) is over PostgreSQL's TOAST
threshold, so every API write compresses it when it stores it: with pglz that was about
a third of the UPDATE's CPU in PostgreSQL (measured: ~0.12 ms of ~0.4 ms per write); lz4
compresses as well here in a fraction of the time. Only the compression method changes
(nothing is rewritten: rows already stored keep pglz and read as before). PostgreSQL
built without lz4 keeps the default."""

from django.db import migrations

TABLE, COLUMN = "floor_idempotencykey", "response_body"


def lz4_available(cursor) -> bool:
    cursor.execute(
        "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
    )
    return cursor.fetchone() is not None


def set_compression(schema_editor, table: str, column: str, method: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    with schema_editor.connection.cursor() as cursor:
        # Without lz4, or before PostgreSQL 14 (no SET COMPRESSION), forwards did nothing:
        # so does the reverse.
        if not lz4_available(cursor):
            return
        # Only the table's and column's own names are interpolated.
        cursor.execute(f"ALTER TABLE {quote(table)} ALTER COLUMN {quote(column)} SET COMPRESSION {method}")


def forwards(apps, schema_editor):
    set_compression(schema_editor, TABLE, COLUMN, "lz4")


def backwards(apps, schema_editor):
    set_compression(schema_editor, TABLE, COLUMN, "DEFAULT")


class Migration(migrations.Migration):
    dependencies = [
        ("floor", "0009_minimum_change_maximum"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

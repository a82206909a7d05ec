"""The shoe's state (its cards drawn, up to 312 of them, as JSON) compressed with lz4
instead of pglz: past the middle of a shoe the row is over PostgreSQL's TOAST threshold, and
every coup's UPDATE of the state compresses it (floor/migrations/0010 says why lz4). Only the
compression method changes; PostgreSQL built without lz4 keeps the default."""

from django.db import migrations

TABLE, COLUMN = "tables_shoe", "state"


def set_compression(schema_editor, method: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
        )
        # Without lz4, or before PostgreSQL 14 (no SET COMPRESSION), forwards did nothing:
        # so does the reverse.
        if cursor.fetchone() is None:
            return
        # Only the table's and column's own names are interpolated.
        cursor.execute(f"ALTER TABLE {quote(TABLE)} ALTER COLUMN {quote(COLUMN)} SET COMPRESSION {method}")


def forwards(apps, schema_editor):
    set_compression(schema_editor, "lz4")


def backwards(apps, schema_editor):
    set_compression(schema_editor, "DEFAULT")


class Migration(migrations.Migration):
    dependencies = [
        ("tables", "0007_bank_origin_direct"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

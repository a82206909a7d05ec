"""Drop the pattern-ops index PostgreSQL gets beside the unique index on an event's hash.

Django adds a `varchar_pattern_ops` index to every indexed CharField on PostgreSQL, for LIKE
queries. Nothing looks events up by a prefix of their hash, and every audit event (13 per
coup) writes into it. The unique index on the hash stays. Other databases have no such index."""

from django.db import migrations

INDEX = "audit_auditevent_hash_d0c402da_like"


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON audit_auditevent (hash varchar_pattern_ops)")


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_report_sealed_heads")]

    operations = [migrations.RunPython(drop, create)]

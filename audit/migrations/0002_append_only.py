"""The audit trail is append-only at the database level (ARCHITECTURE.md, "Audit design").

In PostgreSQL, row triggers refuse every UPDATE and DELETE of an audit event and every
DELETE of a stream head (the head itself must move forward on append, so UPDATE stays).
TRUNCATE was left open here for the test runners' flush; 0007 refuses it unless the
session allows it, because the application's role owns the tables.

SQLite (the zero-setup demo) gets nothing: the demo's data is disposable and its test
flush deletes rows. The operations are no-ops there."""

from django.db import migrations

# insufficient_privilege: "nobody may do this", and unlike an integrity error (23xxx) it
# is never mistaken by Django for a unique-constraint race (get_or_create retries those).
SQLSTATE = "42501"

FORWARD = f"""
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit trail is append-only: % on %.id=% refused', TG_OP, TG_TABLE_NAME, OLD.id
        USING ERRCODE = '{SQLSTATE}',
              HINT = 'A correction is a new audit event that refers to the one it corrects.';
END;
$$;

CREATE TRIGGER audit_event_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();

CREATE TRIGGER audit_stream_no_delete
    BEFORE DELETE ON audit_auditstream
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS audit_stream_no_delete ON audit_auditstream;
DROP TRIGGER IF EXISTS audit_event_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_refuse_change();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0001_initial'),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD), elidable=False),
    ]

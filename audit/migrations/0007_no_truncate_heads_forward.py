"""The audit trail refuses TRUNCATE too, and a stream head only moves forward.

0002 left TRUNCATE open for the test runners' flush, on the belief that the application's
role would not own the tables. It does (it runs the migrations), so a TRUNCATE could empty
the trail in one statement. Now a statement trigger refuses it unless the session says
`chemin.audit_truncate = allow` (the test settings do, for pytest-django's flush). That is
a guard against accidents and casual edits; whoever owns the tables can drop any trigger,
which is why verification checks what the floor's rows say must exist (stream_missing).

A head's UPDATE stays allowed for the append, but not one that renames the stream, changes
its id or moves its seq back. SQLite (the demo) gets nothing, as in 0002."""

from django.db import migrations

SQLSTATE = "42501"  # insufficient_privilege, as in 0002

FORWARD = f"""
CREATE OR REPLACE FUNCTION audit_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('chemin.audit_truncate', true) = 'allow' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit trail is append-only: TRUNCATE on % refused', TG_TABLE_NAME
        USING ERRCODE = '{SQLSTATE}',
              HINT = 'A correction is a new audit event that refers to the one it corrects.';
END;
$$;

CREATE TRIGGER audit_event_no_truncate
    BEFORE TRUNCATE ON audit_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_truncate();

CREATE TRIGGER audit_stream_no_truncate
    BEFORE TRUNCATE ON audit_auditstream
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_truncate();

CREATE TRIGGER audit_stream_head_forward
    BEFORE UPDATE ON audit_auditstream
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.name IS DISTINCT FROM OLD.name OR NEW.seq < OLD.seq)
    EXECUTE FUNCTION audit_refuse_change();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS audit_stream_head_forward ON audit_auditstream;
DROP TRIGGER IF EXISTS audit_stream_no_truncate ON audit_auditstream;
DROP TRIGGER IF EXISTS audit_event_no_truncate ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_refuse_truncate();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_drop_hash_like_index"),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD), elidable=False),
    ]

"""A handover count's staff change is of the count's own session, at the database level.

tables.services.cash_count refuses a staff change of another session (`unknown_staff_change`),
but nothing under it did: a row written behind the service (a shell, a data migration, an
UPDATE in SQL) could put one session's handover under another's drawer, and the report's
drawers section and the session's page would read it as that session's. The rule spans two
tables, which a CHECK cannot hold, so it is a row trigger, as the audit trail's guards (audit
0002, 0007): before an INSERT of a count, or an UPDATE of its session or staff change, the
staff change must be a row of floor_staffchange with that session; and a staff change a count
refers to does not move to another session. A refusal is a check_violation (23514): Django
raises an IntegrityError, as for the table's CHECK constraints.

SQLite (the zero-setup demo) gets nothing, as in audit 0002: the service holds the rule there."""

from django.db import migrations

SQLSTATE = "23514"  # check_violation

FORWARD = f"""
CREATE OR REPLACE FUNCTION tables_cash_count_staff_change_session() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.staff_change_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM floor_staffchange WHERE id = NEW.staff_change_id AND session_id = NEW.session_id
    ) THEN
        RAISE EXCEPTION 'cash count: staff change % is not of session %', NEW.staff_change_id, NEW.session_id
            USING ERRCODE = '{SQLSTATE}',
                  HINT = 'A handover count is of the session whose changeur the staff change relieved.';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION tables_staff_change_counted_session() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tables_cashcount WHERE staff_change_id = OLD.id AND session_id <> NEW.session_id) THEN
        RAISE EXCEPTION 'staff change %: its handover is counted at session %', OLD.id, OLD.session_id
            USING ERRCODE = '{SQLSTATE}',
                  HINT = 'A handover count is of the session whose changeur the staff change relieved.';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER tables_cash_count_staff_change_of_session
    BEFORE INSERT OR UPDATE OF session_id, staff_change_id ON tables_cashcount
    FOR EACH ROW EXECUTE FUNCTION tables_cash_count_staff_change_session();

CREATE TRIGGER tables_staff_change_counted_stays
    BEFORE UPDATE OF session_id ON floor_staffchange
    FOR EACH ROW
    WHEN (NEW.session_id IS DISTINCT FROM OLD.session_id)
    EXECUTE FUNCTION tables_staff_change_counted_session();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS tables_staff_change_counted_stays ON floor_staffchange;
DROP TRIGGER IF EXISTS tables_cash_count_staff_change_of_session ON tables_cashcount;
DROP FUNCTION IF EXISTS tables_staff_change_counted_session();
DROP FUNCTION IF EXISTS tables_cash_count_staff_change_session();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("floor", "0011_interruption_capacity"),
        ("tables", "0016_cash_count_handover"),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD), elidable=False),
    ]

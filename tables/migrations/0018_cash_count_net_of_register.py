"""A count's `net` is the register's, at the database level.

tables.services.cash_count computes a count's `net` (tables.selectors.cash_exchange_totals: the
session's register, buy-ins less cash-outs, voided lines left out as they stand when counted;
for a handover count, only the lines recorded at or before its staff change's `at`) and stores
it, and the CHECKs hold `expected` and `chips_expected` to it; but nothing under the service
held `net` itself: a row written behind it (a shell, a data migration, an INSERT or UPDATE in
SQL) could carry any net, and `expected` and the difference with it. The verification holds a
count to its event, not to the register. The rule reads another table, which a CHECK cannot, so
it is a row trigger, as 0017's: before an INSERT of a count, or an UPDATE that changes its net,
session or staff change, `net` must be the register's, computed as the service computes it and
under the same locks (the service's count and the register's writes and voids take the
session's row lock: the trigger, in the count's statement, reads the register the service read).
The cutoff is the staff change's stored `at`, `<=` (a line at exactly the change's time is the
outgoing changeur's), as the service's `at__lte=change.at`.

Voids as they stand when the count is written: a line voided after a handover count (the session
still running) leaves that count's net as it was; the trigger judges a row when it is written,
never again, so the counts already stored are not re-read by this migration and an UPDATE that
leaves net, session and staff change as they are (a note's, a whole row saved back) is not held
to the register as it stands since. A correction is a new row, whose net the service recomputes
(the same cutoff): it is held as any count. A staff change of another session is 0017's refusal:
this trigger, named to fire after 0017's (PostgreSQL fires a table's row triggers of one event
in name order), lets it through to it.

A refusal is a check_violation (23514) naming the constraint `tables_cash_count_net_of_register`:
Django raises an IntegrityError, which the API answers as a 409 `conflict` naming it
(config.errors), and which the service does not take for `already_counted` (only its unique
indexes are that).

The cutoff itself is held too: a staff change whose handover is counted keeps its `at` (a
trigger on floor_staffchange refuses moving it, which would move the cutoff under the count,
as 0017's refuses moving it to another session).

SQLite (the zero-setup demo) gets nothing, as in 0017: the service holds the rule there."""

from django.db import migrations

SQLSTATE = "23514"  # check_violation
CONSTRAINT = "tables_cash_count_net_of_register"

FORWARD = f"""
CREATE OR REPLACE FUNCTION tables_cash_count_net_of_register() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz;
    register numeric;
BEGIN
    IF NEW.staff_change_id IS NOT NULL THEN
        SELECT at INTO cutoff FROM floor_staffchange WHERE id = NEW.staff_change_id AND session_id = NEW.session_id;
        IF NOT FOUND THEN
            RETURN NEW;  -- another session's staff change: 0017's trigger refuses it
        END IF;
    END IF;
    -- tables.selectors.cash_exchange_totals: buy-ins less cash-outs, voided lines left out;
    -- a handover's, the lines at or before its staff change.
    SELECT COALESCE(SUM(CASE direction WHEN 'buy_in' THEN amount WHEN 'cash_out' THEN -amount ELSE 0 END), 0)
      INTO register
      FROM tables_cashexchange
     WHERE session_id = NEW.session_id
       AND voided_at IS NULL
       AND (cutoff IS NULL OR at <= cutoff);
    IF NEW.net IS DISTINCT FROM register THEN
        RAISE EXCEPTION 'cash count: net % is not the register''s net % (session %, %)', NEW.net, register,
                NEW.session_id,
                CASE WHEN NEW.staff_change_id IS NULL THEN 'the whole session'
                     ELSE 'lines up to staff change ' || NEW.staff_change_id END
            USING ERRCODE = '{SQLSTATE}',
                  CONSTRAINT = '{CONSTRAINT}',
                  HINT = 'A count''s net is the register''s (voided lines left out; a handover''s, its lines up to '
                         'the staff change), as tables.services.cash_count computes it.';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION tables_staff_change_counted_keeps_its_time() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tables_cashcount WHERE staff_change_id = OLD.id) THEN
        RAISE EXCEPTION 'staff change %: its handover is counted, up to its time %', OLD.id, OLD.at
            USING ERRCODE = '{SQLSTATE}',
                  CONSTRAINT = '{CONSTRAINT}',
                  HINT = 'A handover count''s net is the register''s up to the staff change''s time: moving the '
                         'time would move the cutoff under the count.';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER tables_staff_change_counted_keeps_its_time
    BEFORE UPDATE OF at ON floor_staffchange
    FOR EACH ROW
    WHEN (NEW.at IS DISTINCT FROM OLD.at)
    EXECUTE FUNCTION tables_staff_change_counted_keeps_its_time();

CREATE TRIGGER tables_cash_count_takes_the_register_net
    BEFORE INSERT ON tables_cashcount
    FOR EACH ROW EXECUTE FUNCTION tables_cash_count_net_of_register();

CREATE TRIGGER tables_cash_count_update_takes_the_register_net
    BEFORE UPDATE OF net, session_id, staff_change_id ON tables_cashcount
    FOR EACH ROW
    WHEN (NEW.net IS DISTINCT FROM OLD.net
          OR NEW.session_id IS DISTINCT FROM OLD.session_id
          OR NEW.staff_change_id IS DISTINCT FROM OLD.staff_change_id)
    EXECUTE FUNCTION tables_cash_count_net_of_register();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS tables_staff_change_counted_keeps_its_time ON floor_staffchange;
DROP FUNCTION IF EXISTS tables_staff_change_counted_keeps_its_time();
DROP TRIGGER IF EXISTS tables_cash_count_update_takes_the_register_net ON tables_cashcount;
DROP TRIGGER IF EXISTS tables_cash_count_takes_the_register_net ON tables_cashcount;
DROP FUNCTION IF EXISTS tables_cash_count_net_of_register();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("floor", "0011_interruption_capacity"),
        ("tables", "0017_cash_count_staff_change_session"),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD), elidable=False),
    ]

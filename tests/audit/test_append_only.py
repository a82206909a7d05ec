"""The PostgreSQL triggers of migration 0002: the trail cannot be edited, even by raw SQL."""

from __future__ import annotations

import importlib

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent, AuditStream

from .conftest import raw_sql

pytestmark = pytest.mark.django_db

migration = importlib.import_module("audit.migrations.0002_append_only")


def refused(sql: str, params: tuple = ()) -> DatabaseError:
    # A savepoint, so the refused statement does not abort the test's transaction.
    with pytest.raises(DatabaseError) as caught, transaction.atomic():
        raw_sql(sql, params)
    return caught.value


def test_update_of_an_event_is_refused_and_the_row_is_unchanged(chain):
    [event] = chain("table:1", pot=100)

    error = refused("UPDATE audit_auditevent SET payload_json = '{\"pot\":999}' WHERE id = %s", (event.pk,))

    assert "append-only" in str(error)
    assert "UPDATE on audit_auditevent" in str(error)
    assert error.__cause__.sqlstate == migration.SQLSTATE
    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.payload, stored.hash) == ({"i": 0, "pot": 100}, event.hash)


def test_delete_of_an_event_is_refused_and_the_row_stays(chain):
    events = chain("table:1", 3)

    error = refused("DELETE FROM audit_auditevent WHERE id = %s", (events[1].pk,))

    assert "DELETE on audit_auditevent" in str(error)
    assert list(AuditEvent.objects.values_list("seq", flat=True)) == [1, 2, 3]


def test_delete_of_a_stream_head_is_refused_but_the_head_still_moves(chain):
    chain("table:1", 1)
    error = refused("DELETE FROM audit_auditstream WHERE name = %s", ("table:1",))
    assert "DELETE on audit_auditstream" in str(error)

    # UPDATE of the head stays allowed: every append moves it.
    chain("table:1", 1)
    assert AuditStream.objects.get(name="table:1").seq == 2


def test_truncate_is_not_blocked(chain):
    # pytest-django's transactional tests flush with TRUNCATE; it must keep working.
    chain("table:1", 2)
    raw_sql("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE, like ALTER, refuses queued FK checks
    raw_sql("TRUNCATE audit_auditevent, audit_auditstream")
    assert not AuditEvent.objects.exists()


def installed_triggers() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal "
            "AND tgrelid IN ('audit_auditevent'::regclass, 'audit_auditstream'::regclass)"
        )
        return {name for (name,) in cursor.fetchall()}


def test_the_migration_is_reversible():
    both = {"audit_event_append_only", "audit_stream_no_delete"}
    assert installed_triggers() == both
    # DDL is transactional in PostgreSQL: run backward then forward inside a savepoint.
    with transaction.atomic():
        with connection.schema_editor() as editor:
            migration._on_postgresql(migration.BACKWARD)(None, editor)
        assert installed_triggers() == set()
        with connection.schema_editor() as editor:
            migration._on_postgresql(migration.FORWARD)(None, editor)
        assert installed_triggers() == both

"""The PostgreSQL triggers of migrations 0002 and 0007: the trail cannot be edited, emptied
or renamed, even by raw SQL."""

from __future__ import annotations

import importlib

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent, AuditStream

from .conftest import raw_sql

pytestmark = pytest.mark.django_db

migration = importlib.import_module("audit.migrations.0002_append_only")
migration_7 = importlib.import_module("audit.migrations.0007_no_truncate_heads_forward")


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


def test_truncate_is_refused_unless_the_session_allows_it(chain):
    chain("table:1", 2)
    raw_sql("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE, like ALTER, refuses queued FK checks
    # The test settings allow it (pytest-django's transactional tests flush with TRUNCATE);
    # a session that does not say so is refused, on either table.
    raw_sql("SET LOCAL chemin.audit_truncate = ''")
    for table in ("audit_auditevent", "audit_auditstream"):
        error = refused(f"TRUNCATE {table} CASCADE")
        assert f"TRUNCATE on {table} refused" in str(error)
        assert error.__cause__.sqlstate == migration_7.SQLSTATE
    assert AuditEvent.objects.count() == 2 and AuditStream.objects.filter(name="table:1").exists()
    raw_sql("SET LOCAL chemin.audit_truncate = 'allow'")
    raw_sql("TRUNCATE audit_auditevent, audit_auditstream, audit_anchoredhead")
    assert not AuditEvent.objects.exists()


def test_a_head_is_not_renamed_nor_moved_back(chain):
    chain("table:1", 2)
    head = AuditStream.objects.get(name="table:1")
    assert "UPDATE on audit_auditstream" in str(refused("UPDATE audit_auditstream SET name = 'table:2' WHERE id = %s", (head.pk,)))
    refused("UPDATE audit_auditstream SET id = id + 1000 WHERE id = %s", (head.pk,))
    refused("UPDATE audit_auditstream SET seq = 1 WHERE id = %s", (head.pk,))
    assert AuditStream.objects.get(pk=head.pk).seq == 2 and AuditStream.objects.get(pk=head.pk).name == "table:1"


def installed_triggers() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal "
            "AND tgrelid IN ('audit_auditevent'::regclass, 'audit_auditstream'::regclass)"
        )
        return {name for (name,) in cursor.fetchall()}


def test_the_migrations_are_reversible():
    for module, names in (
        (migration, {"audit_event_append_only", "audit_stream_no_delete"}),
        (migration_7, {"audit_event_no_truncate", "audit_stream_no_truncate", "audit_stream_head_forward"}),
    ):
        everything = {"audit_event_append_only", "audit_stream_no_delete", "audit_event_no_truncate",
                      "audit_stream_no_truncate", "audit_stream_head_forward"}  # fmt: skip
        assert installed_triggers() == everything
        # DDL is transactional in PostgreSQL: run backward then forward inside a savepoint.
        with transaction.atomic():
            if module is migration:  # 0007's triggers use 0002's function: take them off first
                with connection.schema_editor() as editor:
                    migration_7._on_postgresql(migration_7.BACKWARD)(None, editor)
            with connection.schema_editor() as editor:
                module._on_postgresql(module.BACKWARD)(None, editor)
            assert not installed_triggers() & names
            with connection.schema_editor() as editor:
                module._on_postgresql(module.FORWARD)(None, editor)
            if module is migration:
                with connection.schema_editor() as editor:
                    migration_7._on_postgresql(migration_7.FORWARD)(None, editor)
            assert installed_triggers() == everything
